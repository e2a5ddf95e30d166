package codec

import (
	"encoding/binary"
	"io"
	"math/bits"

	"neuralzip/codec/prog"
	"neuralzip/dtype"
)

// Repeat blocks (kind repeat, format version 13; doc.go, "Repeat
// blocks"): a whole tensor of 16- or 32-bit floats whose rows repeat
// each other's words at the same column or mirrored (windowed DFT and
// DCT bases: value(k, n) = w[n]·cos(2πkn/N)), coded by package prog's
// row-match operator as per-row sources and a symbol per word, and the
// words no source gives — the literals — as a dense float block of the
// float coder. This file is the hook: the encoder's trial
// (encodeRepeat, from encodeLZWhole: only tensors the repeat probe
// marked, lzTry) and the decoder (decodeRepeat).

// repeatVersion is the format version of archives that may hold repeat
// blocks: the writer writes it where the plan has a whole tensor
// (mergeLZTensors) whose probe found row matches (repeatTry).
const repeatVersion = 13

// repeatType says whether a float tensor of d with rows of row values,
// length bytes in all (a whole number of rows, at least two), may be a
// repeat block: 16- and 32-bit floats.
func repeatType(d dtype.DType, row, length int64) bool {
	if d != dtype.F32 && d != dtype.F16 && d != dtype.BF16 || row <= 0 {
		return false
	}
	return prog.RepeatWorth(int(length)/d.Size(), int(row), d.Size())
}

// encodeRepeat appends the repeat block of the whole tensor in (plan p,
// repeatType) to dst: u8 dtype, prog's repeat payload, and the literals
// as a float block (dense, the float coder's; none where there are no
// literals).
func (b *blockEncoder) encodeRepeat(dst, in []byte, p blockPlan) []byte {
	dst = append(dst, byte(p.dtype))
	var lits []byte
	dst, lits = b.rep.Append(dst, in, int(p.tensorRow), p.dtype.Size())
	if len(lits) > 0 {
		b.run = runMemo{}
		dst = b.encodeFloat(dst, lits, p.dtype)
	}
	return dst
}

// decodeRepeat decodes a repeat block into dst.
func (b *blockDecoder) decodeRepeat(dst, src []byte) error {
	if len(src) < 1 {
		return errf("repeat block: empty payload")
	}
	d := dtype.DType(src[0])
	if d != dtype.F32 && d != dtype.F16 && d != dtype.BF16 {
		return errf("repeat block: type %v", d)
	}
	size := d.Size()
	if len(dst)%size != 0 {
		return errf("repeat block of %v: length %d is not a whole number of values", d, len(dst))
	}
	h, rest, err := prog.ReadRepeatHeader(src[1:], len(dst)/size)
	if err != nil {
		return errf("repeat block: %v", err)
	}
	n := h.Lits * size
	if cap(b.repLits) < n {
		b.repLits = make([]byte, n)
	}
	lits := b.repLits[:n]
	if n > 0 {
		if err := b.decodeFloat(lits, rest, d); err != nil {
			return errf("repeat block: literals: %v", err)
		}
	} else if len(rest) != 0 {
		return errf("repeat block: %d bytes after the stream", len(rest))
	}
	if err := b.rep.Decode(dst, h, lits, size); err != nil {
		return errf("repeat block: %v", err)
	}
	return nil
}

// repeatProgram is the program of a repeat block (BlockProgram): its
// header, the range-coded sources and symbols, and the literals' float
// block.
func repeatProgram(root ProgramNode, src []byte, length int) (ProgramNode, error) {
	if len(src) < 1 {
		return root, errf("repeat block: empty payload")
	}
	d := dtype.DType(src[0])
	if d != dtype.F32 && d != dtype.F16 && d != dtype.BF16 || length%d.Size() != 0 {
		return root, errf("repeat block: %d bytes of type %v", length, d)
	}
	n := length / d.Size()
	h, rest, err := prog.ReadRepeatHeader(src[1:], n)
	if err != nil {
		return root, errf("repeat block: %v", err)
	}
	root.Op = "repeat " + d.String()
	root.Values = int64(n)
	hdr := len(src) - len(rest) - h.StreamLen()
	root.Nodes = append(root.Nodes,
		ProgramNode{Op: "type, row length, literals", Coder: "header", Bytes: int64(hdr)},
		ProgramNode{Op: "row sources, word symbols", Coder: "range", Values: int64(n), Bytes: int64(h.StreamLen())})
	if h.Lits > 0 {
		lits, err := floatProgram(ProgramNode{Op: "literals", Bytes: int64(len(rest))}, rest, d, h.Lits*d.Size())
		if err != nil {
			return root, errf("repeat block: literals: %v", err)
		}
		lits.Op = "literals: " + lits.Op
		root.Nodes = append(root.Nodes, lits)
	} else if len(rest) != 0 {
		return root, errf("repeat block: %d bytes after the stream", len(rest))
	}
	return root, nil
}

// repeatProbeBytes is what repeatProbe reads: 16 KiB from the middle of
// the tensor.
const repeatProbeBytes = 16 << 10

// repeatProbeShare: a tensor where at least one in repeatProbeShare of the
// distinct probed words without a zero value repeat (repeatProbe) tries
// a repeat block.
const repeatProbeShare = 8

// repeatProbe reads up to repeatProbeBytes from the middle of the tensor
// of plan p (its first block; lzTry, repeatType) and reports whether at
// least 1/repeatProbeShare of its distinct nonzero words (magnitude and
// column) occur again, at the same column or at the column mirrored
// about the row's centre (either way: the DFT's c ↔ cols−c, the DCT's
// c ↔ cols−1−c), as the operator's sources would give them: half of
// them in a windowed DFT or DCT basis, a few in a thousand in sparse
// activations or trained weights. set is scratch. The answer depends on
// the input's bytes only (the version follows it).
func repeatProbe(r io.ReaderAt, p *blockPlan, set *[]uint64) (bool, error) {
	size := int64(p.dtype.Size())
	cols := p.tensorRow
	n := p.length / size
	m := min(n, repeatProbeBytes/size)
	first := (n - m) / 2
	first -= first % cols // from a row's start where the tensor allows it
	b, ok := inPlace(r, p.off+first*size, m*size)
	if !ok {
		b = make([]byte, m*size)
		if _, err := r.ReadAt(b, p.off+first*size); err != nil && err != io.EOF {
			return false, err
		}
	}
	if *set == nil {
		*set = make([]uint64, 1<<lzSelfSetBits)
	}
	s := *set
	clear(s)
	sign := uint32(1) << (8*size - 1)
	// look finds the key of magnitude a at column c, inserts it where add
	// says so, and reports whether it was there; a key found is marked,
	// and its first mark counts (rep): a value repeated many times (a
	// constant, the ones of a test pattern) counts once, so the share is
	// of distinct keys, not of words
	keys, rep := 0, 0
	look := func(a uint32, c int64, add bool) bool {
		e := uint64(a) | uint64(c)<<32 | 1<<63
		for h := (a*0x9e3779b1 ^ uint32(c)*0x85ebca77) >> (32 - lzSelfSetBits); ; h = (h + 1) & (1<<lzSelfSetBits - 1) {
			if s[h] == 0 {
				if add {
					s[h] = e
					keys++
				}
				return false
			}
			if s[h]&^(1<<62) == e {
				if s[h]&(1<<62) == 0 {
					s[h] |= 1 << 62
					rep++
				}
				return true
			}
		}
	}
	for i := int64(0); i < m && keys < 1<<(lzSelfSetBits-1); i++ {
		var a uint32
		if size == 4 {
			a = binary.LittleEndian.Uint32(b[4*i:]) &^ sign
		} else {
			a = uint32(binary.LittleEndian.Uint16(b[2*i:])) &^ sign
		}
		if a == 0 {
			continue
		}
		c := (first + i) % cols
		if !look(a, (cols-c)%cols, false) && !look(a, cols-1-c, false) {
			look(a, c, true)
		}
	}
	return keys >= lzMinWords && rep*repeatProbeShare >= keys, nil
}

// repeatRowReads and repeatRowSpan: repeatRowProbe reads up to
// repeatRowReads rows spread over the tensor, and of each the
// repeatRowSpan columns about the row's centre (the whole row where it is
// shorter).
const (
	repeatRowReads = 4
	repeatRowSpan  = 64
)

// repeatRowShare: a 16-bit tensor where at least one in repeatRowShare
// of the nonzero words repeatRowProbe reads match goes on to
// repeatProbe; one where fewer than half that share of the first 32 or
// more match stops there.
const repeatRowShare = 4

// repeatRowProbe is the cheap first look at a tensor of 16-bit values
// (plan p, a tensor's first block, rows of p.tensorRow values) whose
// sampled value pairs did not repeat (lzTry): the pair probe misses the
// tables that repeat single values (a DFT or DCT basis in BF16 or F16),
// and repeatProbe's 16 KiB is too much to read from every weight. It
// reads rows spread over the tensor, repeatRowSpan columns about each
// one's centre, and reports whether at least 1/repeatRowShare of their
// nonzero words have the magnitude of the word at a mirrored column
// (c ↔ cols−c or cols−1−c, the two symmetries of the operator's sources)
// in the same row, or at the same column in the row read before: nearly
// all of a windowed DFT's or a DCT's, about one in a hundred of trained
// weights', which stop after the first row read (about a thousand
// instructions a tensor).
func repeatRowProbe(r io.ReaderAt, p *blockPlan) (bool, error) {
	cols := p.tensorRow
	rows := p.length / 2 / cols
	span := min(cols, repeatRowSpan)
	lo := cols/2 - span/2 // the span's first column
	reads := min(rows, repeatRowReads)
	var mag [repeatRowReads][repeatRowSpan]uint16
	nz, match := int64(0), int64(0)
	for k := int64(0); k < reads; k++ {
		row := (2*k + 1) * rows / (2 * reads)
		off := p.off + (row*cols+lo)*2
		b, ok := inPlace(r, off, span*2)
		if !ok {
			b = make([]byte, span*2)
			if _, err := r.ReadAt(b, off); err != nil && err != io.EOF {
				return false, err
			}
		}
		// the column mirrored about cols/2 of span index i is at index
		// mid−i, the one about (cols−1)/2 at mid−1−i
		mid := cols - 2*lo
		if k == 0 && !repeatRowFirst(b[:2*span], mid) {
			return false, nil
		}
		m := &mag[k]
		for i := range m[:span] {
			m[i] = binary.LittleEndian.Uint16(b[2*i:]) & 0x7fff
		}
		for i := int64(0); i < span; i++ {
			a := m[i]
			if a == 0 {
				continue
			}
			nz++
			j1, j2 := mid-i, mid-1-i
			if j1 != i && j1 >= 0 && j1 < span && m[j1] == a ||
				j2 != i && j2 >= 0 && j2 < span && m[j2] == a ||
				k > 0 && mag[k-1][i] == a {
				match++
			}
		}
		if nz >= repeatRowSpan/2 && 2*repeatRowShare*match < nz {
			return false, nil
		}
	}
	return nz >= reads*span/4 && repeatRowShare*match >= nz, nil
}

// repeatRowFirst is repeatRowProbe's first look, at its first row's
// span b (mirrors of index i at mid−i and mid−1−i): false where at least
// 8 of the span's first 16 words whose mirrors lie in it, left of the
// centre, are nonzero and fewer than 1/repeatRowShare of those match a
// mirrored word (where trained weights stop: about a hundred
// instructions a tensor). Four words at a time: the mirrors' four are
// loaded and their 16-bit lanes reversed, and a lane matches where the
// XOR of its magnitudes is zero.
func repeatRowFirst(b []byte, mid int64) bool {
	const lanes, hi = 0x7fff7fff7fff7fff, 0x8000800080008000
	span := int64(len(b) / 2)
	first := max(0, mid-span+1) // the first word whose mirror mid−i is in the span
	if 2*(first+15)+2 >= mid {  // the 16 words reach the centre: no first look
		return true
	}
	nz, match := 0, 0
	for i := first; i < first+16; i += 4 {
		l := binary.LittleEndian.Uint64(b[2*i:]) & lanes
		// words mid−4−i .. mid−1−i and mid−3−i .. mid−i, lanes reversed:
		// lane q the mirror of word i+q about (mid−1)/2 and mid/2
		m2 := reverseLanes(binary.LittleEndian.Uint64(b[2*(mid-4-i):]))
		m1 := reverseLanes(binary.LittleEndian.Uint64(b[2*(mid-3-i):]))
		live := (l + lanes) & hi // lanes of nonzero words
		// a lane's high bit where its XOR is nonzero: no match
		d1 := ((l^m1)&lanes + lanes) & hi
		d2 := ((l^m2)&lanes + lanes) & hi
		nz += bits.OnesCount64(live)
		match += bits.OnesCount64(live &^ (d1 & d2))
	}
	return nz < 8 || repeatRowShare*match >= nz
}

// reverseLanes reverses the order of the four 16-bit lanes of x.
func reverseLanes(x uint64) uint64 {
	x = bits.ReverseBytes64(x)
	return x>>8&0x00ff00ff00ff00ff | x&0x00ff00ff00ff00ff<<8
}
