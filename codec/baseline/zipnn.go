package baseline

// zipnn: the method of ZipNN (M. Hershcovitch et al., "ZipNN: Lossless
// Compression for AI Models", IEEE CLOUD 2025, arXiv:2411.05239; code
// github.com/zipnn/zipnn v0.5, csrc/zipnn_core.c and
// csrc/data_manipulation_dtype{16,32}.c), reimplemented from the paper and
// the code's documented behaviour.
//
// Each float tensor is cut into chunks of 256 KiB of the tensor. Inside a
// chunk the bytes of the elements are grouped by position ("byte grouping":
// byte 0 of every element, then byte 1, ...). For BF16 and F32, ZipNN first
// moves the sign bit below the exponent so that the exponent fills the top
// byte (s e8 m7 -> e8 s m7; s e8 m23 -> e8 s m23); F16 is grouped as is. Each
// group of each chunk is Huffman-coded with a table of its own (zstd's huff0,
// four streams, here klauspost's port), kept only if it is smaller than 0.95
// of the group, else stored raw; a group of one repeated byte is stored as
// that byte (huff0's RLE answer). With 2-byte elements a chunk gives two
// 128 KiB groups, with 4-byte elements four 64 KiB groups. FP8 tensors are one
// group in 128 KiB chunks, as ZipNN does.
//
// Bytes that are not BF16/F16/F32/FP8 tensors (headers, integer tensors, F64,
// opaque files) go the way ZipNN's file tool sends bytes of unknown type: its
// default dtype, bfloat16. (ZipNN's safetensors tool would store integer
// tensors uncompressed; this is never larger and usually smaller.)
//
// Differences from ZipNN's own container: chunk tables here are one type
// byte plus a uvarint length instead of a byte plus an 8-byte cumulative
// offset per group, and the 32-byte header is per file, not per tensor; the
// archive ends with a CRC-32C of the original. The coding of every group is
// ZipNN's.

import (
	"github.com/klauspost/compress/huff0"

	"neuralzip/codec"
	"neuralzip/dtype"
)

const (
	zipnnChunk   = 256 << 10 // bytes of a tensor per chunk
	zipnnChunkF8 = 128 << 10 // ZipNN uses min(128 KiB, chunk) for FP8
	// A coded group is kept when smaller than 0.95 of the group.
	zipnnKeepNum, zipnnKeepDen = 19, 20
)

// Segment modes of a zipnn archive.
const (
	znOpaque byte = iota // bytes of unknown type: coded as BF16
	znBF16
	znF16
	znF32
	znF8
	znModes
)

// znLayout says how a mode splits a chunk.
type znLayout struct {
	width int // bytes per element = number of groups
	chunk int // bytes per chunk
}

var znLayouts = [znModes]znLayout{
	znOpaque: {2, zipnnChunk},
	znBF16:   {2, zipnnChunk},
	znF16:    {2, zipnnChunk},
	znF32:    {4, zipnnChunk},
	znF8:     {1, zipnnChunkF8},
}

// zipnnSpanMode keeps the dtypes ZipNN models; everything else is opaque.
func zipnnSpanMode(dt dtype.DType) dtype.DType {
	switch dt {
	case dtype.BF16, dtype.F16, dtype.F32, dtype.F8E4M3, dtype.F8E5M2:
		return dt
	}
	return dtype.Invalid
}

func zipnnModeOf(dt dtype.DType) byte {
	switch dt {
	case dtype.BF16:
		return znBF16
	case dtype.F16:
		return znF16
	case dtype.F32:
		return znF32
	case dtype.F8E4M3, dtype.F8E5M2:
		return znF8
	}
	return znOpaque
}

type zipnnCodec struct{ threads int }

func newZipNN(opt Options) *zipnnCodec { return &zipnnCodec{threads: opt.threads()} }

func (c *zipnnCodec) Name() string { return "zipnn" }

// znSeg is a segment of the archive: its mode and where it is in the file.
type znSeg struct {
	mode   byte
	off, n int
}

func (s znSeg) chunks() int {
	l := znLayouts[s.mode]
	return (s.n + l.chunk - 1) / l.chunk
}

// chunk returns the byte range of chunk k in the file.
func (s znSeg) chunk(k int) (off, n int) {
	l := znLayouts[s.mode]
	off = k * l.chunk
	return s.off + off, min(l.chunk, s.n-off)
}

// znJob is one chunk: which segment, which chunk, and (when decoding) where
// its group payloads start in the data area and how they are coded.
type znJob struct {
	seg, chunk int
	dataOff    int
	types      [4]byte
	lens       [4]int32
}

// znWork is per-goroutine scratch space.
type znWork struct {
	huff   huff0.Scratch
	groups [4][]byte
}

func (w *znWork) groupBufs(width, chunk int) [][]byte {
	g := w.groups[:width]
	for i := range g {
		if cap(g[i]) < chunk/width+1 {
			g[i] = make([]byte, chunk/width+1)
		}
	}
	return g
}

func (c *zipnnCodec) Compress(src []byte, segs []codec.Segment) ([]byte, error) {
	sp, err := spans(len(src), segs, zipnnSpanMode)
	if err != nil {
		return nil, err
	}
	zs := make([]znSeg, len(sp))
	var jobs []znJob
	for i, s := range sp {
		zs[i] = znSeg{mode: zipnnModeOf(s.dt), off: s.off, n: s.n}
		for k := range zs[i].chunks() {
			jobs = append(jobs, znJob{seg: i, chunk: k})
		}
	}

	// Code every chunk; each job keeps its group payloads back to back.
	out := make([][]byte, len(jobs))
	work := make([]znWork, min(c.threads, max(len(jobs), 1)))
	_ = forEach(c.threads, len(jobs), func(w, i int) error {
		j := &jobs[i]
		s := zs[j.seg]
		l := znLayouts[s.mode]
		off, n := s.chunk(j.chunk)
		groups := work[w].groupBufs(l.width, l.chunk)
		groups = zipnnSplit(s.mode, src[off:off+n], groups)
		buf := make([]byte, 0, n) // a kept payload is never longer than its group
		for g, grp := range groups {
			typ, p := huffFresh(&work[w].huff, grp, zipnnKeepNum, zipnnKeepDen)
			j.types[g] = typ
			j.lens[g] = int32(len(p))
			buf = append(buf, p...)
		}
		out[i] = buf
		return nil
	})

	// Header, segment table, chunk tables, data, checksum.
	size := 64 + 12*len(zs) + 4
	for i := range jobs {
		size += 4*len(jobs[i].types) + len(out[i])
	}
	dst := appendHeader(make([]byte, 0, size), magicZipNN, len(src))
	dst = appendUvarint(dst, len(zs))
	for _, s := range zs {
		dst = append(dst, s.mode)
		dst = appendUvarint(dst, s.n)
	}
	for i := range jobs {
		j := &jobs[i]
		for g := range znLayouts[zs[j.seg].mode].width {
			dst = append(dst, j.types[g])
			if j.types[g] == blockHuff {
				dst = appendUvarint(dst, int(j.lens[g]))
			}
		}
	}
	for _, b := range out {
		dst = append(dst, b...)
	}
	return appendUint32(dst, checksum(src)), nil
}

func (c *zipnnCodec) Decompress(comp []byte) ([]byte, error) {
	r := &reader{codec: "zipnn", b: comp}
	// segment table entries take at least two bytes
	origLen, sum, nseg, err := r.begin(magicZipNN, 2)
	if err != nil {
		return nil, err
	}
	zs := make([]znSeg, nseg)
	pos := 0
	for i := range zs {
		mode, err := r.byte()
		if err != nil {
			return nil, err
		}
		if mode >= znModes {
			r.off--
			return nil, r.corrupt("segment %d has unknown mode %d", i, mode)
		}
		n, err := r.length(origLen-pos, "segment length")
		if err != nil {
			return nil, err
		}
		zs[i] = znSeg{mode: mode, off: pos, n: n}
		pos += n
	}
	if pos != origLen {
		return nil, r.corrupt("segments cover %d bytes, archive says %d", pos, origLen)
	}

	// Chunk tables: at least one byte per group, so a segment length the
	// archive cannot back fails here, before any large allocation.
	var jobs []znJob
	data := 0
	for i, s := range zs {
		l := znLayouts[s.mode]
		for k := range s.chunks() {
			if r.remaining() < l.width {
				return nil, r.corrupt("chunk table of segment %d ends early", i)
			}
			j := znJob{seg: i, chunk: k, dataOff: data}
			_, n := s.chunk(k)
			for g := range l.width {
				gn := n / l.width
				if g < n%l.width {
					gn++
				}
				typ, _ := r.byte()
				hl := 0
				switch typ {
				case blockRaw, blockRLE:
				case blockHuff:
					// huff0 needs 12 bytes and a kept group is smaller than the group.
					if gn < 12 {
						r.off--
						return nil, r.corrupt("huffman-coded group of %d bytes", gn)
					}
					if hl, err = r.length(gn-1, "huffman group length"); err != nil {
						return nil, err
					}
				default:
					r.off--
					return nil, r.corrupt("unknown group type %d", typ)
				}
				if typ == blockRLE && gn == 0 {
					return nil, r.corrupt("RLE group of no bytes")
				}
				j.types[g] = typ
				j.lens[g] = int32(payloadLen(typ, gn, hl))
				data += int(j.lens[g])
				if data > r.remaining() {
					return nil, r.corrupt("chunk tables need %d data bytes, %d left", data, r.remaining())
				}
			}
			jobs = append(jobs, j)
		}
	}
	if data != r.remaining() {
		return nil, r.corrupt("%d data bytes, chunk tables account for %d", r.remaining(), data)
	}
	area := r.b[r.off:]

	dst := make([]byte, origLen)
	work := make([]znWork, min(c.threads, max(len(jobs), 1)))
	err = forEach(c.threads, len(jobs), func(w, i int) error {
		j := &jobs[i]
		s := zs[j.seg]
		l := znLayouts[s.mode]
		off, n := s.chunk(j.chunk)
		groups := work[w].groupBufs(l.width, l.chunk)
		p := j.dataOff
		for g := range l.width {
			gn := n / l.width
			if g < n%l.width {
				gn++
			}
			groups[g] = groups[g][:gn]
			if err := decodeBlock(j.types[g], area[p:p+int(j.lens[g])], groups[g], nil, &work[w].huff); err != nil {
				return &CorruptError{Codec: "zipnn", Offset: int64(r.off + p), Reason: err.Error()}
			}
			p += int(j.lens[g])
		}
		zipnnMerge(s.mode, groups, dst[off:off+n])
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

// zipnnSplit applies ZipNN's bit reordering and byte grouping to one chunk.
// Element i's byte k goes to groups[k][i]; the trailing len(c)%width bytes of
// a chunk that is not a whole number of elements go to the ends of the first
// groups, one each, as ZipNN does.
func zipnnSplit(mode byte, c []byte, groups [][]byte) [][]byte {
	width := len(groups)
	n := len(c) / width
	for k := range groups {
		gn := n
		if k < len(c)%width {
			gn++
		}
		groups[k] = groups[k][:gn]
		if gn > n {
			groups[k][n] = c[n*width+k]
		}
	}
	switch mode {
	case znOpaque, znBF16:
		splitBF16(c, groups[1][:n], groups[0][:n]) // exponent, sign+mantissa
	case znF16:
		g0, g1 := groups[0][:n], groups[1][:n]
		for i := range g0 {
			g0[i], g1[i] = c[2*i], c[2*i+1]
		}
	case znF32:
		g0, g1, g2, g3 := groups[0][:n], groups[1][:n], groups[2][:n], groups[3][:n]
		for i := range g0 {
			b := c[4*i : 4*i+4 : 4*i+4]
			g0[i], g1[i] = b[0], b[1]
			g2[i] = b[3]&0x80 | b[2]&0x7f
			g3[i] = b[3]<<1 | b[2]>>7
		}
	case znF8:
		copy(groups[0], c)
	}
	return groups
}

// zipnnMerge inverts zipnnSplit into c.
func zipnnMerge(mode byte, groups [][]byte, c []byte) {
	width := len(groups)
	n := len(c) / width
	for k := range len(c) % width {
		c[n*width+k] = groups[k][n]
	}
	switch mode {
	case znOpaque, znBF16:
		joinBF16(c, groups[1][:n], groups[0][:n])
	case znF16:
		g0, g1 := groups[0][:n], groups[1][:n]
		for i := range g0 {
			c[2*i], c[2*i+1] = g0[i], g1[i]
		}
	case znF32:
		g0, g1, g2, g3 := groups[0][:n], groups[1][:n], groups[2][:n], groups[3][:n]
		for i := range g0 {
			b := c[4*i : 4*i+4 : 4*i+4]
			b[0], b[1] = g0[i], g1[i]
			b[2] = g3[i]<<7 | g2[i]&0x7f
			b[3] = g2[i]&0x80 | g3[i]>>1
		}
	case znF8:
		copy(c, groups[0])
	}
}
