package gpu

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"

	"github.com/klauspost/compress/fse"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// A Plan is one archived file cut into flat work lists that a data-parallel
// device runs without looking at the archive format again:
//
//   - Streams: every Huffman sub-stream of every float block the device
//     decodes (huff0 1-stream blocks have one, 4-stream blocks four), each
//     decoded by one thread into the scratch symbol buffer (kernel
//     huff_decode);
//   - Blocks: every such float block, whose values one thread each
//     assembles from its symbol stream and residual planes (kernel merge);
//   - Host: the blocks the device does not decode (opaque bytes, zstd,
//     reference and duplicate blocks, F64, pair and setup-table streams),
//     which the CPU decodes with package codec.
//
// All offsets are into Payload (the float blocks' compressed bytes, back to
// back), Weights (each Huffman table's code lengths, as huff0 weights) or
// the scratch and output buffers, so the same lists serve the CUDA kernels, the WebGPU
// shaders and the Go twin (twin.go), and the layout of StreamJob and
// BlockJob is mirrored in kernels/decode.cu.
type Plan struct {
	File      string
	Base      int64  // file offset of the plan's first block (BlockJob.Out and HostBlock.Offset are relative to it)
	Size      int64  // bytes of the plan's blocks: the output buffer
	Payload   []byte // compressed payloads of the device's blocks
	Weights   []byte // WeightsPerTable huff0 weights per Huffman table (0: no code)
	Streams   []StreamJob
	Pairs     []PairJob
	Segs      []uint32 // per segment of PairSegment codes: its PairJob
	Blocks    []BlockJob
	Scratch   int64       // bytes of decoded symbols the Streams write
	Host      []HostBlock // blocks left to the CPU
	DevBytes  int64       // original bytes of the device's blocks
	Unhandled map[string]int64
}

// StreamJob is one huff0 bit stream: N symbols decoded with Huffman table
// Table (of code lengths up to TableLog) from Payload[Src:Src+Len] into
// scratch[Dst:Dst+N].
type StreamJob struct {
	Src, Len, N, Dst uint64
	Table, TableLog  uint64
	Block            uint64 // the BlockJob it belongs to (for error reports)
	_                uint64 // padding to 64 bytes
}

// PairJob expands one pair-coded stream (codec stream modes 4 and 5): the
// M = N/2 codes decoded at scratch[Codes:] become N symbols at
// scratch[Dst:]; code c < K·K is the pair (top[c/K], top[c%K]) with top at
// Payload[Top:Top+K], code K·K takes the next two of the X exceptions in
// Exc, and an odd last symbol is the last exception. Its codes are cut
// into segments of PairSegment codes, Segs[Seg:] (kernels pair_count,
// pair_scan, pair_expand).
type PairJob struct {
	Codes, M, Dst, N uint64
	Top              uint64
	K, _             uint32
	Exc              Source
	X, Seg           uint64
	Block            uint64
	_                uint64
}

// WeightsPerTable is the size of a table in Plan.Weights: one huff0 weight
// per byte symbol. The kernel build_lut expands each table into a decoding
// table of LUTEntries entries (code length | symbol<<8) in device scratch
// memory, so only the weights stay resident.
const (
	WeightsPerTable = 256
	LUTEntries      = 1 << 11
)

// PairSegment is the number of codes one thread of pair_count and
// pair_expand handles.
const PairSegment = 256

// Source kinds of a BlockJob field.
const (
	SrcPayload = 0 // one byte per value at Payload[Off+i]
	SrcScratch = 1 // one byte per value at scratch[Off+i]
	SrcPacked  = 2 // Width bits per value at bit i·Width of Payload[Off:] (LSB first)
	SrcConst   = 3 // every value is Off
)

// Source says where one field of a float block's values is.
type Source struct {
	Kind, Width uint32
	Off         uint64
}

// MaxSources is the symbol stream plus at most three residual planes (F32).
const MaxSources = 4

// BlockJob assembles N values of Size bytes at output offset Out from
// Src[0] (the symbols: exponent<<J | top J residual bits) and Src[1:NSrc]
// (the residual planes, low byte first), as doc.go of package codec
// defines for the fields form.
//
// A sparse block (Sparse 1; codec's form 2) holds only its nonzero values
// in the sources: value i is zero where bit i%64 of the little-endian u64
// word w = i/64 of Payload[Mask:] is clear, else it is source value
// prefix + the set bits of words 8·(w/8) to w-1 and of word w below bit i,
// prefix being u32 number w/8 after the W = ceil(N/64) words (the nonzero
// values before each group of eight words: 1/16 bit per value). The
// planner decodes the mask on the CPU (its column model is a sequential
// range coder) and puts words and prefixes in Payload, 8-byte aligned.
type BlockJob struct {
	Out, N             uint64
	Size, E, M, S      uint32
	J, Z, NSrc, Sparse uint32
	Src                [MaxSources]Source
	Index              uint64 // the block's index in its file
	Mask               uint64 // Sparse: where its mask words and prefixes start in Payload
}

// HostBlock is a block the CPU decodes (Offset relative to Plan.Base).
type HostBlock struct {
	Index          int
	Offset, Length int64
	Kind           string
}

// StreamJobBytes and BlockJobBytes are the sizes of the jobs as the kernels
// see them.
const (
	StreamJobBytes = 64
	BlockJobBytes  = 128
	PairJobBytes   = 96
)

// ErrCorrupt wraps every error about damaged archive bytes.
var ErrCorrupt = errors.New("corrupt archive")

type planError struct {
	file   string
	block  int
	offset int64
	msg    string
}

func (e *planError) Error() string {
	return fmt.Sprintf("gpu: %s: block %d at archive offset %d: %s", e.file, e.block, e.offset, e.msg)
}
func (e *planError) Unwrap() error { return ErrCorrupt }

// NewPlan reads file fi of an archive (rd, opened on ra) and makes its plan.
// Damaged float blocks are an error here (naming the block and its archive
// offset); blocks of kinds the device does not decode go to Plan.Host.
func NewPlan(rd *codec.Reader, ra io.ReaderAt, fi int) (*Plan, error) {
	files := rd.Files()
	if fi < 0 || fi >= len(files) {
		return nil, fmt.Errorf("gpu: no file %d in the archive", fi)
	}
	blocks := files[fi].Blocks()
	return newPlan(rd, ra, fi, blocks, 0, len(blocks))
}

// newPlan makes the plan of blocks [from, to) of file fi.
func newPlan(rd *codec.Reader, ra io.ReaderAt, fi int, blocks []codec.BlockInfo, from, to int) (*Plan, error) {
	f := rd.Files()[fi]
	p := &Plan{File: f.Name, Base: f.Size, Unhandled: map[string]int64{}}
	if from < to {
		p.Base = blocks[from].Offset
	}
	var pb planBuilder
	var buf []byte
	for bi := from; bi < to; bi++ {
		b := blocks[bi]
		p.Size += b.Length
		if b.Kind != codec.KindFloat || b.Compressed == 0 {
			p.host(bi, b, b.Kind.String())
			continue
		}
		if b.Compressed > 1<<31 || b.Length > 1<<34 {
			return nil, &planError{f.Name, bi, b.Payload, "block too large"}
		}
		if int64(cap(buf)) < b.Compressed {
			buf = make([]byte, b.Compressed)
		}
		buf = buf[:b.Compressed]
		if _, err := ra.ReadAt(buf, b.Payload); err != nil {
			return nil, fmt.Errorf("gpu: %s: reading block %d: %w", f.Name, bi, err)
		}
		why, err := pb.add(p, buf, b, bi)
		if err != nil {
			return nil, &planError{f.Name, bi, b.Payload, err.Error()}
		}
		if why != "" {
			p.host(bi, b, why)
		}
	}
	return p, nil
}

// ResidentBytes is the device memory the plan's compressed form takes:
// what a GPU holds to decode the weights on demand instead of holding them
// decoded (DevBytes).
func (p *Plan) ResidentBytes() int64 {
	return int64(len(p.Payload)) + int64(len(p.Weights)) + StreamJobBytes*int64(len(p.Streams)) +
		PairJobBytes*int64(len(p.Pairs)) + 4*int64(len(p.Segs)) + BlockJobBytes*int64(len(p.Blocks))
}

// NumTables is the number of Huffman tables in Weights.
func (p *Plan) NumTables() int {
	return len(p.Weights) / WeightsPerTable
}

func (p *Plan) host(bi int, b codec.BlockInfo, why string) {
	p.Host = append(p.Host, HostBlock{Index: bi, Offset: b.Offset - p.Base, Length: b.Length, Kind: why})
	p.Unhandled[why] += b.Length
}

// planBuilder holds the scratch of NewPlan.
type planBuilder struct {
	fs      fse.Scratch
	weights [256]byte
	mask    []byte // a sparse block's zero mask
}

// errWideTable: a table with a code for a symbol wider than the stream.
// package codec accepts it when no such symbol is decoded, so the block
// goes to the CPU, which decides.
var errWideTable = errors.New("huffman table: a code for a symbol wider than the stream")

// add appends the jobs of one float block, or returns why the device does
// not take it ("" when it does).
func (pb *planBuilder) add(p *Plan, src []byte, b codec.BlockInfo, bi int) (string, error) {
	l, ok := b.DType.FloatLayout()
	if !ok || l.Exp > 8 || b.DType.Size() > 4 {
		return "float " + b.DType.String(), nil
	}
	size := b.DType.Size()
	if b.Length%int64(size) != 0 {
		return "", fmt.Errorf("%d bytes is not a whole number of %v values", b.Length, b.DType)
	}
	n := uint64(b.Length) / uint64(size)
	sparse := len(src) > 0 && codec.FloatForm(src[0]) == codec.FormSparse
	if len(src) > 0 && codec.FloatForm(src[0]) != codec.FormFields && !sparse {
		return "float form " + fmt.Sprint(src[0]), nil // the CPU decides
	}
	var h codec.FloatHeader
	m := n // the values in the sources
	if sparse {
		var err error
		if h, m, err = pb.sparse(src, n, b.DType); err != nil {
			return "", err
		}
	} else {
		var err error
		if h, err = codec.ReadFloatHeader(src, b.DType); err != nil {
			return "", err
		}
	}
	job := BlockJob{Out: uint64(b.Offset - p.Base), N: n, Size: uint32(size), E: uint32(h.Exp), M: uint32(h.Mant), S: uint32(h.Sign), J: uint32(h.Join), Z: uint32(h.Zero), Index: uint64(bi)}
	// Jobs are added to p only when the whole block is accepted: remember
	// where the lists stood.
	nStreams, nWeights, nPairs, nSegs, scratch := len(p.Streams), len(p.Weights), len(p.Pairs), len(p.Segs), p.Scratch
	undo := func() {
		p.Streams, p.Weights, p.Pairs, p.Segs, p.Scratch = p.Streams[:nStreams], p.Weights[:nWeights], p.Pairs[:nPairs], p.Segs[:nSegs], scratch
	}
	base := uint64(len(p.Payload))
	pos := h.Len
	if m > 0 {
		job.NSrc = uint32(h.Streams())
		for k := 0; k < h.Streams(); k++ {
			var why string
			var err error
			job.Src[k], pos, why, err = pb.stream(p, src, pos, m, uint32(h.Width(k)), base, len(p.Blocks), h.Symbols(k))
			if err != nil || why != "" {
				undo()
				return why, err
			}
		}
	}
	if pos != len(src) {
		undo()
		return "", fmt.Errorf("%d trailing bytes", len(src)-pos)
	}
	// Each Huffman table costs a LUTEntries decoding table at decode time:
	// a block's tables must not outweigh twice its bytes, so that a small
	// archive of tiny blocks cannot ask for much more table memory than
	// output (small blocks are cheap on the CPU anyway).
	if int64(p.NumTables()-nWeights/WeightsPerTable)*2*LUTEntries > 2*b.Length {
		undo()
		return "small block", nil
	}
	p.Payload = append(p.Payload, src...)
	if sparse {
		// the mask words and prefixes, 8-byte aligned
		for len(p.Payload)%8 != 0 {
			p.Payload = append(p.Payload, 0)
		}
		job.Sparse, job.Mask = 1, uint64(len(p.Payload))
		words := (n + 63) / 64
		var pre uint32
		for w := uint64(0); w < words; w++ {
			var x uint64
			for k := uint64(0); k < 8 && 8*w+k < uint64(len(pb.mask)); k++ {
				x |= uint64(pb.mask[8*w+k]) << (8 * k)
			}
			p.Payload = binary.LittleEndian.AppendUint64(p.Payload, x)
		}
		for g := uint64(0); g < (words+7)/8; g++ {
			p.Payload = binary.LittleEndian.AppendUint32(p.Payload, pre)
			for k := 64 * g; k < 64*(g+1) && k < uint64(len(pb.mask)); k++ {
				pre += uint32(bits.OnesCount8(pb.mask[k]))
			}
		}
	}
	p.Blocks = append(p.Blocks, job)
	p.DevBytes += b.Length
	return "", nil
}

// sparse decodes the zero mask of a sparse block of n values into
// pb.mask and returns the header of its nonzero values (a fields-form
// header whose streams hold m values; none when m is 0).
func (pb *planBuilder) sparse(src []byte, n uint64, d dtype.DType) (codec.FloatHeader, uint64, error) {
	sh, err := codec.ReadSparseHeader(src, int(n), d)
	if err != nil {
		return codec.FloatHeader{}, 0, err
	}
	nb := int((n + 7) / 8)
	if cap(pb.mask) < nb {
		pb.mask = make([]byte, nb)
	}
	pb.mask = pb.mask[:nb]
	m, err := codec.SparseMask(pb.mask, src, sh, int(n))
	if err != nil {
		return codec.FloatHeader{}, 0, err
	}
	if m == 0 {
		return codec.FloatHeader{Len: sh.Values}, 0, nil
	}
	h, err := codec.ReadSparseValues(src, sh, d)
	return h, uint64(m), err
}

// stream reads one stream of n symbols of the given width at src[pos:] and
// returns its source, the position after it, or why the device does not
// decode it. Pair and shared modes are allowed in symbol streams only.
func (pb *planBuilder) stream(p *Plan, src []byte, pos int, n uint64, width uint32, base uint64, block int, symbols bool) (Source, int, string, error) {
	s, err := codec.ReadStream(src, pos, int(n), uint(width), symbols)
	if err != nil {
		return Source{}, 0, "", err
	}
	switch s.Mode {
	case codec.StreamPacked:
		k := uint32(SrcPacked)
		if width == 8 {
			k = SrcPayload
		}
		return Source{Kind: k, Width: width, Off: base + uint64(s.Data)}, s.End, "", nil
	case codec.StreamConst:
		return Source{Kind: SrcConst, Width: width, Off: uint64(s.Symbol)}, s.End, "", nil
	case codec.StreamHuff1, codec.StreamHuff4:
		src, why, err := pb.huff(p, src, s.Data, s.DataEnd, n, width, base, block, s.Mode.X4())
		return src, s.End, why, err
	case codec.StreamPair1, codec.StreamPair4:
		src, why, err := pb.pairs(p, src, s, n, width, base, block)
		return src, s.End, why, err
	case codec.StreamZstd:
		return Source{}, 0, "zstd stream", nil
	}
	return Source{}, 0, "setup tables", nil // shared modes
}

// huff adds the stream jobs of the huff0 block src[pos:end] (table, 1 or 4
// bit streams) of n symbols.
func (pb *planBuilder) huff(p *Plan, src []byte, pos, end int, n uint64, width uint32, base uint64, block int, x4 bool) (Source, string, error) {
	l := uint64(end - pos)
	blk := src[pos:end]
	if n == 0 {
		return Source{}, "", errors.New("huffman stream of no symbols")
	}
	tl, hdr, err := pb.table(blk, width)
	if err == errWideTable {
		return Source{}, "wide table", nil
	}
	if err != nil {
		return Source{}, "", err
	}
	table := uint64(p.NumTables())
	p.Weights = append(p.Weights, pb.weights[:]...)
	data := uint64(pos + hdr)
	dl := l - uint64(hdr)
	dst := uint64(p.Scratch)
	add := func(off, ln, cnt uint64) error {
		if ln == 0 || src[data+off+ln-1] == 0 {
			return errors.New("huffman stream: missing end mark")
		}
		p.Streams = append(p.Streams, StreamJob{Src: base + data + off, Len: ln, N: cnt, Dst: dst, Table: table, TableLog: uint64(tl), Block: uint64(block)})
		dst += cnt
		return nil
	}
	if !x4 {
		if err := add(0, dl, n); err != nil {
			return Source{}, "", err
		}
	} else {
		if dl < 6 {
			return Source{}, "", errors.New("huffman stream: short jump table")
		}
		seg := (n + 3) / 4
		if 3*seg > n {
			return Source{}, "", fmt.Errorf("huffman stream: %d symbols cannot fill 4 streams", n)
		}
		d := src[data : data+dl]
		s1, s2, s3 := uint64(binary.LittleEndian.Uint16(d)), uint64(binary.LittleEndian.Uint16(d[2:])), uint64(binary.LittleEndian.Uint16(d[4:]))
		if 6+s1+s2+s3 >= dl {
			return Source{}, "", errors.New("huffman stream: jump table beyond the stream")
		}
		offs := [5]uint64{6, 6 + s1, 6 + s1 + s2, 6 + s1 + s2 + s3, dl}
		for q := 0; q < 4; q++ {
			cnt := seg
			if q == 3 {
				cnt = n - 3*seg
			}
			if err := add(offs[q], offs[q+1]-offs[q], cnt); err != nil {
				return Source{}, "", err
			}
		}
	}
	p.Scratch += int64(n)
	return Source{Kind: SrcScratch, Width: width, Off: uint64(p.Scratch) - n}, "", nil
}

// pairs adds the code streams and the PairJob of the pair stream s of n
// symbols.
func (pb *planBuilder) pairs(p *Plan, src []byte, s codec.Stream, n uint64, width uint32, base uint64, block int) (Source, string, error) {
	m := n / 2
	codes, why, err := pb.huff(p, src, s.Data, s.DataEnd, m, 8, base, block, s.Mode.X4())
	if err != nil || why != "" {
		return Source{}, why, err
	}
	x := uint64(s.X)
	exc, _, why, err := pb.stream(p, src, s.Exc, x, width, base, block, false)
	if err != nil || why != "" {
		return Source{}, why, err
	}
	job := PairJob{Codes: codes.Off, M: m, Dst: uint64(p.Scratch), N: n, Top: base + uint64(s.Top), K: uint32(s.K), Exc: exc, X: x, Seg: uint64(len(p.Segs)), Block: uint64(block)}
	for s := uint64(0); s < (m+PairSegment-1)/PairSegment; s++ {
		p.Segs = append(p.Segs, uint32(len(p.Pairs)))
	}
	p.Pairs = append(p.Pairs, job)
	p.Scratch += int64(n)
	return Source{Kind: SrcScratch, Width: width, Off: job.Dst}, "", nil
}

// table reads a huff0 table description (RFC 8878 section 4.2.1) into
// pb.weights (every symbol's weight, the implied last one included, 0 for
// absent symbols) and returns its table log and the description's size.
// The weights are checked to make a complete code of at most 11 bits, so
// buildLUT fills exactly 1<<tableLog entries.
func (pb *planBuilder) table(src []byte, width uint32) (uint, int, error) {
	clear(pb.weights[:])
	if len(src) < 2 {
		return 0, 0, errors.New("huffman table: too short")
	}
	h := int(src[0])
	var nw, used int
	if h >= 128 {
		nw = h - 127
		used = 1 + (nw+1)/2
		if used > len(src) {
			return 0, 0, errors.New("huffman table: too short")
		}
		for i := 0; i < nw; i++ {
			v := src[1+i/2]
			if i%2 == 0 {
				pb.weights[i] = v >> 4
			} else {
				pb.weights[i] = v & 15
			}
		}
	} else {
		used = 1 + h
		if used > len(src) || h == 0 {
			return 0, 0, errors.New("huffman table: too short")
		}
		if src[1]&15+5 > 6 {
			return 0, 0, errors.New("huffman table: weights table log too big")
		}
		pb.fs.DecompressLimit = 255
		pb.fs.Out = pb.weights[:0]
		out, err := fse.Decompress(src[1:1+h], &pb.fs)
		if err != nil {
			return 0, 0, fmt.Errorf("huffman table: %v", err)
		}
		if len(out) > 255 {
			return 0, 0, errors.New("huffman table: too many weights")
		}
		nw = len(out)
		copy(pb.weights[:], out)
		clear(pb.weights[nw:])
	}
	var rank [16]uint32
	total := uint32(0)
	for _, w := range pb.weights[:nw] {
		if w > 11 {
			return 0, 0, errors.New("huffman table: weight too large")
		}
		rank[w]++
		if w > 0 {
			total += 1 << (w - 1)
		}
	}
	if total == 0 {
		return 0, 0, errors.New("huffman table: all weights zero")
	}
	tl := uint(bits.Len32(total)) // highbit(total)+1
	if tl > 11 {
		return 0, 0, errors.New("huffman table: code too long")
	}
	restW := uint32(1)<<tl - total
	if restW&(restW-1) != 0 {
		return 0, 0, errors.New("huffman table: weights do not make a complete code")
	}
	last := uint8(bits.Len32(restW)) // log2(rest)+1
	pb.weights[nw] = last
	rank[last]++
	nw++
	if rank[1] < 2 || rank[1]&1 != 0 {
		return 0, 0, errors.New("huffman table: weights do not make a complete code")
	}
	if width < 8 && nw > 1<<width {
		// a symbol the stream's width cannot hold must not have a code
		for s := 1 << width; s < nw; s++ {
			if pb.weights[s] != 0 {
				return 0, 0, errWideTable
			}
		}
	}
	return tl, used, nil
}

// compact returns p's device work with the blocks' outputs back to back
// (block i at the sum of the lengths before it; Size = DevBytes) and no
// host blocks.
func (p *Plan) compact() *Plan {
	q := *p
	q.Host, q.Unhandled = nil, map[string]int64{}
	q.Blocks = slices.Clone(p.Blocks)
	var out uint64
	for i := range q.Blocks {
		q.Blocks[i].Out = out
		out += q.Blocks[i].N * uint64(q.Blocks[i].Size)
	}
	q.Size = int64(out)
	return &q
}

// Repeat returns a plan of k copies of p's device work, back to back (the
// output is k·Size bytes, copy c at c·Size; host blocks are left out): a
// large device workload made of real blocks, for measuring decode rates on
// inputs larger than the corpus files.
func (p *Plan) Repeat(k int) *Plan {
	q := &Plan{File: p.File, Size: int64(k) * p.Size, Unhandled: map[string]int64{}}
	for c := 0; c < k; c++ {
		pay, tab, scr, seg := uint64(len(q.Payload)), uint64(q.NumTables()), uint64(q.Scratch), uint64(len(q.Segs))
		out := uint64(c) * uint64(p.Size)
		blocks, pairs := uint64(len(q.Blocks)), uint32(len(q.Pairs))
		q.Payload = append(q.Payload, p.Payload...)
		q.Weights = append(q.Weights, p.Weights...)
		moveSrc := func(s Source) Source {
			switch s.Kind {
			case SrcPayload, SrcPacked:
				s.Off += pay
			case SrcScratch:
				s.Off += scr
			}
			return s
		}
		for _, s := range p.Streams {
			s.Src += pay
			s.Dst += scr
			s.Table += tab
			s.Block += blocks
			q.Streams = append(q.Streams, s)
		}
		for _, j := range p.Pairs {
			j.Codes += scr
			j.Dst += scr
			j.Top += pay
			j.Exc = moveSrc(j.Exc)
			j.Seg += seg
			j.Block += blocks
			q.Pairs = append(q.Pairs, j)
		}
		for _, s := range p.Segs {
			q.Segs = append(q.Segs, s+pairs)
		}
		for _, b := range p.Blocks {
			b.Out += out
			for i := range b.Src[:b.NSrc] {
				b.Src[i] = moveSrc(b.Src[i])
			}
			q.Blocks = append(q.Blocks, b)
		}
		q.Scratch += p.Scratch
		q.DevBytes += p.DevBytes
	}
	return q
}

// Bench decodes file fi through b once (checked exactly, as DecodeFile)
// and then a plan of the file's device work repeated until it holds at
// least minBytes, runs times, checking every copy's blocks by CRC-32C.
// The result's rates are those of the repeated plan.
func Bench(ctx context.Context, rd *codec.Reader, ra io.ReaderAt, fi int, b Backend, minBytes int64, runs int) (Result, error) {
	want, res, err := DecodeFile(ctx, rd, ra, fi, b, Options{})
	if err != nil {
		return res, err
	}
	res.Copies = 1
	p, err := NewPlan(rd, ra, fi)
	if err != nil || p.DevBytes == 0 {
		return res, err
	}
	// the device's blocks only, back to back, repeated
	c1 := p.compact()
	k := int(max(1, (minBytes+c1.Size-1)/c1.Size))
	q := c1.Repeat(k)
	out := make([]byte, q.Size)
	tm, err := b.Decode(ctx, q, out, DecodeOptions{Repeat: runs})
	if err != nil {
		return res, err
	}
	for c := 0; c < k; c++ {
		for i, bl := range p.Blocks {
			o := int64(c)*c1.Size + int64(c1.Blocks[i].Out)
			n := int64(bl.N) * int64(bl.Size)
			if !bytes.Equal(out[o:o+n], want[bl.Out:int64(bl.Out)+n]) {
				return res, fmt.Errorf("gpu: %s: copy %d of block %d decodes differently on %s", p.File, c, bl.Index, b.Name())
			}
		}
	}
	res.Kernel, res.Total, res.DevBytes, res.Resident = tm.Kernel, tm.Total, q.DevBytes, q.ResidentBytes()
	res.Copies = k
	res.Streams, res.MaxStreamSymbols = q.parallelism()
	return res, nil
}
