package trajectory

import (
	"crypto/sha256"
	"fmt"
	"io"

	"neuralzip/codec"
)

// File is what writing needs of a trajectory file; *os.File has it.
type File interface {
	io.ReaderAt
	io.WriterAt
	Truncate(size int64) error
	Sync() error
}

// DefaultK is the default keyframe interval.
const DefaultK = 10

// Writer appends frames to a trajectory. Each append writes the frame, makes
// it durable, then writes the new index and trailer after it: an append cut
// short at any point leaves the archive as it was before (the next Open
// finds the previous trailer, the next append cuts off the remains).
type Writer struct {
	f     File
	a     *Archive
	cache map[int]codec.Input // frames whose original bytes the caller still holds
}

// Create writes an empty trajectory (header, empty index, trailer) to f,
// which must be empty, with keyframe interval k and reference mode mode.
func Create(f File, k, mode int) (*Writer, error) {
	if k < 1 {
		return nil, fmt.Errorf("trajectory: keyframe interval %d < 1", k)
	}
	if mode != RefPrevious && mode != RefKeyframe {
		return nil, fmt.Errorf("trajectory: unknown reference mode %d", mode)
	}
	x := Index{K: k, Mode: mode}
	b := appendTrailer(header(), x.Marshal(), headerLen, 0)
	if _, err := f.WriteAt(b, 0); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return &Writer{f: f, a: &Archive{r: f, Index: x, End: int64(len(b))}, cache: map[int]codec.Input{}}, nil
}

// OpenWriter opens a trajectory of the given size for appending.
func OpenWriter(f File, size int64) (*Writer, error) {
	a, err := Open(f, size)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f, a: a, cache: map[int]codec.Input{}}, nil
}

// Archive returns the trajectory as written so far.
func (w *Writer) Archive() *Archive { return w.a }

// RefFor returns the frame that an append codes frame i against (-1: a
// keyframe), given frames 0..i-1: a keyframe when the chain would otherwise
// grow beyond K frames (RefPrevious) or the keyframe lies K or more frames
// back (RefKeyframe); otherwise the previous frame or the keyframe. With
// every frame appended this way, frame i is a keyframe when i mod K = 0.
func (x *Index) RefFor(i int) int {
	if i <= 0 || i > len(x.Frames) {
		return -1
	}
	// frame i-1's keyframe and chain length (refs point backwards: ParseIndex)
	root, n := i-1, 1
	for x.Frames[root].Ref >= 0 {
		root = x.Frames[root].Ref
		n++
	}
	if x.Mode == RefKeyframe {
		if i-root >= x.K {
			return -1
		}
		return root
	}
	if n >= x.K {
		return -1
	}
	return i - 1
}

// Append codes in as the next frame. The reference (when the frame is not a
// keyframe, see RefFor) is an earlier input still held by the writer, or else
// decoded from the archive. in.R must stay readable until the writer is no
// longer used: it may serve as the reference of the next frames. opt.Ref is
// ignored.
func (w *Writer) Append(in codec.Input, opt codec.Options) (Frame, error) {
	return w.append(in, opt, false)
}

// AppendKeyframe is Append, but codes in as a keyframe (see PlanKeyframes).
func (w *Writer) AppendKeyframe(in codec.Input, opt codec.Options) (Frame, error) {
	return w.append(in, opt, true)
}

func (w *Writer) append(in codec.Input, opt codec.Options, key bool) (Frame, error) {
	a := w.a
	i := len(a.Frames)
	fr := Frame{Name: in.Name, Size: in.Size, Ref: a.RefFor(i)}
	if key {
		fr.Ref = -1
	}
	opt.Ref = nil
	if fr.Ref >= 0 {
		ref, err := w.reference(fr.Ref, opt)
		if err != nil {
			return fr, err
		}
		opt.Ref = ref
	}
	return w.commit(fr, in, func(dst io.Writer) (int64, error) {
		res, err := codec.Encode(dst, []codec.Input{in}, opt)
		return res.Compressed, err
	})
}

// commit writes frame fr, whose .nzip archive write writes (returning its
// length), then the new index and trailer; in (fr's original file) is kept
// as a possible reference of later frames.
func (w *Writer) commit(fr Frame, in codec.Input, write func(io.Writer) (int64, error)) (Frame, error) {
	a := w.a
	i := len(a.Frames)
	// cut off the remains of an interrupted append
	if a.Tail > 0 {
		if err := w.f.Truncate(a.End); err != nil {
			return fr, err
		}
		a.Tail = 0
	}
	fr.Offset = a.End
	a.Tail = 1 // until the new trailer is written, whatever follows End is garbage
	n, err := write(io.NewOffsetWriter(w.f, fr.Offset))
	if err != nil {
		return fr, err
	}
	fr.Length = n
	rd, err := codec.NewReader(io.NewSectionReader(w.f, fr.Offset, fr.Length), fr.Length)
	if err != nil {
		return fr, fmt.Errorf("trajectory: reading back the new frame: %w", err)
	}
	fr.SHA256 = rd.Files()[0].SHA256
	rd.Close()
	if err := w.f.Sync(); err != nil {
		return fr, err
	}
	x := a.Index
	x.Frames = append(x.Frames[:len(x.Frames):len(x.Frames)], fr)
	idxOff := fr.Offset + fr.Length
	b := appendTrailer(nil, x.Marshal(), idxOff, len(x.Frames))
	if _, err := w.f.WriteAt(b, idxOff); err != nil {
		return fr, err
	}
	if err := w.f.Sync(); err != nil {
		return fr, err
	}
	a.Index, a.End = x, idxOff+int64(len(b))
	// keep what later frames may be coded against
	if a.Mode == RefPrevious {
		clear(w.cache)
	} else if fr.Ref < 0 {
		clear(w.cache)
	}
	w.cache[i] = in
	return fr, nil
}

// reference returns the codec reference of frame j.
func (w *Writer) reference(j int, opt codec.Options) (*codec.Reference, error) {
	f := w.a.Frames[j]
	if in, ok := w.cache[j]; ok {
		return codec.NewReferenceSums([]codec.Input{in}, [][32]byte{f.SHA256})
	}
	d, err := w.a.Extract(j, opt)
	if err != nil {
		return nil, fmt.Errorf("decoding the reference frame: %w", err)
	}
	in := codec.Input{Name: f.Name, R: codec.Bytes(d.Data), Size: int64(len(d.Data)), Segments: d.Segs}
	w.cache[j] = in
	return codec.NewReferenceSums([]codec.Input{in}, [][32]byte{f.SHA256})
}

// Provide offers in as the original file of frame j: when its size and
// SHA-256 are frame j's, the writer keeps it, and a later append coded
// against frame j reads it instead of decoding frame j's chain (hashing a
// file instead of decoding up to K frames). It reports whether in was
// taken; in.R must then stay readable while Retains says so.
func (w *Writer) Provide(j int, in codec.Input) (bool, error) {
	if j < 0 || j >= len(w.a.Frames) || in.Size != w.a.Frames[j].Size {
		return false, nil
	}
	if _, ok := w.cache[j]; ok {
		return false, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(in.R, 0, in.Size)); err != nil {
		return false, err
	}
	if [32]byte(h.Sum(nil)) != w.a.Frames[j].SHA256 {
		return false, nil
	}
	w.cache[j] = in
	return true, nil
}

// Retains reports whether the writer may still read r (the ReaderAt of an
// appended input) as a reference; the caller must keep it open until then.
func (w *Writer) Retains(r io.ReaderAt) bool {
	for _, in := range w.cache {
		if in.R == r {
			return true
		}
	}
	return false
}
