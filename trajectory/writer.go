package trajectory

import (
	"context"
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
	// BeforeCommit, when set, is called after a frame's archive is written
	// and before the index that adds it: an error (e.g. an input or
	// reference file that changed while it was read) cuts the frame off
	// again, as does any other failure of an append.
	BeforeCommit func() error

	f       File
	a       *Archive
	cache   map[int][]codec.Input // frames whose original files the caller still holds
	streams []*Stream             // frames read as references, decoded from the archive
}

// Create writes an empty trajectory (header, empty index, trailer) to f,
// which must be empty, with keyframe interval k and reference mode mode.
func Create(f File, k int, mode RefMode) (*Writer, error) {
	if k < 1 {
		return nil, fmt.Errorf("trajectory: keyframe interval %d < 1", k)
	}
	if mode != RefPrevious && mode != RefKeyframe {
		return nil, fmt.Errorf("trajectory: unknown reference mode %d", mode)
	}
	x := Index{Version: Version, K: k, Mode: mode}
	b := appendTrailer(header(), x.Marshal(), headerLen, 0)
	if _, err := f.WriteAt(b, 0); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return &Writer{f: f, a: &Archive{r: f, Index: x, End: int64(len(b))}, cache: map[int][]codec.Input{}}, nil
}

// OpenWriter opens a trajectory of the given size for appending.
func OpenWriter(f File, size int64) (*Writer, error) {
	a, err := Open(f, size)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f, a: a, cache: map[int][]codec.Input{}}, nil
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

// Append codes in as the next frame, a step of one file named after it.
// The reference (when the frame is not a keyframe, see RefFor) is an
// earlier input still held by the writer, or else decoded from the
// archive. in.R must stay readable until the writer is no longer used: it
// may serve as the reference of the next frames. opt.Ref is ignored.
func (w *Writer) Append(ctx context.Context, in codec.Input, opt codec.EncodeOptions) (Frame, error) {
	return w.append(ctx, in.Name, []codec.Input{in}, opt, false)
}

// AppendKeyframe is Append, but codes in as a keyframe (see PlanKeyframes).
func (w *Writer) AppendKeyframe(ctx context.Context, in codec.Input, opt codec.EncodeOptions) (Frame, error) {
	return w.append(ctx, in.Name, []codec.Input{in}, opt, true)
}

// AppendFiles is Append for a step of several files (e.g. a sharded
// checkpoint: its index file and its shards), named name. The frame is one
// .nzip archive of the files in this order, coded against all files of its
// reference frame (tensors match by name across them). A version 1
// archive takes only single-file steps named after their file: repack it
// (Repack writes version 2) to append others.
func (w *Writer) AppendFiles(ctx context.Context, name string, ins []codec.Input, opt codec.EncodeOptions) (Frame, error) {
	return w.append(ctx, name, ins, opt, false)
}

// AppendKeyframeFiles is AppendFiles, but codes the step as a keyframe.
func (w *Writer) AppendKeyframeFiles(ctx context.Context, name string, ins []codec.Input, opt codec.EncodeOptions) (Frame, error) {
	return w.append(ctx, name, ins, opt, true)
}

// checkStep checks the files of a step before anything is written.
func (w *Writer) checkStep(name string, ins []codec.Input) error {
	if len(ins) == 0 {
		return fmt.Errorf("trajectory: step %q has no files", name)
	}
	if w.a.Version == 1 && (len(ins) != 1 || ins[0].Name != name) {
		return fmt.Errorf("trajectory: step %q of %d files: this archive is format version 1, whose frames are single files named after them; repack it (nzip trajectory repack) to version %d first", name, len(ins), Version)
	}
	seen := make(map[string]bool, len(ins))
	for _, in := range ins {
		if seen[in.Name] {
			return fmt.Errorf("trajectory: step %q holds two files named %q", name, in.Name)
		}
		seen[in.Name] = true
	}
	return nil
}

func (w *Writer) append(ctx context.Context, name string, ins []codec.Input, opt codec.EncodeOptions, key bool) (Frame, error) {
	a := w.a
	i := len(a.Frames)
	fr := Frame{Name: name, Ref: a.RefFor(i)}
	if err := w.checkStep(name, ins); err != nil {
		return fr, err
	}
	if key {
		fr.Ref = -1
	}
	opt.Ref = nil
	// a frame's files are identified by their SHA-256 (the references
	// of later frames, the index): its archive stores them as its digests
	opt.Digest = codec.DigestSHA256
	if fr.Ref >= 0 {
		ref, err := w.reference(ctx, fr.Ref, opt)
		if err != nil {
			return fr, err
		}
		opt.Ref = ref
	}
	return w.commit(fr, ins, func(dst io.Writer) (int64, error) {
		res, err := codec.Encode(ctx, dst, ins, opt)
		return res.Compressed, err
	})
}

// commit writes frame fr, whose .nzip archive write writes (returning its
// length), then the new index and trailer; ins (fr's original files) are
// kept as a possible reference of later frames.
func (w *Writer) commit(fr Frame, ins []codec.Input, write func(io.Writer) (int64, error)) (Frame, error) {
	a := w.a
	if err := w.checkStep(fr.Name, ins); err != nil {
		return fr, err
	}
	i := len(a.Frames)
	// the reference rule readers enforce (ParseIndex), before anything is
	// written: a frame it broke would hide itself and every later one
	key, depth := -1, 0
	if i > 0 {
		chain, err := a.Chain(i - 1)
		if err != nil {
			return fr, err
		}
		key, depth = chain[0], len(chain) // in a valid index, the last keyframe
	}
	if _, err := refRule(fr, i, key, depth, a.K); err != nil {
		return fr, fmt.Errorf("trajectory: internal error: %w", err)
	}
	// cut off the remains of an interrupted append
	if a.Tail > 0 {
		if err := w.f.Truncate(a.End); err != nil {
			return fr, err
		}
		a.Tail = 0
	}
	fr.Offset = a.End
	a.Tail = 1 // until the new trailer is written, whatever follows End is garbage
	committed := false
	defer func() {
		// a failed append (cancelled, a bad input, a failed check) leaves
		// no remains: the archive ends at its last trailer again
		if !committed && w.f.Truncate(a.End) == nil && w.f.Sync() == nil {
			a.Tail = 0
		}
	}()
	n, err := write(io.NewOffsetWriter(w.f, fr.Offset))
	if err != nil {
		return fr, err
	}
	if w.BeforeCommit != nil {
		if err := w.BeforeCommit(); err != nil {
			return fr, err
		}
	}
	fr.Length = n
	rd, err := codec.NewSectionReader(w.f, fr.Offset, fr.Length)
	if err != nil {
		return fr, fmt.Errorf("trajectory: reading back the new frame: %w", err)
	}
	fs := rd.Files()
	rd.Close()
	if len(fs) != len(ins) {
		return fr, fmt.Errorf("trajectory: internal error: the new frame holds %d files, not %d", len(fs), len(ins))
	}
	fr.Files, fr.Size = make([]FrameFile, len(ins)), 0
	for k, in := range ins {
		if fs[k].Digest != codec.DigestSHA256 {
			return fr, fmt.Errorf("trajectory: internal error: the new frame holds a %v digest, not a SHA-256", fs[k].Digest)
		}
		fr.Files[k] = FrameFile{Name: in.Name, Size: fs[k].Size, SHA256: fs[k].SHA256}
		fr.Size += fs[k].Size
	}
	fr.SHA256 = StepSum(fr.Files)
	if err := w.f.Sync(); err != nil {
		return fr, err
	}
	x := a.Index
	x.Frames = append(x.Frames[:len(x.Frames):len(x.Frames)], fr)
	idxOff := fr.Offset + fr.Length
	idx := x.Marshal()
	b := appendTrailer(nil, idx, idxOff, len(x.Frames))
	// the index, synced, before the trailer: a trailer's magic on disk
	// then means its index was there whole, so a tail that ends in one
	// but does not check is damage (Archive.TailTrailer), never a crash
	// between writes of the two
	for _, at := range []int{0, len(idx)} {
		part := b[at:len(idx)]
		if at > 0 {
			part = b[at:]
		}
		if _, err := w.f.WriteAt(part, idxOff+int64(at)); err != nil {
			return fr, err
		}
		if err := w.f.Sync(); err != nil {
			return fr, err
		}
	}
	a.Index, a.End, a.Tail = x, idxOff+int64(len(b)), 0
	committed = true
	// keep what later frames may be coded against
	if a.Mode == RefPrevious || fr.Ref < 0 {
		w.forget()
	}
	w.cache[i] = ins
	return fr, nil
}

// forget lets go of the frames kept as references.
func (w *Writer) forget() {
	clear(w.cache)
	for _, s := range w.streams {
		s.Close()
	}
	w.streams = nil
}

// reference returns the codec reference of frame j: the original files
// the writer still holds, or else frame j decoded from the archive block
// by block as the encoder reads it (StreamWith, with opt's context and
// threads: memory bounded whatever the step's size). Each block the
// encoder reads decodes the chain below it once; a frame's blocks whose
// CRC-32C fails make the append fail.
func (w *Writer) reference(ctx context.Context, j int, opt codec.EncodeOptions) (*codec.Reference, error) {
	f := w.a.Frames[j]
	if ins, ok := w.cache[j]; ok {
		return codec.NewReferenceSums(ins, fileSums(f))
	}
	s, err := w.a.StreamWith(ctx, j, codec.DecodeOptions{Threads: opt.Threads})
	if err != nil {
		return nil, fmt.Errorf("opening the reference frame: %w", err)
	}
	ins, _ := lazyInputs(s.Reader, w.a.Frames, j)
	w.cache[j] = ins
	w.streams = append(w.streams, s)
	return codec.NewReferenceSums(ins, fileSums(f))
}

// Provide offers in as the original file of frame j: when its size and
// SHA-256 are frame j's, the writer keeps it, and a later append coded
// against frame j reads it instead of decoding frame j's chain (hashing a
// file instead of decoding up to K frames). It reports whether in was
// taken; in.R must then stay readable while Retains says so. Only
// single-file steps are provided this way.
func (w *Writer) Provide(j int, in codec.Input) (bool, error) {
	if j < 0 || j >= len(w.a.Frames) || len(w.a.Frames[j].files()) != 1 || in.Size != w.a.Frames[j].Size {
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
	w.cache[j] = []codec.Input{in}
	return true, nil
}

// Retains reports whether the writer may still read r (the ReaderAt of an
// appended input) as a reference; the caller must keep it open until then.
func (w *Writer) Retains(r io.ReaderAt) bool {
	for _, ins := range w.cache {
		for _, in := range ins {
			if in.R == r {
				return true
			}
		}
	}
	return false
}
