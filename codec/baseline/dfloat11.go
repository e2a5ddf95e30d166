package baseline

// dfloat11: the method of DFloat11 (T. Zhang et al., "70% Size, 100%
// Accuracy: Lossless LLM Compression for Efficient GPU Inference via
// Dynamic-Length Float", 2025, arXiv:2504.11651; code
// github.com/LeanModels/DFloat11), reimplemented from the paper.
//
// A BF16 value is split into its 8-bit exponent and the byte holding its
// sign and 7 mantissa bits. The exponents of a whole tensor are coded with ONE
// Huffman code built from the tensor's exponent histogram; the sign+mantissa
// bytes are stored raw. Here the code is a huff0 table (canonical, at most 11
// bits per code, histograms above 256 Ki values scaled down before the build),
// written once per tensor, and the exponents are coded in blocks of 128 Ki
// values that all use that table (huff0 4-stream blocks, so blocks decode in
// parallel). A block that the table cannot shrink is stored raw and a block of
// one repeated exponent as that byte; a tensor with one exponent value stores
// it once; a tensor whose coded exponents (table included) would not be
// smaller than the raw exponents, such as a tiny one, stores them raw.
//
// DFloat11 is defined for BF16 only. F16 and F32 tensors get the same idea
// here: one exponent table per tensor (5- and 8-bit exponents) and the
// remaining bits raw, sign+mantissa packed into 11 bits for F16 and 3 bytes
// for F32. Everything else (opaque bytes, other dtypes, files without a
// layout) is zstd level 3, or stored raw when zstd does not shrink it.
//
// DFloat11 itself decodes the weights of a whole transformer block in one
// GPU kernel, with code lengths bounded by its hierarchical lookup tables;
// here the code is per tensor, so that any tensor decodes alone, and huff0
// bounds code lengths to 11 bits, which costs little on exponent histograms.
// The archive ends with a CRC-32C of the original.

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/huff0"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// dfBlock is the number of exponents per huff0 block: a power of two below
// huff0.BlockSizeMax, a multiple of 8 so F16 bit-packed sign+mantissa blocks
// start on byte boundaries, and small enough that each of the 4 streams fits
// huff0's 64 KiB stream limit.
const dfBlock = 1 << 17

// Segment modes of a dfloat11 archive.
const (
	dfRaw byte = iota
	dfZstd
	dfBF16
	dfF16
	dfF32
	dfModes
)

// Exponent stream modes of a float segment.
const (
	dfExpRaw  byte = 0
	dfExpRLE  byte = 1
	dfExpHuff byte = 2
)

// dfWidth is the element size of the float modes.
var dfWidth = [dfModes]int{dfBF16: 2, dfF16: 2, dfF32: 4}

func dfloat11SpanMode(dt dtype.DType) dtype.DType {
	switch dt {
	case dtype.BF16, dtype.F16, dtype.F32:
		return dt
	}
	return dtype.Invalid
}

// smLen is the size of the raw sign+mantissa part for cnt values.
func smLen(mode byte, cnt int) int {
	switch mode {
	case dfF16:
		return (cnt*11 + 7) / 8
	case dfF32:
		return 3 * cnt
	}
	return cnt
}

type dfloat11Codec struct{ threads int }

func newDFloat11(opt Options) *dfloat11Codec { return &dfloat11Codec{threads: opt.threads()} }

func (c *dfloat11Codec) Name() string { return "dfloat11" }

// dfSeg is one segment while compressing.
type dfSeg struct {
	mode   byte
	off, n int
	// float segments
	cnt     int    // whole elements
	expMode byte   // dfExpRaw, dfExpRLE or dfExpHuff
	exps    []byte // one exponent per element
	sm      []byte // raw sign+mantissa part
	table   []byte // huff0 table (dfExpHuff)
	enc     huff0.Scratch
	blocks  []dfBlk
	// opaque segments
	payload []byte
}

type dfBlk struct {
	typ  byte
	data []byte
}

func (s *dfSeg) nblocks() int { return (s.cnt + dfBlock - 1) / dfBlock }

// dfJob is one block of a float segment (block >= 0) or one opaque segment.
type dfJob struct{ seg, block int }

func (c *dfloat11Codec) Compress(src []byte, segs []codec.Segment) ([]byte, error) {
	sp, err := spans(len(src), segs, dfloat11SpanMode)
	if err != nil {
		return nil, err
	}
	ds := make([]dfSeg, len(sp))
	for i, s := range sp {
		ds[i] = dfSeg{mode: dfZstd, off: s.off, n: s.n}
		switch s.dt {
		case dtype.BF16:
			ds[i].mode = dfBF16
		case dtype.F16:
			ds[i].mode = dfF16
		case dtype.F32:
			ds[i].mode = dfF32
		}
	}

	// Phase 1, per segment: split the fields, count exponents, build the
	// tensor's one table.
	_ = forEach(c.threads, len(ds), func(_, i int) error {
		s := &ds[i]
		if s.mode == dfZstd {
			return nil
		}
		s.cnt = s.n / dfWidth[s.mode]
		s.exps = make([]byte, s.cnt)
		s.sm = make([]byte, smLen(s.mode, s.cnt))
		var hist [256]uint32
		dfSplit(s.mode, src[s.off:s.off+s.cnt*dfWidth[s.mode]], s.exps, s.sm, &hist)
		s.expMode = dfExpRaw
		distinct := 0
		for _, v := range hist {
			if v != 0 {
				distinct++
			}
		}
		switch {
		case distinct == 1:
			s.expMode = dfExpRLE
		case distinct > 1:
			if s.enc.BuildCTable(&hist) != nil {
				break
			}
			t, err := s.enc.AppendTable(nil)
			if err != nil {
				break
			}
			s.expMode, s.table = dfExpHuff, t
			s.blocks = make([]dfBlk, s.nblocks())
		}
		return nil
	})

	// Phase 2, in parallel over all blocks and opaque segments.
	var jobs []dfJob
	for i := range ds {
		switch {
		case ds[i].mode == dfZstd:
			jobs = append(jobs, dfJob{seg: i, block: -1})
		case ds[i].expMode == dfExpHuff:
			for b := range ds[i].blocks {
				jobs = append(jobs, dfJob{seg: i, block: b})
			}
		}
	}
	work := make([]huff0.Scratch, min(c.threads, max(len(jobs), 1)))
	_ = forEach(c.threads, len(jobs), func(w, i int) error {
		j := jobs[i]
		s := &ds[j.seg]
		if j.block < 0 {
			s.payload = zstdEncoder().EncodeAll(src[s.off:s.off+s.n], nil)
			if len(s.payload) >= s.n {
				s.mode, s.payload = dfRaw, src[s.off:s.off+s.n]
			}
			return nil
		}
		in := s.exps[j.block*dfBlock : min(s.cnt, (j.block+1)*dfBlock)]
		sc := &work[w]
		sc.TransferCTable(&s.enc)
		sc.Reuse = huff0.ReusePolicyMust
		out, _, err := huff0.Compress4X(in, sc)
		blk := &s.blocks[j.block]
		switch {
		case err == nil:
			blk.typ, blk.data = blockHuff, append([]byte(nil), out...)
		case errors.Is(err, huff0.ErrUseRLE):
			blk.typ, blk.data = blockRLE, in[:1]
		default:
			blk.typ, blk.data = blockRaw, in
		}
		return nil
	})

	// Phase 3: keep Huffman only where it is smaller than raw exponents,
	// then write the archive.
	plens := make([]int, len(ds))
	size := 64 + 4
	for i := range ds {
		s := &ds[i]
		if s.expMode == dfExpHuff && s.huffSize() >= s.cnt {
			s.expMode, s.blocks = dfExpRaw, nil
		}
		plens[i] = s.payloadLen()
		size += 24 + plens[i]
	}
	dst := appendHeader(make([]byte, 0, size), magicDFloat11, len(src))
	dst = appendUvarint(dst, len(ds))
	for i := range ds {
		dst = append(dst, ds[i].mode)
		dst = appendUvarint(dst, ds[i].n)
		dst = appendUvarint(dst, plens[i])
	}
	for i := range ds {
		dst = ds[i].appendPayload(dst, src)
	}
	return appendUint32(dst, checksum(src)), nil
}

// huffSize is the size of the Huffman-coded exponents: table, block table
// and blocks.
func (s *dfSeg) huffSize() int {
	n := len(s.table)
	for _, b := range s.blocks {
		n += 1 + len(b.data)
		if b.typ == blockHuff {
			n += uvarintLen(len(b.data))
		}
	}
	return n
}

// payloadLen is the size appendPayload writes.
func (s *dfSeg) payloadLen() int {
	if s.mode == dfRaw || s.mode == dfZstd {
		return len(s.payload)
	}
	n := s.n - s.cnt*dfWidth[s.mode] // tail
	if s.cnt == 0 {
		return n
	}
	n += 1 + len(s.sm)
	switch s.expMode {
	case dfExpRaw:
		n += s.cnt
	case dfExpRLE:
		n++
	case dfExpHuff:
		n += s.huffSize()
	}
	return n
}

// appendPayload writes a segment's payload. A float segment is: exponent
// mode, [table, block table, blocks | raw exponents | the one exponent],
// sign+mantissa, tail; one shorter than one element is its tail alone.
func (s *dfSeg) appendPayload(dst, src []byte) []byte {
	if s.mode == dfRaw || s.mode == dfZstd {
		return append(dst, s.payload...)
	}
	tail := src[s.off+s.cnt*dfWidth[s.mode] : s.off+s.n]
	if s.cnt == 0 {
		return append(dst, tail...)
	}
	dst = append(dst, s.expMode)
	switch s.expMode {
	case dfExpRaw:
		dst = append(dst, s.exps...)
	case dfExpRLE:
		dst = append(dst, s.exps[0])
	case dfExpHuff:
		dst = append(dst, s.table...)
		for _, b := range s.blocks {
			dst = append(dst, b.typ)
			if b.typ == blockHuff {
				dst = appendUvarint(dst, len(b.data))
			}
		}
		for _, b := range s.blocks {
			dst = append(dst, b.data...)
		}
	}
	dst = append(dst, s.sm...)
	return append(dst, tail...)
}

// dfDec is one segment while decompressing.
type dfDec struct {
	mode    byte
	off, n  int
	payload []byte
	base    int // archive offset of payload, for errors
	// float segments
	cnt     int
	expMode byte
	dec     *huff0.Decoder
	blocks  []dfDecBlk
	one     [1]dfDecBlk // blocks of a one-block segment
	exps    []byte      // raw exponents, or the one exponent (RLE)
	sm      []byte
}

type dfDecBlk struct {
	typ  byte
	n    int // payload length
	data []byte
}

func (c *dfloat11Codec) Decompress(comp []byte) ([]byte, error) {
	r := &reader{codec: "dfloat11", b: comp}
	origLen, sum, nseg, err := r.begin(magicDFloat11, 3)
	if err != nil {
		return nil, err
	}
	ds := make([]dfDec, nseg)
	plens := make([]int, nseg)
	pos, plen := 0, 0
	for i := range ds {
		mode, err := r.byte()
		if err != nil {
			return nil, err
		}
		if mode >= dfModes {
			r.off--
			return nil, r.corrupt("segment %d has unknown mode %d", i, mode)
		}
		n, err := r.length(origLen-pos, "segment length")
		if err != nil {
			return nil, err
		}
		p, err := r.length(r.remaining(), "segment payload length")
		if err != nil {
			return nil, err
		}
		ds[i] = dfDec{mode: mode, off: pos, n: n}
		plens[i] = p
		pos += n
		plen += p
	}
	if pos != origLen {
		return nil, r.corrupt("segments cover %d bytes, archive says %d", pos, origLen)
	}
	if plen != r.remaining() {
		return nil, r.corrupt("segment payloads take %d bytes, %d left", plen, r.remaining())
	}
	// Check every segment against its payload before allocating the output.
	for i := range ds {
		s := &ds[i]
		s.base = r.off
		s.payload, _ = r.bytes(plens[i])
		if err := s.check(); err != nil {
			return nil, err
		}
	}
	dst := make([]byte, origLen)
	// Jobs: one per raw or zstd segment, one per block of a float segment.
	// A float segment of one block (most tensors) is parsed by its job, with
	// the worker's scratch; the table of a larger one is parsed here, once,
	// and shared by its blocks.
	var jobs []dfJob
	for i := range ds {
		s := &ds[i]
		if s.mode == dfRaw || s.mode == dfZstd {
			jobs = append(jobs, dfJob{seg: i, block: -1})
			continue
		}
		w := dfWidth[s.mode]
		copy(dst[s.off+s.cnt*w:s.off+s.n], s.payload[len(s.payload)-(s.n-s.cnt*w):])
		nb := (s.cnt + dfBlock - 1) / dfBlock
		if nb > 1 {
			if err := s.parse(new(huff0.Scratch)); err != nil {
				return nil, err
			}
		}
		for b := range nb {
			jobs = append(jobs, dfJob{seg: i, block: b})
		}
	}

	type worker struct {
		huff huff0.Scratch
		exps []byte
	}
	work := make([]worker, min(c.threads, max(len(jobs), 1)))
	err = forEach(c.threads, len(jobs), func(w, i int) error {
		j := jobs[i]
		s := &ds[j.seg]
		out := dst[s.off : s.off+s.n]
		if j.block < 0 {
			if s.mode == dfRaw {
				copy(out, s.payload)
				return nil
			}
			sr := &reader{codec: "dfloat11", b: comp, off: s.base}
			_, err := zstdDecode(sr, s.payload, out[:0], s.n, false)
			return err
		}
		if s.cnt <= dfBlock {
			if err := s.parse(&work[w].huff); err != nil {
				return err
			}
		}
		lo, hi := j.block*dfBlock, min(s.cnt, (j.block+1)*dfBlock)
		var exps []byte
		switch s.expMode {
		case dfExpRaw:
			exps = s.exps[lo:hi]
		case dfExpRLE, dfExpHuff:
			if cap(work[w].exps) < dfBlock {
				work[w].exps = make([]byte, dfBlock)
			}
			exps = work[w].exps[:hi-lo]
			if s.expMode == dfExpRLE {
				for k := range exps {
					exps[k] = s.exps[0]
				}
			} else {
				b := s.blocks[j.block]
				if err := decodeBlock(b.typ, b.data, exps, s.dec, nil); err != nil {
					return &CorruptError{Codec: "dfloat11", Offset: int64(s.base), Reason: "exponent block: " + err.Error()}
				}
			}
		}
		w2 := dfWidth[s.mode]
		dfMerge(s.mode, exps, s.sm, lo, out[lo*w2:hi*w2])
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := r.verify(dst, sum); err != nil {
		return nil, err
	}
	return dst, nil
}

// check sets cnt and checks what the segment's length and payload length
// alone decide; zstd payloads are checked by zstdDecode.
func (s *dfDec) check() error {
	fail := func(format string, args ...any) error {
		return &CorruptError{Codec: "dfloat11", Offset: int64(s.base), Reason: fmt.Sprintf(format, args...)}
	}
	switch s.mode {
	case dfRaw:
		if len(s.payload) != s.n {
			return fail("raw payload of %d bytes for %d bytes", len(s.payload), s.n)
		}
	case dfBF16, dfF16, dfF32:
		w := dfWidth[s.mode]
		s.cnt = s.n / w
		tail := s.n - s.cnt*w
		// The raw parts bound the segment by its payload.
		if smLen(s.mode, s.cnt)+tail > len(s.payload) {
			return fail("payload of %d bytes cannot hold %d values", len(s.payload), s.cnt)
		}
		if s.cnt == 0 && len(s.payload) != tail {
			return fail("payload of %d bytes for a %d-byte tail", len(s.payload), tail)
		}
	}
	return nil
}

// parse locates the parts of a float segment's payload and checks that they
// add up to it exactly. A Huffman table is read into sc, which must outlive
// the decoding of the segment's blocks.
func (s *dfDec) parse(sc *huff0.Scratch) error {
	r := &reader{codec: "dfloat11", b: s.payload}
	fail := func(err error) error {
		if ce, ok := err.(*CorruptError); ok {
			ce.Offset += int64(s.base)
		}
		return err
	}
	tail := s.n - s.cnt*dfWidth[s.mode]
	var err error
	if s.expMode, err = r.byte(); err != nil {
		return fail(err)
	}
	switch s.expMode {
	case dfExpRaw:
		s.exps, err = r.bytes(s.cnt)
	case dfExpRLE:
		s.exps, err = r.bytes(1)
	case dfExpHuff:
		sc, rest, terr := huff0.ReadTable(r.b[r.off:], sc)
		if terr != nil {
			return fail(r.corrupt("exponent table: %v", terr))
		}
		r.off = len(r.b) - len(rest)
		s.dec = sc.Decoder()
		nb := (s.cnt + dfBlock - 1) / dfBlock
		if nb > r.remaining() {
			return fail(r.corrupt("block table of %d entries does not fit", nb))
		}
		s.blocks = s.one[:]
		if nb > 1 {
			s.blocks = make([]dfDecBlk, nb)
		}
		data := 0
		for b := range s.blocks {
			bn := min(dfBlock, s.cnt-b*dfBlock)
			typ, terr := r.byte()
			if terr != nil {
				return fail(terr)
			}
			hl := 0
			switch typ {
			case blockRaw, blockRLE:
			case blockHuff:
				if bn < 12 {
					r.off--
					return fail(r.corrupt("huffman-coded block of %d values", bn))
				}
				if hl, terr = r.length(bn-1, "huffman block length"); terr != nil {
					return fail(terr)
				}
			default:
				r.off--
				return fail(r.corrupt("unknown block type %d", typ))
			}
			s.blocks[b] = dfDecBlk{typ: typ, n: payloadLen(typ, bn, hl)}
			data += s.blocks[b].n
			if data > r.remaining() {
				return fail(r.corrupt("exponent blocks need %d bytes, %d left", data, r.remaining()))
			}
		}
		for b := range s.blocks {
			s.blocks[b].data, _ = r.bytes(s.blocks[b].n)
		}
	default:
		r.off--
		return fail(r.corrupt("unknown exponent mode %d", s.expMode))
	}
	if err != nil {
		return fail(err)
	}
	if s.sm, err = r.bytes(smLen(s.mode, s.cnt)); err != nil {
		return fail(err)
	}
	if r.remaining() != tail {
		return fail(r.corrupt("%d bytes left for a %d-byte tail", r.remaining(), tail))
	}
	return nil
}

// dfSplit splits whole elements into exponents and raw sign+mantissa and
// counts the exponents.
func dfSplit(mode byte, src, exps, sm []byte, hist *[256]uint32) {
	switch mode {
	case dfBF16:
		splitBF16(src, exps, sm)
		for _, e := range exps {
			hist[e]++
		}
	case dfF16:
		// Eight 11-bit fields make 11 bytes: x0 holds 64 bits, x1 24.
		n8 := len(exps) &^ 7
		for i := 0; i < n8; i += 8 {
			var f [8]uint64
			for k := range f {
				v := binary.LittleEndian.Uint16(src[2*(i+k):])
				e := byte(v>>10) & 0x1f
				exps[i+k] = e
				hist[e]++
				f[k] = uint64(v>>15<<10 | v&0x3ff)
			}
			x0 := f[0] | f[1]<<11 | f[2]<<22 | f[3]<<33 | f[4]<<44 | f[5]<<55
			x1 := f[5]>>9 | f[6]<<2 | f[7]<<13
			d := sm[i/8*11 : i/8*11+11]
			binary.LittleEndian.PutUint64(d, x0)
			d[8], d[9], d[10] = byte(x1), byte(x1>>8), byte(x1>>16)
		}
		var acc uint64
		nb, k := 0, n8/8*11
		for i := n8; i < len(exps); i++ {
			v := binary.LittleEndian.Uint16(src[2*i:])
			e := byte(v>>10) & 0x1f
			exps[i] = e
			hist[e]++
			acc |= uint64(v>>15<<10|v&0x3ff) << nb
			nb += 11
			for nb >= 8 {
				sm[k] = byte(acc)
				acc >>= 8
				nb -= 8
				k++
			}
		}
		if nb > 0 {
			sm[k] = byte(acc)
		}
	case dfF32:
		for i := range exps {
			b := src[4*i : 4*i+4 : 4*i+4]
			e := b[3]<<1 | b[2]>>7
			exps[i] = e
			hist[e]++
			sm[3*i], sm[3*i+1], sm[3*i+2] = b[0], b[1], b[3]&0x80|b[2]&0x7f
		}
	}
}

// dfMerge rebuilds elements [lo, lo+len(exps)) of a segment into out from
// their exponents and the segment's sign+mantissa part sm.
func dfMerge(mode byte, exps, sm []byte, lo int, out []byte) {
	switch mode {
	case dfBF16:
		joinBF16(out, exps, sm[lo:lo+len(exps)])
	case dfF16:
		// lo is a multiple of 8, so the block starts on a byte boundary.
		// Eight fields at a time from 11 bytes, then one at a time.
		sm = sm[lo*11/8:]
		n8 := len(exps) &^ 7
		for i := 0; i < n8; i += 8 {
			d := sm[i/8*11 : i/8*11+11]
			x0 := binary.LittleEndian.Uint64(d)
			x1 := uint64(d[8]) | uint64(d[9])<<8 | uint64(d[10])<<16
			e := exps[i : i+8 : i+8]
			o := out[2*i : 2*i+16 : 2*i+16]
			f16Put(o[0:], x0, e[0])
			f16Put(o[2:], x0>>11, e[1])
			f16Put(o[4:], x0>>22, e[2])
			f16Put(o[6:], x0>>33, e[3])
			f16Put(o[8:], x0>>44, e[4])
			f16Put(o[10:], x0>>55|x1<<9, e[5])
			f16Put(o[12:], x1>>2, e[6])
			f16Put(o[14:], x1>>13, e[7])
		}
		p := n8 / 8 * 11
		var acc uint64
		nb := 0
		for i := n8; i < len(exps); i++ {
			e := exps[i]
			for nb < 11 && p < len(sm) {
				acc |= uint64(sm[p]) << nb
				p++
				nb += 8
			}
			x := uint16(acc) & 0x7ff // sign at bit 10, mantissa below
			v := x>>10<<15 | uint16(e&0x1f)<<10 | x&0x3ff
			out[2*i], out[2*i+1] = byte(v), byte(v>>8)
			acc >>= 11
			nb -= 11
		}
	case dfF32:
		sm = sm[3*lo : 3*(lo+len(exps))]
		for i, e := range exps {
			b := out[4*i : 4*i+4 : 4*i+4]
			s := sm[3*i : 3*i+3 : 3*i+3]
			b[0], b[1] = s[0], s[1]
			b[2] = e<<7 | s[2]&0x7f
			b[3] = s[2]&0x80 | e>>1
		}
	}
}

// f16Put writes the F16 value whose sign+mantissa field is the low 11 bits
// of f (sign at bit 10) and whose exponent is e.
func f16Put(o []byte, f uint64, e byte) {
	x := uint16(f)
	v := x>>10&1<<15 | uint16(e&0x1f)<<10 | x&0x3ff
	binary.LittleEndian.PutUint16(o, v)
}
