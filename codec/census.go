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
	// than the float coder (repeats: periodic kernels, tiled rows), by
	// tensor in ZstdTensors (a block of several small tensors counts for
	// the first).
	ZstdFloat      int
	ZstdFloatBytes int64 // their original bytes
	ZstdTensors    map[string]int
	// FoundFloat counts the blocks of opaque bytes (no tensor of the
	// file's layout) that were coded as floats because they coded smaller
	// (unknown files, bare weight blobs), FoundBytes their original bytes
	// and FoundTypes the float types found.
	FoundFloat int
	FoundBytes int64
	FoundTypes []dtype.DType
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
			if b.kind == kindZstd && ti < len(f.Tensors) {
				if t := f.Tensors[ti]; t.Offset <= b.origOff && t.Length > 0 && floatType(t.DType) != dtype.Invalid {
					c.ZstdFloat++
					c.ZstdFloatBytes += b.origLen
					if c.ZstdTensors == nil {
						c.ZstdTensors = map[string]int{}
					}
					c.ZstdTensors[t.Name]++
				}
			}
			c.Blocks++
			if b.kind == kindRef {
				c.Reference++
			}
			if b.kind == kindDup {
				c.Duplicate++
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
