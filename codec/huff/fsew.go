package huff

import (
	"encoding/binary"
	"math/bits"
)

// fseWeights decodes the FSE-compressed weights of a huff0 table
// description (in: the iSize bytes after the size byte, whose low nibble
// the caller has checked: tableLog 5 or 6) into w and returns how many
// there are; more than 255 is the caller's error, as for huff0. It is
// klauspost's fse.Decompress with DecompressLimit 255, step for step (the
// same header reading, table spread, checks and end conditions; twin:
// TestFSEWeightsTwin, FuzzFSEWeights), without its allocations, method
// values and general table sizes: a table of at most 64 states, kept as
// one word per state. A huff0 table costs the decoder ~2 µs, half of it
// in fse.Decompress, and a conditioned frame has ~160 of them.
func fseWeights(w *[fseOutMax]byte, in []byte) (int, error) {
	var norm [256]int16
	tableLog, symbolLen, off, err := fseReadNCount(&norm, in)
	if err != nil {
		return 0, err
	}
	var dt [64]uint32 // newState | symbol<<16 | nbBits<<24
	if err := fseBuildTable(&dt, &norm, tableLog, symbolLen); err != nil {
		return 0, err
	}
	return fseDecode(w, in[off:], &dt, tableLog)
}

// fseOutMax bounds what fseDecode writes before the caller rejects more
// than 255 weights (fse.Decompress checks its limit only every other
// symbol of the tail).
const fseOutMax = 264

// fseReadNCount reads the normalized counts (fse's readNCount) and returns
// the table log, the symbol count and the offset of the bitstream.
func fseReadNCount(norm *[256]int16, in []byte) (tableLog uint, symbolLen, off int, err error) {
	iend := len(in)
	if iend < 4 {
		return 0, 0, 0, errf("fse: input too small")
	}
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(in[off:]) }
	bitStream := u32(0)
	nbBits := uint(bitStream&0xF) + 5
	if nbBits > 6 {
		return 0, 0, 0, errf("fse: tableLog too large")
	}
	bitStream >>= 4
	bitCount := uint(4)
	tableLog = nbBits
	remaining := int32(1<<nbBits + 1)
	threshold := int32(1 << nbBits)
	gotTotal := int32(0)
	nbBits++
	var charnum uint16
	previous0 := false
	for remaining > 1 {
		if previous0 {
			n0 := charnum
			for bitStream&0xFFFF == 0xFFFF {
				n0 += 24
				if off < iend-5 {
					off += 2
					bitStream = u32(off) >> bitCount
				} else {
					bitStream >>= 16
					bitCount += 16
				}
			}
			for bitStream&3 == 3 {
				n0 += 3
				bitStream >>= 2
				bitCount += 2
			}
			n0 += uint16(bitStream & 3)
			bitCount += 2
			if n0 > 255 {
				return 0, 0, 0, errf("fse: maxSymbolValue too small")
			}
			for charnum < n0 {
				norm[charnum&0xff] = 0
				charnum++
			}
			if off <= iend-7 || off+int(bitCount>>3) <= iend-4 {
				off += int(bitCount >> 3)
				bitCount &= 7
				bitStream = u32(off) >> bitCount
			} else {
				bitStream >>= 2
			}
		}
		max := (2*threshold - 1) - remaining
		var count int32
		if int32(bitStream)&(threshold-1) < max {
			count = int32(bitStream) & (threshold - 1)
			bitCount += nbBits - 1
		} else {
			count = int32(bitStream) & (2*threshold - 1)
			if count >= threshold {
				count -= max
			}
			bitCount += nbBits
		}
		count-- // extra accuracy
		if count < 0 {
			remaining += count // -1 means +1
			gotTotal -= count
		} else {
			remaining -= count
			gotTotal += count
		}
		norm[charnum&0xff] = int16(count) // count < 2^7: no overflow
		charnum++
		previous0 = count == 0
		for remaining < threshold {
			nbBits--
			threshold >>= 1
		}
		if off <= iend-7 || off+int(bitCount>>3) <= iend-4 {
			off += int(bitCount >> 3)
			bitCount &= 7
		} else {
			bitCount -= uint(8 * (iend - 4 - off))
			off = iend - 4
		}
		bitStream = u32(off) >> (bitCount & 31)
	}
	symbolLen = int(charnum)
	switch {
	case symbolLen <= 1:
		return 0, 0, 0, errf("fse: symbolLen %d too small", symbolLen)
	case symbolLen > 256:
		return 0, 0, 0, errf("fse: symbolLen %d too big", symbolLen)
	case remaining != 1:
		return 0, 0, 0, errf("fse: corrupt counts (remaining %d)", remaining)
	case bitCount > 32:
		return 0, 0, 0, errf("fse: corrupt counts (bitCount %d)", bitCount)
	case gotTotal != 1<<tableLog:
		return 0, 0, 0, errf("fse: corrupt counts (total %d)", gotTotal)
	}
	off += int((bitCount + 7) >> 3)
	return tableLog, symbolLen, off, nil
}

// fseBuildTable builds the decoding table (fse's buildDtable).
func fseBuildTable(dt *[64]uint32, norm *[256]int16, tableLog uint, symbolLen int) error {
	tableSize := uint32(1) << tableLog
	highThreshold := tableSize - 1
	var symbolNext [256]uint16
	var sym [64]byte
	for i, v := range norm[:symbolLen] {
		if v == -1 {
			sym[highThreshold&63] = uint8(i)
			highThreshold--
			symbolNext[i] = 1
		} else {
			symbolNext[i] = uint16(v)
		}
	}
	mask := tableSize - 1
	step := tableSize>>1 + tableSize>>3 + 3
	position := uint32(0)
	for s, v := range norm[:symbolLen] {
		for i := 0; i < int(v); i++ {
			sym[position&63] = uint8(s)
			position = (position + step) & mask
			for position > highThreshold {
				position = (position + step) & mask // the low-probability area
			}
		}
	}
	if position != 0 {
		return errf("fse: corrupt counts (position %d)", position)
	}
	size := uint16(tableSize)
	for u := range tableSize {
		s := sym[u]
		next := symbolNext[s]
		symbolNext[s] = next + 1
		nb := uint16(tableLog) - uint16(bits.Len16(next)-1)
		newState := next<<nb - size
		if newState >= size {
			return errf("fse: newState %d outside the table", newState)
		}
		if newState == uint16(u) && nb == 0 {
			return errf("fse: newState %d == oldState and no bits", newState)
		}
		dt[u] = uint32(newState) | uint32(s)<<16 | uint32(nb)<<24
	}
	return nil
}

// fseBits is fse's bitReader: a stream read backwards from its last byte,
// whose highest set bit marks the start.
type fseBits struct {
	in       []byte
	off      uint
	value    uint64
	bitsRead uint8
}

func (b *fseBits) fill() {
	if b.bitsRead < 32 {
		return
	}
	if b.off > 4 {
		b.value = b.value<<32 | uint64(binary.LittleEndian.Uint32(b.in[b.off-4:]))
		b.bitsRead -= 32
		b.off -= 4
		return
	}
	for b.off > 0 {
		b.value = b.value<<8 | uint64(b.in[b.off-1])
		b.bitsRead -= 8
		b.off--
	}
}

// get returns n bits; none once the stream is read past its end.
func (b *fseBits) get(n uint8) uint16 {
	if n == 0 || b.bitsRead >= 64 {
		return 0
	}
	return b.getFast(n)
}

// getFast returns n ≤ 16 bits (0 for n = 0: the shift is split in two
// so that it never wraps) without checking that the stream has them.
func (b *fseBits) getFast(n uint8) uint16 {
	v := uint16(b.value << (b.bitsRead & 63) >> ((63 - n) & 63) >> 1)
	b.bitsRead += n
	return v
}

// fseDecode decodes the interleaved two-state stream src with table dt
// (fse's decompress with DecompressLimit 255).
func fseDecode(w *[fseOutMax]byte, src []byte, dt *[64]uint32, tableLog uint) (int, error) {
	if len(src) < 1 {
		return 0, errf("fse: stream too short")
	}
	last := src[len(src)-1]
	if last == 0 {
		return 0, errf("fse: stream has no end marker")
	}
	br := fseBits{in: src, off: uint(len(src)), bitsRead: 64}
	if len(src) >= 8 {
		br.value = binary.LittleEndian.Uint64(src[len(src)-8:])
		br.bitsRead = 0
		br.off -= 8
	} else {
		br.fill()
		br.fill()
	}
	br.bitsRead += 8 - uint8(bits.Len8(last)-1)
	s1 := br.get(uint8(tableLog))
	s2 := br.get(uint8(tableLog))
	n := 0
	// the main part: 4 symbols per step while 8 bytes remain (256 of
	// them exceed the limit). fse.Decompress has two copies of this loop,
	// one for tables with states that read no bits (through getBits);
	// getFast returns 0 for no bits itself, and fillFast keeps bitsRead
	// below 64 here, so one loop does for both.
	for br.off >= 8 {
		br.fillFast()
		e1 := dt[s1&63]
		s1 = uint16(e1) + br.getFast(uint8(e1>>24))
		e2 := dt[s2&63]
		s2 = uint16(e2) + br.getFast(uint8(e2>>24))
		br.fillFast()
		e3 := dt[s1&63]
		s1 = uint16(e3) + br.getFast(uint8(e3>>24))
		e4 := dt[s2&63]
		s2 = uint16(e4) + br.getFast(uint8(e4>>24))
		w[n], w[n+1], w[n+2], w[n+3] = byte(e1>>16), byte(e2>>16), byte(e3>>16), byte(e4>>16)
		if n += 4; n == 256 {
			return 0, errf("fse: more than 255 symbols")
		}
	}
	// the tail: a state whose entry reads bits ends the stream once they
	// are used up
	finished := func(s uint16) bool { return br.bitsRead >= 64 && br.off == 0 && dt[s&63]>>24 > 0 }
	for {
		if finished(s1) {
			w[n], w[n+1] = byte(dt[s1&63]>>16), byte(dt[s2&63]>>16)
			n += 2
			break
		}
		br.fill()
		e1 := dt[s1&63]
		s1 = uint16(e1) + br.get(uint8(e1>>24))
		w[n] = byte(e1 >> 16)
		n++
		if finished(s2) {
			w[n], w[n+1] = byte(dt[s2&63]>>16), byte(dt[s1&63]>>16)
			n += 2
			break
		}
		e2 := dt[s2&63]
		s2 = uint16(e2) + br.get(uint8(e2>>24))
		w[n] = byte(e2 >> 16)
		n++
		if n >= 255 {
			return 0, errf("fse: more than 255 symbols")
		}
	}
	if br.bitsRead > 64 {
		return 0, errf("fse: stream read past its end")
	}
	return n, nil
}

// fillFast makes at least 32 bits available; 4 bytes must remain.
func (b *fseBits) fillFast() {
	if b.bitsRead < 32 {
		return
	}
	b.value = b.value<<32 | uint64(binary.LittleEndian.Uint32(b.in[b.off-4:]))
	b.bitsRead -= 32
	b.off -= 4
}
