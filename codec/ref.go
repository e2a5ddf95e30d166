package codec

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"

	"neuralzip/dtype"
)

// Reference conditioning (ULPack). An archive may be coded against a
// reference model (the previous checkpoint of a training run, the base model
// of a fine-tune): float blocks whose tensor matches a reference tensor by
// name, dtype and shape are coded as the difference to it where that is
// smaller, and blocks identical to the reference are stored as a copy. The
// archive records each reference file's name, size and SHA-256; decoding
// needs the same files (see Reader.UseRef).

// Reference errors.
var (
	// ErrRefMissing means the archive was coded against a reference that
	// the caller did not supply.
	ErrRefMissing = errors.New("codec: reference missing")
	// ErrRefMismatch means the supplied reference is not the one the
	// archive was coded against.
	ErrRefMismatch = errors.New("codec: wrong reference")
)

// flagRef is the header flag of archives coded against a reference.
const flagRef = 1

// maxRefFiles bounds the reference files an index may list.
const maxRefFiles = 1 << 16

// RefInfo identifies one reference file.
type RefInfo struct {
	Name   string
	Size   int64
	SHA256 [32]byte
}

// Reference is a model (one or more files) that archives are coded against
// and decoded with. It reads its files on demand through their ReaderAt,
// which must stay valid while the Reference is used.
type Reference struct {
	files   []refFile
	tensors map[string]refTensor
}

type refFile struct {
	RefInfo
	r io.ReaderAt
}

type refTensor struct {
	file int
	seg  Segment
}

// NewReference reads and hashes the files of a reference model. Segments
// (the layout) are needed only for encoding: tensors are matched by name,
// dtype and shape. Inputs without segments can still be decoded against
// and used for copies of identical blocks.
func NewReference(inputs []Input) (*Reference, error) {
	sums := make([][32]byte, len(inputs))
	for i, in := range inputs {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(in.R, 0, in.Size)); err != nil {
			return nil, fmt.Errorf("codec: reference %q: %w", in.Name, err)
		}
		copy(sums[i][:], h.Sum(nil))
	}
	return NewReferenceSums(inputs, sums)
}

// NewReferenceSums is NewReference for files whose SHA-256 the caller
// already knows (e.g. files just decoded and checked); it reads nothing.
func NewReferenceSums(inputs []Input, sums [][32]byte) (*Reference, error) {
	if len(sums) != len(inputs) {
		return nil, errors.New("codec: NewReferenceSums: one sum per input")
	}
	if len(inputs) > maxRefFiles {
		return nil, fmt.Errorf("codec: %d reference files exceed %d", len(inputs), maxRefFiles)
	}
	ref := &Reference{tensors: map[string]refTensor{}}
	for i, in := range inputs {
		if in.Size < 0 {
			return nil, fmt.Errorf("codec: reference %q: negative size", in.Name)
		}
		segs, err := normalizeSegments(in.Segments, in.Size)
		if err != nil {
			return nil, fmt.Errorf("codec: reference %q: %w", in.Name, err)
		}
		ref.files = append(ref.files, refFile{RefInfo: RefInfo{Name: in.Name, Size: in.Size, SHA256: sums[i]}, r: in.R})
		for _, s := range segs {
			if s.IsTensor() {
				if _, dup := ref.tensors[s.Name]; !dup {
					ref.tensors[s.Name] = refTensor{file: i, seg: s}
				}
			}
		}
	}
	return ref, nil
}

// Files describes the reference's files.
func (ref *Reference) Files() []RefInfo {
	out := make([]RefInfo, len(ref.files))
	for i, f := range ref.files {
		out[i] = f.RefInfo
	}
	return out
}

// refCodable reports whether blocks of float type d can be coded as a
// difference (the fields types; F64 blocks can only be copies).
func refCodable(d dtype.DType) bool {
	_, ok := specFor(d)
	return ok
}

// fileFor returns the reference file that input i (named name, one of n
// inputs) is compared with for copies of non-tensor bytes: the one of the
// same name, or the only one when both sides have a single file; -1 if none.
func (ref *Reference) fileFor(name string, n int) int {
	for k, f := range ref.files {
		if f.Name == name {
			return k
		}
	}
	if n == 1 && len(ref.files) == 1 {
		return 0
	}
	return -1
}

// mapPlans sets the reference range of every block of one input that has
// one: float blocks whose tensors all match reference tensors (name, dtype,
// shape, length) lying at one common distance in one reference file, and
// non-float blocks at the same offset of the matching reference file.
func (ref *Reference) mapPlans(plans []blockPlan, segs []Segment, size int64, name string, nInputs int) error {
	segs, err := normalizeSegments(segs, size)
	if err != nil {
		return err
	}
	same := ref.fileFor(name, nInputs)
	si := 0
	for pi := range plans {
		p := &plans[pi]
		end := p.off + p.length
		if !p.float {
			if same >= 0 && end <= ref.files[same].Size {
				p.ref, p.refOff = same+1, p.off
			}
			continue
		}
		for si < len(segs) && segs[si].Offset+segs[si].Length <= p.off {
			si++
		}
		file, delta, covered, ok := -1, int64(0), int64(0), true
		for k := si; ok && k < len(segs) && segs[k].Offset < end; k++ {
			s := segs[k]
			t, found := ref.tensors[s.Name]
			if !s.IsTensor() || !found || t.seg.DType != s.DType || t.seg.Length != s.Length || !slices.Equal(t.seg.Shape, s.Shape) {
				ok = false
				break
			}
			d := t.seg.Offset - s.Offset
			if file < 0 {
				file, delta = t.file, d
			} else if file != t.file || delta != d {
				ok = false
				break
			}
			covered += min(end, s.Offset+s.Length) - max(p.off, s.Offset)
		}
		if ok && file >= 0 && covered == p.length {
			p.ref, p.refOff = file+1, p.off+delta
		}
	}
	return nil
}

// RefFiles lists the reference files the archive was coded against (none
// for an archive without a reference).
func (r *Reader) RefFiles() []RefInfo { return slices.Clone(r.idx.refs) }

// UsesRef reports whether any block of the archive needs the reference.
func (r *Reader) UsesRef() bool { return r.usesRef }

// usesRef reports whether a block is coded against a reference (computed
// once per archive: needRef runs for every block read).
func (x *indexData) usesRef() bool {
	for _, f := range x.files {
		for _, b := range f.blocks {
			if b.kind == kindRef {
				return true
			}
		}
	}
	return false
}

// UseRef supplies the reference an archive was coded against. Each
// reference file the archive lists is found in ref by its SHA-256 and size
// (names may differ). It is an error if one is missing; nothing is decoded.
func (r *Reader) UseRef(ref *Reference) error {
	if ref == nil || len(r.idx.refs) == 0 {
		return nil
	}
	bind := make([]io.ReaderAt, len(r.idx.refs))
	for j, want := range r.idx.refs {
		for _, f := range ref.files {
			if f.SHA256 == want.SHA256 && f.Size == want.Size {
				bind[j] = f.r
				break
			}
		}
		if bind[j] == nil {
			var have []string
			for _, f := range ref.files {
				have = append(have, fmt.Sprintf("%q (%d bytes, SHA-256 %x)", f.Name, f.Size, f.SHA256))
			}
			return fmt.Errorf("%w: the archive was coded against %q (%d bytes, SHA-256 %x), but the reference given is %s",
				ErrRefMismatch, want.Name, want.Size, want.SHA256, joinList(have))
		}
	}
	r.refR = bind
	return nil
}

func joinList(s []string) string {
	if len(s) == 0 {
		return "empty"
	}
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x)
	}
	return b.String()
}

// needRef reports a missing reference before anything is decoded.
func (r *Reader) needRef() error {
	if len(r.idx.refs) == 0 || r.refR != nil || !r.UsesRef() {
		return nil
	}
	w := r.idx.refs[0]
	return fmt.Errorf("%w: the archive was coded against %q (%d bytes, SHA-256 %x); pass it with -ref / Reader.UseRef",
		ErrRefMissing, w.Name, w.Size, w.SHA256)
}

// readRef returns the reference bytes of block b: a slice of an in-memory
// reference (Bytes), or else read into a buffer from the pool (pooled, for
// putBuf).
func (r *Reader) readRef(b blockInfo) (rb []byte, pooled *[]byte, err error) {
	if s, ok := inPlace(r.refR[b.ref], b.refOff, b.origLen); ok {
		return s, nil, nil
	}
	buf := getBuf(int(b.origLen))
	if err := readFull(r.refR[b.ref], *buf, b.refOff); err != nil {
		putBuf(buf)
		return nil, nil, fmt.Errorf("codec: reference %q: %w", r.idx.refs[b.ref].Name, err)
	}
	return *buf, buf, nil
}

// encodeWithRef codes block p (original bytes in) of a file mapped to the
// reference: a copy when the reference bytes are equal, otherwise the
// smaller of the independent coding and the difference to the reference.
func (b *blockEncoder) encodeWithRef(out, in []byte, ref *Reference, p blockPlan) ([]byte, blockInfo, error) {
	info := blockInfo{origLen: p.length, crc: crc32c(in)}
	rb := new([]byte)
	if s, ok := inPlace(ref.files[p.ref-1].r, p.refOff, int64(len(in))); ok {
		*rb = s
	} else {
		rb = getBuf(len(in))
		defer putBuf(rb)
		if err := readFull(ref.files[p.ref-1].r, *rb, p.refOff); err != nil {
			return out, info, fmt.Errorf("codec: reference %q: %w", ref.files[p.ref-1].Name, err)
		}
	}
	if bytes.Equal(in, *rb) {
		info.kind, info.ref, info.refOff = kindRef, p.ref-1, p.refOff
		if p.float {
			info.dtype = p.dtype
		}
		return out, info, nil
	}
	mark := len(out)
	if !p.float {
		var kind byte
		if p.rec != nil {
			out, kind = b.encodeRecords(out, in, p.rec)
		} else {
			out, kind = b.encodeGeneric(out, in)
		}
		info.kind, info.compLen = kind, int64(len(out)-mark)
		return out, info, nil
	}
	out = b.encodeFloat(out, in, p.dtype)
	info.kind, info.dtype = kindFloat, p.dtype
	if len(out)-mark >= len(in)+1 {
		out = append(out[:mark], in...)
		info.kind, info.dtype = kindStored, 0
	}
	indep := len(out) - mark
	if refCodable(p.dtype) {
		var ok bool
		out, ok = b.encodeRefFloat(out, in, *rb, p.dtype)
		if c := len(out) - mark - indep; ok && c < indep {
			copy(out[mark:], out[mark+indep:])
			out = out[:mark+c]
			info.kind, info.dtype, info.ref, info.refOff = kindRef, p.dtype, p.ref-1, p.refOff
		} else {
			out = out[:mark+indep]
		}
	}
	info.compLen = int64(len(out) - mark)
	return out, info, nil
}
