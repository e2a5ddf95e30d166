package codec

import (
	"fmt"
	"strings"

	"neuralzip/codec/bytecm"
	"neuralzip/dtype"
)

// Chosen programs (issue 48, "Seeing and choosing programs"): the encoder
// picks each block's coding itself — the float coder's fields, sparse,
// byte planes, zstd, records, cm — by bytes and time. A Program tells it
// to code a tensor's blocks one way instead: EncodeOptions.Programs and a
// setup's Programs name tensors and the program each takes. Every choice
// is a coding the encoder already writes (no format change): the
// archive's version follows what the chosen programs need. The workbench
// encodes a tensor with each program that applies to it (ProgramsFor),
// shows what each costs and saves the choice into a setup.

// A Program is a coding the encoder can be told to use for all blocks of
// a tensor.
type Program uint8

// The programs. ProgramAuto is the encoder's own choice, block by block.
const (
	ProgramAuto       Program = iota // the encoder's choice (the default)
	ProgramFields                    // float → fields: exponent symbols (a setup's shared tables where it has the dtype) and sign/mantissa planes, each Huffman, packed or constant
	ProgramFieldsOwn                 // the fields with tables of the block's own, never a setup's
	ProgramSparse                    // a zero mask and the nonzero values through the fields (format version 8)
	ProgramPlanes                    // one stream per byte of the value, each Huffman, packed or constant
	ProgramZstdPlanes                // byte planes, each the smaller of that and a zstd frame (format version 9)
	ProgramZstd                      // the tensor's bytes through zstd at the archive's level (one block up to 4 MiB)
	ProgramRaw                       // the bytes stored as they are
	ProgramCM                        // context-modelled bytes, bit by bit (format version 10)
	ProgramRecords                   // records → fields: ggml's quantised blocks, one stream per field (format version 11)
	numPrograms
)

var programNames = [numPrograms]string{"auto", "fields", "fields-own", "sparse", "planes", "zstd-planes", "zstd", "raw", "cm", "records"}

// String is the program's name, as setup show, nzip and the workbench
// write it.
func (p Program) String() string {
	if p < numPrograms {
		return programNames[p]
	}
	return fmt.Sprintf("program(%d)", uint8(p))
}

// Describe is a line saying what the program does.
func (p Program) Describe() string {
	switch p {
	case ProgramAuto:
		return "the encoder's choice, block by block"
	case ProgramFields:
		return "exponents and sign/mantissa planes, the setup's tables where it has them"
	case ProgramFieldsOwn:
		return "exponents and sign/mantissa planes, tables of the block's own"
	case ProgramSparse:
		return "zero mask and the nonzero values' fields"
	case ProgramPlanes:
		return "one entropy-coded stream per byte of the value"
	case ProgramZstdPlanes:
		return "byte planes, each zstd where that is smaller"
	case ProgramZstd:
		return "zstd of the bytes"
	case ProgramRaw:
		return "the bytes as they are"
	case ProgramCM:
		return "context-modelled bytes (slow)"
	case ProgramRecords:
		return "quantised records split into field streams"
	}
	return ""
}

// ParseProgram returns the program of a name String gives.
func ParseProgram(s string) (Program, error) {
	for i, n := range programNames {
		if strings.EqualFold(s, n) {
			return Program(i), nil
		}
	}
	return 0, fmt.Errorf("codec: unknown program %q (one of %s)", s, strings.Join(programNames[:], ", "))
}

// version is the format version a block of the program needs (0: any).
func (p Program) version() int {
	switch p {
	case ProgramSparse:
		return sparseVersion
	case ProgramZstdPlanes:
		return lzPlanesVersion
	case ProgramCM:
		return cmVersion
	case ProgramRecords:
		return recordsVersion
	}
	return 0
}

// Applies reports whether the encoder can code tensor g with program p:
// the float programs need a float dtype (fields and sparse one the fields
// split knows, sparse at most 4 bytes a value, zstd planes more than one
// byte; fields-own a setup with a section for the dtype, else it is
// fields), records a ggml block layout, and zstd, raw and cm any tensor.
// A program that does not apply is ignored (the tensor is coded as
// ProgramAuto codes it): setups name tensors of models they never saw.
func (p Program) Applies(g Segment, setup *Setup) bool {
	if !g.IsTensor() || g.Length <= 0 {
		return false
	}
	ft := floatType(g.DType)
	floats := ft != dtype.Invalid && g.Length%int64(ft.Size()) == 0
	_, fields := specFor(ft)
	switch p {
	case ProgramAuto, ProgramZstd, ProgramRaw, ProgramCM:
		return true
	case ProgramFields:
		return floats && fields
	case ProgramFieldsOwn:
		return floats && fields && setup.Section(ft) != nil
	case ProgramSparse:
		return floats && sparseType(ft)
	case ProgramPlanes:
		return floats
	case ProgramZstdPlanes:
		return floats && ft.Size() > 1
	case ProgramRecords:
		return recordSchema(g) != nil
	}
	return false
}

// ProgramsFor lists the programs that apply to tensor g under setup
// (which may be nil), ProgramAuto first.
func ProgramsFor(g Segment, setup *Setup) []Program {
	var out []Program
	for p := ProgramAuto; p < numPrograms; p++ {
		if p.Applies(g, setup) {
			out = append(out, p)
		}
	}
	return out
}

// A pick is a tensor's program with its parameter: the zstd level of
// ProgramZstd (0: the archive's level); the search (searchprog.go)
// chooses both.
type pick struct {
	p     Program
	level int
}

// programOf returns the program chosen for tensor g: EncodeOptions'
// Programs first, then the setup's; ProgramAuto where none is, or where
// the one chosen does not apply.
func programOf(g Segment, opt *EncodeOptions) Program {
	if !g.IsTensor() {
		return ProgramAuto
	}
	p, ok := opt.Programs[g.Name]
	if !ok && opt.Setup != nil {
		p = opt.Setup.ProgramFor(g.Name)
	}
	if !p.Applies(g, opt.Setup) {
		return ProgramAuto
	}
	return p
}

// planProgram appends the blocks of tensor g, coded with program p (not
// ProgramAuto): the float programs cut it as planBlocks cuts a float
// tensor, records as planRecords, zstd takes the whole tensor in one
// block up to the longest a reader accepts, raw and cm blocks of the
// opaque path's size. No other tensor joins these blocks.
func planProgram(out []blockPlan, g Segment, pk pick, chunk int) []blockPlan {
	p := pk.p
	switch p {
	case ProgramRecords:
		s := recordSchema(g)
		size := int64(s.Bytes)
		n, per := g.Length/size, int64(s.BlockRecords())
		nb := (n + per - 1) / per
		off := g.Offset
		for c := int64(0); c < nb; c++ {
			cn := n / nb
			if c < n%nb {
				cn++
			}
			out = append(out, blockPlan{off: off, length: cn * size, rec: s, cont: c > 0, force: p})
			off += cn * size
		}
		return out
	case ProgramZstd, ProgramRaw, ProgramCM:
		most := int64(genericBlockSize)
		if p == ProgramZstd && g.Length <= lzWholeMax {
			most = g.Length
		}
		for off, c := g.Offset, 0; off < g.Offset+g.Length; c++ {
			l := min(g.Offset+g.Length-off, most)
			out = append(out, blockPlan{off: off, length: l, cont: c > 0, force: p, zlevel: pk.level})
			off += l
		}
		return out
	}
	ft := floatType(g.DType)
	size := int64(ft.Size())
	n := g.Length / size
	nch := (n + int64(chunk) - 1) / int64(chunk)
	row := sparseRow(g)
	off := g.Offset
	for c := int64(0); c < nch; c++ {
		cn := n / nch
		if c < n%nch {
			cn++
		}
		out = append(out, blockPlan{off: off, length: cn * size, float: true, dtype: ft, cont: c > 0, force: p,
			row: row, col: sparseCol((off-g.Offset)/size, row)})
		off += cn * size
	}
	return out
}

// encodeProgram appends block in coded with its plan's program (p.force)
// and returns the block's kind.
func (b *blockEncoder) encodeProgram(dst, in []byte, p blockPlan) ([]byte, byte) {
	switch p.force {
	case ProgramFields:
		return b.encodeFloat(dst, in, p.dtype), kindFloat
	case ProgramFieldsOwn:
		s := b.setup
		b.setup = nil
		dst = b.encodeFloat(dst, in, p.dtype)
		b.setup = s
		return dst, kindFloat
	case ProgramSparse:
		return b.encodeSparse(dst, in, p.dtype, int(p.row), int(p.col)), kindFloat
	case ProgramPlanes:
		return b.encodePlanes(dst, in, p.dtype.Size()), kindFloat
	case ProgramZstdPlanes:
		return b.encodeLZPlanes(dst, in, p.dtype.Size()), kindFloat
	case ProgramZstd:
		if p.zlevel != 0 {
			if z, err := zstdEncoder(p.zlevel); err == nil {
				return z.EncodeAll(in, dst), kindZstd
			}
		}
		return b.zstd.EncodeAll(in, dst), kindZstd
	case ProgramRaw:
		return append(dst, in...), kindStored
	case ProgramCM:
		return bytecm.Encode(dst, in), kindCM
	case ProgramRecords:
		return b.rec.Append(dst, in, p.rec), kindRecords
	}
	panic(fmt.Sprintf("codec: encodeProgram of %v", p.force))
}
