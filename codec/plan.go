package codec

import (
	"fmt"
	"sort"

	"neuralzip/codec/prog"
	"neuralzip/dtype"
)

// Chunking limits.
const (
	// DefaultChunkValues is the number of float values per block unless
	// EncodeOptions.ChunkValues says otherwise.
	DefaultChunkValues = 1 << 16
	// MaxChunkValues is the largest chunk: huff0 codes at most this many
	// symbols per block.
	MaxChunkValues = 1<<18 - 1
	// MinChunkValues is the smallest chunk accepted in Options.
	MinChunkValues = 256

	// genericBlockSize bounds zstd/stored blocks. A block of opaque bytes
	// may turn out to hold floats (foundFloat) and be coded as a float
	// block, which holds at most MaxChunkValues values: 512 KiB less 4
	// bytes is 131071 of 4 bytes and 262142 of 2, and keeps later blocks
	// of a run aligned to 4 bytes.
	genericBlockSize = 1<<19 - 4

	// maxBlockLen is the largest original block length a reader accepts.
	maxBlockLen = 1 << 22
)

// blockPlan is one block to encode: a byte range of a file and how to code it.
type blockPlan struct {
	off, length int64
	float       bool
	dtype       dtype.DType  // float pipeline type (C64 is coded as F32)
	merged      bool         // a block of whole small tensors that more may join (float blocks; records blocks: planRecords)
	cont        bool         // continues the tensor of the block before it
	ref         int          // 1 + the reference file to code against, 0 for none (ref.go)
	refOff      int64        // offset of the block's counterpart in that file
	row, col    int64        // the tensor's row length (0: none) and the column of the block's first value (sparse.go)
	tensorRow   int64        // the row length of the one tensor the plan's blocks hold from its start (0: none or several; repeat.go)
	sparseTry   bool         // the tensor's probe found zeros: try a sparse coding (probeBlocks)
	lzTry       bool         // the tensor's probe found repeated words: try zstd too (probeBlocks)
	repeatTry   bool         // the tensor's probe found words matching across rows or mirrored: try a repeat block (repeatProbe)
	parts       int          // > 0: the whole tensor of parts float blocks, coded as one zstd block where that is smaller (mergeLZTensors)
	rec         *prog.Schema // a records block of this layout (records.go), or nil
	force       Program      // not ProgramAuto: the tensor's chosen program (choice.go)
	zlevel      int          // a chosen zstd program's level (0: the archive's; searchprog.go)
}

// floatType returns the type whose float pipeline codes d, or Invalid.
func floatType(d dtype.DType) dtype.DType {
	switch d {
	case dtype.F16, dtype.BF16, dtype.F32, dtype.F64, dtype.F8E4M3, dtype.F8E5M2, dtype.F8E8M0:
		return d
	case dtype.C64:
		return dtype.F32
	}
	return dtype.Invalid
}

// normalizeSegments sorts a copy of segs by offset and checks that they lie
// inside [0,size) without overlapping. Gaps are allowed (they become opaque).
func normalizeSegments(segs []Segment, size int64) ([]Segment, error) {
	s := append([]Segment(nil), segs...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].Offset < s[j].Offset })
	var end int64
	for i, g := range s {
		if g.Offset < 0 || g.Length < 0 || g.Offset > size || g.Length > size-g.Offset {
			return nil, fmt.Errorf("codec: segment %d (%q) [%d,+%d) outside the file of %d bytes", i, g.Name, g.Offset, g.Length, size)
		}
		if g.Offset < end {
			return nil, fmt.Errorf("codec: segment %d (%q) at offset %d overlaps the previous one ending at %d", i, g.Name, g.Offset, end)
		}
		end = g.Offset + g.Length
	}
	return s, nil
}

// planBlocks cuts a file of the given size into blocks. programs, when
// not nil, gives each tensor's chosen program (programOf): a tensor with
// one is planned by planProgram.
func planBlocks(segs []Segment, size int64, chunk int, programs func(Segment) pick) ([]blockPlan, error) {
	segs, err := normalizeSegments(segs, size)
	if err != nil {
		return nil, err
	}
	var out []blockPlan
	var runStart, runEnd int64 // pending generic bytes [runStart, runEnd)
	flush := func() {
		for runStart < runEnd {
			l := min(runEnd-runStart, genericBlockSize)
			out = append(out, blockPlan{off: runStart, length: l})
			runStart += l
		}
	}
	pos := int64(0)
	for _, g := range segs {
		if programs != nil {
			if pr := programs(g); pr.p != ProgramAuto {
				if g.Offset > pos {
					runEnd = g.Offset
				}
				flush()
				out = planProgram(out, g, pr, chunk)
				pos = g.Offset + g.Length
				runStart, runEnd = pos, pos
				continue
			}
		}
		if s := recordSchema(g); s != nil {
			if g.Offset > pos {
				runEnd = g.Offset
			}
			flush()
			out = planRecords(out, g, s)
			pos = g.Offset + g.Length
			runStart, runEnd = pos, pos
			continue
		}
		ft := floatType(g.DType)
		size := int64(ft.Size())
		if ft == dtype.Invalid || g.Length%size != 0 || g.Length == 0 {
			continue // stays in the generic run
		}
		// generic bytes before this tensor
		if g.Offset > pos {
			runEnd = g.Offset
		}
		flush()
		n := g.Length / size
		// A small tensor right after a float block of the same type joins
		// that block while it stays within the chunk size: one table
		// instead of several saves more than the mixed statistics cost.
		if n < int64(mergeValues) && len(out) > 0 && g.Offset == pos {
			last := &out[len(out)-1]
			if last.float && last.dtype == ft && last.off+last.length == g.Offset && last.length/size+n <= int64(chunk) && last.merged {
				last.length += g.Length
				last.tensorRow = 0
				pos = g.Offset + g.Length
				runStart, runEnd = pos, pos
				continue
			}
		}
		nch := (n + int64(chunk) - 1) / int64(chunk)
		off := g.Offset
		for c := int64(0); c < nch; c++ {
			cn := n / nch
			if c < n%nch {
				cn++
			}
			out = append(out, blockPlan{off: off, length: cn * size, float: true, dtype: ft, merged: n < int64(mergeValues), cont: c > 0, tensorRow: sparseRow(g)})
			if row := sparseRow(g); n >= int64(mergeValues) {
				out[len(out)-1].row, out[len(out)-1].col = row, sparseCol((off-g.Offset)/size, row)
			}
			off += cn * size
		}
		pos = g.Offset + g.Length
		runStart, runEnd = pos, pos
	}
	runEnd = size
	flush()
	return out, nil
}

// mergeValues: float tensors with fewer values than this share blocks with
// their small neighbours (see planBlocks).
const mergeValues = 4096

// mergeLZTensors replaces the float blocks of each tensor whose probe
// found repeated words (lzTry), of at most lzWholeMax bytes, by one plan
// for the whole tensor (parts: how many blocks it stands for). Such
// tensors (STFT bases, filterbanks, positional tables) repeat values
// across the whole tensor: zstd of the whole finds what zstd of each
// block cannot (a windowed 512-point DFT basis: 444,687 bytes against
// 710,524 for its five blocks at the same level). The encoder codes the
// blocks as usual and the whole through zstd, and keeps the smaller
// (encodeLZWhole), so the choice is made on equal terms.
func mergeLZTensors(plans []blockPlan) []blockPlan {
	if lzWholeOff {
		return plans
	}
	out := plans[:0]
	for i := 0; i < len(plans); {
		p := plans[i]
		j := i + 1
		for j < len(plans) && plans[j].cont {
			j++
		}
		if !p.float || !p.lzTry || p.cont || p.ref != 0 || p.force != ProgramAuto {
			out = append(out, p)
			i++
			continue
		}
		end := plans[j-1].off + plans[j-1].length
		if end-p.off > lzWholeMax {
			out = append(out, plans[i:j]...)
			i = j
			continue
		}
		p.length, p.parts = end-p.off, j-i
		out = append(out, p)
		i = j
	}
	return out
}

// repeatOff keeps repeat blocks out of archives (tests of the encodings
// written before them: golden-lz-v9.nzip).
var repeatOff = false

// lzWholeOff turns mergeLZTensors off (tests of the per-block codings it
// would replace: zstd-coded planes).
var lzWholeOff = false

// lzWholeMax is the largest tensor coded as one zstd block (the largest
// block a reader accepts).
const lzWholeMax = maxBlockLen

// splitParts is the float blocks of a whole-tensor plan p (parts > 0),
// as planBlocks cut them.
func splitParts(p blockPlan, dst []blockPlan) []blockPlan {
	size := int64(p.dtype.Size())
	n := p.length / size
	nch := int64(p.parts)
	off := p.off
	for c := int64(0); c < nch; c++ {
		cn := n / nch
		if c < n%nch {
			cn++
		}
		q := p
		q.off, q.length, q.parts, q.cont, q.lzTry = off, cn*size, 0, c > 0, false
		if q.row > 0 {
			q.col = sparseCol((off-p.off)/size+p.col, q.row)
		}
		dst = append(dst, q)
		off += cn * size
	}
	return dst
}
