package codec

import (
	"slices"

	"neuralzip/dtype"
)

// Census counts how an archive's blocks are coded, from the first bytes of
// each block (nothing is decoded, so it is cheap and needs no setup).
type Census struct {
	Blocks       int // all blocks of all files
	FloatBlocks  int // blocks coded as floats (fields or byte planes)
	SharedTables int // float blocks whose exponents use a setup's shared table
	OwnTables    int // float blocks whose exponents use their own Huffman table
	OtherFloat   int // float blocks with packed or constant exponents, or byte planes
	Sparse       int // float blocks coded sparse: a zero mask and the nonzero values (format version 8)
	SparseBytes  int64
	Reference    int // blocks coded against a reference (copies and differences)
	Duplicate    int // blocks stored as a copy of an earlier block of the archive
	// ZstdFloat counts the blocks of float tensors that zstd coded smaller
	// than the float coder (repeats: periodic kernels, tiled rows), whole
	// or, ZstdPlanes of them, as byte planes (format version 9), by tensor
	// in ZstdTensors (a block of several small tensors counts for the
	// first).
	ZstdFloat      int
	ZstdPlanes     int
	ZstdFloatBytes int64 // their original bytes
	ZstdTensors    map[string]int
	// FoundFloat counts the blocks of opaque bytes (no tensor of the
	// file's layout) that were coded as floats because they coded smaller
	// (unknown files, bare weight blobs), FoundBytes their original bytes
	// and FoundTypes the float types found.
	FoundFloat int
	FoundBytes int64
	FoundTypes []dtype.DType
	// CM counts the blocks of opaque bytes coded bit by bit with adaptive
	// models (kind cm, format version 10: quantised weights, packed
	// integers), CMBytes their original bytes.
	CM      int
	CMBytes int64
	// Records counts the blocks of quantised records coded as field
	// streams (ggml blocks of GGUF files; package prog), RecordsBytes
	// their original bytes.
	Records      int
	RecordsBytes int64
	// Repeat counts the blocks of float tensors coded as matches between
	// their rows (repeat blocks, package prog), RepeatBytes their
	// original bytes, RepeatTensors them by tensor.
	Repeat        int
	RepeatBytes   int64
	RepeatTensors map[string]int
}

// Census reads the coding of every block; see the type.
func (r *Reader) Census() (Census, error) {
	var c Census
	var hdr [4]byte
	for _, f := range r.idx.files {
		ti := 0 // the first tensor that ends after the block's start
		for _, b := range f.blocks {
			for ti < len(f.Tensors) && f.Tensors[ti].Offset+f.Tensors[ti].Length <= b.origOff {
				ti++
			}
			inTensor := ti < len(f.Tensors) && f.Tensors[ti].Offset <= b.origOff
			if b.kind == kindFloat && !inTensor {
				c.FoundFloat++
				c.FoundBytes += b.origLen
				if !slices.Contains(c.FoundTypes, b.dtype) {
					c.FoundTypes = append(c.FoundTypes, b.dtype)
				}
			}
			zstdFloat := func() {
				if ti < len(f.Tensors) {
					if t := f.Tensors[ti]; t.Offset <= b.origOff && t.Length > 0 && floatType(t.DType) != dtype.Invalid {
						c.ZstdFloat++
						c.ZstdFloatBytes += b.origLen
						if c.ZstdTensors == nil {
							c.ZstdTensors = map[string]int{}
						}
						c.ZstdTensors[t.Name]++
					}
				}
			}
			if b.kind == kindZstd {
				zstdFloat()
			}
			c.Blocks++
			if b.kind == kindRef {
				c.Reference++
			}
			if b.kind == kindDup {
				c.Duplicate++
			}
			if b.kind == kindCM {
				c.CM++
				c.CMBytes += b.origLen
			}
			if b.kind == kindRecords {
				c.Records++
				c.RecordsBytes += b.origLen
			}
			if b.kind == kindRepeat {
				c.Repeat++
				c.RepeatBytes += b.origLen
				if ti < len(f.Tensors) && f.Tensors[ti].Offset <= b.origOff {
					if c.RepeatTensors == nil {
						c.RepeatTensors = map[string]int{}
					}
					c.RepeatTensors[f.Tensors[ti].Name]++
				}
			}
			if b.kind != kindFloat {
				continue
			}
			c.FloatBlocks++
			n := min(int(b.compLen), len(hdr))
			if err := readFullAt(r.r, hdr[:n], b.compOff, r.base); err != nil {
				return c, err
			}
			// the mode of the first stream: the exponents' of a fields-form block
			h, err := ReadFloatHeader(hdr[:n], b.dtype)
			if err == nil && h.Form == FormSparse {
				c.Sparse++
				c.SparseBytes += b.origLen
				continue
			}
			if err == nil && h.Form == FormPlanes && r.idx.version >= lzPlanesVersion {
				// zstd streams may be any plane's: the block is read whole
				// (planes-form blocks are rare: FP64, and these)
				z, err := r.zstdPlanes(b, h)
				if err != nil {
					return c, err
				}
				if z {
					c.ZstdPlanes++
					zstdFloat()
				}
			}
			if err != nil || h.Form != FormFields || n <= h.Len {
				c.OtherFloat++
				continue
			}
			switch StreamMode(hdr[h.Len]) {
			case StreamShared1, StreamShared4:
				c.SharedTables++
			case StreamHuff1, StreamHuff4, StreamPair1, StreamPair4:
				c.OwnTables++
			default:
				c.OtherFloat++
			}
		}
	}
	return c, nil
}

// zstdPlanes reports whether a planes-form block (header h) codes one of
// its planes as a zstd stream.
func (r *Reader) zstdPlanes(b blockInfo, h FloatHeader) (bool, error) {
	p := make([]byte, b.compLen)
	if err := readFullAt(r.r, p, b.compOff, r.base); err != nil {
		return false, err
	}
	pos, n := h.Len, int(b.origLen)/max(h.Size, 1)
	for i := 0; i < h.Streams(); i++ {
		s, err := ReadStream(p, pos, n, h.Width(i), false)
		if err != nil {
			return false, nil // the decoder reports it
		}
		if s.Mode == StreamZstd {
			return true, nil
		}
		pos = s.End
	}
	return false, nil
}
