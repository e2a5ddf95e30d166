package codec

import (
	"neuralzip/codec/prog"
	"neuralzip/dtype"
)

// Records blocks (kind records, format version 11; doc.go, "Records
// blocks"): the quantised tensors of GGUF files are runs of ggml's block
// records (Q4_K: two f16 scales, twelve bytes of 6-bit sub-block scales,
// 128 bytes of nibbles), which zstd sees as near-random bytes and which
// cm blocks model only at ~15 MB/s. Package prog splits each record into
// its fields and codes every field as a stream with its own Huffman
// table: within 2 % of the fields' order-0 entropy, at the speed of the
// float coder's streams. This file is the hook: planning (planRecords),
// the encoder's choice (encodeRecords) and the decoder (decodeRecords).

// recordsVersion is the format version of archives that may hold records
// blocks: the writer writes it where the plan has records blocks.
const recordsVersion = 11

// byteRecordsVersion is the format version of archives holding records
// blocks of byteRecords: readers of version 11 know records blocks but not
// this layout, and refuse the archive by its version.
const byteRecordsVersion = 12

// byteRecordsMinBytes is the smallest 8-bit integer tensor coded as
// records: on the TF.js uint8 models of docs/programs.md a threshold of
// 4 KiB gave both the smallest archives (256 bytes: handtrack 0.2 %
// larger than zstd alone; 64 KiB: 1.7 % smaller than 4 KiB on rvm).
const byteRecordsMinBytes = 4096

// byteRecords is the layout of 8-bit integer tensors (recordSchema).
var byteRecords = prog.ByName("I8")

// recordsMinBytes is the smallest tensor coded as records: below it the
// tables of its streams outweigh what they save, and the tensor stays in
// the opaque run around it.
const recordsMinBytes = 256

// recordSchema returns the record layout of a tensor segment whose Type
// is one of ggml's block types (GGUF's quantised tensors; package prog
// knows their names), or nil when the tensor is not coded as records: no
// layout, no whole number of records (a truncated last record falls
// back to the opaque path), or too small. Any bytes round-trip through
// a layout, so a name another format happened to use costs ratio at
// worst, never correctness.
//
// Tensors of 8-bit integer types (TF.js uint8 weights, ONNX and TFLite
// int8, GGUF's I8) of at least byteRecordsMinBytes are records of one
// byte (ggml's I8 layout): one stream with its own table, which on
// quantised weights is the order-0 code they need, against zstd's
// (encodeRecords tries both); smaller ones stay in the opaque run, whose
// zstd block sees them together (format version 12).
func recordSchema(g Segment) *prog.Schema {
	if g.Name == "" || g.Length < recordsMinBytes {
		return nil
	}
	if g.DType == dtype.I8 || g.DType == dtype.U8 {
		if g.Length < byteRecordsMinBytes {
			return nil
		}
		return byteRecords
	}
	if g.DType != dtype.Invalid {
		return nil
	}
	s := prog.ByName(g.Type)
	if s == nil || g.Length%int64(s.Bytes) != 0 {
		return nil
	}
	return s
}

// planRecords appends the blocks of a records tensor g of schema s:
// equal runs of whole records, at most s.BlockRecords() each. A tensor
// that fits one block joins the block before it when that holds whole
// tensors of the same layout that end where g starts and the two fit one
// block: GGUF files hold many small quantised tensors (a quarter of the
// real-f32 files' records blocks were under 16 KiB), and the tables and
// stream set-up of a block cost bytes and time that sharing saves.
func planRecords(out []blockPlan, g Segment, s *prog.Schema) []blockPlan {
	size := int64(s.Bytes)
	n := g.Length / size
	per := int64(s.BlockRecords())
	if k := len(out) - 1; k >= 0 && n <= per {
		last := &out[k]
		if last.rec == s && last.merged && last.off+last.length == g.Offset && last.length/size+n <= per {
			last.length += g.Length
			return out
		}
	}
	if n <= per {
		return append(out, blockPlan{off: g.Offset, length: g.Length, rec: s, merged: true})
	}
	nb := (n + per - 1) / per
	off := g.Offset
	for c := int64(0); c < nb; c++ {
		cn := n / nb
		if c < n%nb {
			cn++
		}
		out = append(out, blockPlan{off: off, length: cn * size, rec: s, cont: c > 0})
		off += cn * size
	}
	return out
}

// encodeRecords codes the records src (whole records of s) into dst.
// A records block decodes slower than a zstd block of the same bytes
// (costRecordsPs), so the default path keeps it only where it saves
// enough bytes over the opaque path (slowerPays). Running zstd on every
// block would halve compression speed, and the field streams are smaller
// than zstd's order-0 code of the same bytes wherever the fields have
// any skew (on the real files by 0.5-7 %, which pays 10 to 140 times
// over); what zstd can win on is repeats, which its matches take and the
// streams do not. So the opaque path is tried only where the repeat probe
// finds them (lzWorthTrying, as for float blocks), or where the records
// barely shrink (under 1/32: random bytes, tiny tensors), and the cheaper
// by bytes and time kept. Under Best, where the archive may hold cm
// blocks, encodeCM may take the block when it codes it smaller (by bytes
// alone, as everywhere under Best).
func (b *blockEncoder) encodeRecords(dst, src []byte, s *prog.Schema) ([]byte, byte) {
	mark := len(dst)
	dst = b.rec.Append(dst, src, s)
	kind := byte(kindRecords)
	coded := len(dst) - mark
	// 8-bit integer tensors always try it: their bytes hold short
	// repeats the word probe does not see (TF.js uint8 weights: zstd is
	// smaller on a third of handtrack's blocks by up to 0.1 %, and no
	// block may be larger than zstd's), for a third more compression
	// work on such models.
	if dup, k := lzRepeats(src); s == byteRecords || lzWorthTrying(len(src), coded, dup, k) || 32*coded > 31*len(src) {
		var alt byte
		b.recAlt, alt = b.encodeGeneric(b.recAlt[:0], src)
		if o := len(b.recAlt); o <= coded || !b.best && !slowerPays(o-coded, len(src), costRecordsPs) {
			dst, kind = append(dst[:mark], b.recAlt...), alt
		}
	}
	return b.encodeCM(dst, mark, src, kind)
}

// decodeRecords decodes a records block.
func (b *blockDecoder) decodeRecords(dst, src []byte) error {
	if err := b.rec.Decode(dst, src); err != nil {
		return errf("records block: %v", err)
	}
	return nil
}
