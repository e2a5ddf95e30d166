package trajectory

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
	"strings"

	"neuralzip/codec"
)

// Archive is an open trajectory: its last valid index.
type Archive struct {
	r io.ReaderAt
	Index
	// End is the end of the last valid trailer: the archive's size. Bytes
	// after it (Tail of them) are the remains of an interrupted append —
	// unless TailTrailer: they end in a trailer's magic, as a whole
	// append does, or in a trailer whose index checks but whose magic is
	// damaged, so most likely a damaged last index or trailer (whose
	// frame is lost with it), not an interrupted append.
	End         int64
	Tail        int64
	TailTrailer bool
}

// Open reads a trajectory of the given size. When the file ends in an
// interrupted append, Open finds the last valid trailer before it (Tail
// says how many bytes follow it).
func Open(r io.ReaderAt, size int64) (*Archive, error) {
	if size < headerLen {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrNotTrajectory, size)
	}
	var h [headerLen]byte
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return nil, err
	}
	if !bytes.Equal(h[:8], Magic[:]) {
		return nil, ErrNotTrajectory
	}
	v := int(binary.LittleEndian.Uint16(h[8:]))
	if v < MinVersion || v > Version {
		return nil, fmt.Errorf("%w: unsupported version %d (this build reads %d to %d)", ErrCorrupt, v, MinVersion, Version)
	}
	if f := binary.LittleEndian.Uint16(h[10:]); f != 0 {
		return nil, fmt.Errorf("%w: unknown flags %#x", ErrCorrupt, f)
	}
	a := &Archive{r: r}
	// the trailer at the end, else the last valid one before it
	if x, err := readTrailer(r, size, v, nil); err == nil {
		a.Index, a.End = *x, size
		return a, nil
	}
	end, x, err := findTrailer(r, size, v)
	if err != nil {
		return nil, err
	}
	a.End, a.Tail = end, size-end
	var m [len(TrailerMagic)]byte
	if _, err := r.ReadAt(m[:], size-int64(len(m))); err == nil && a.Tail >= int64(len(m)) && m == TrailerMagic {
		a.TailTrailer = true
	} else if a.Tail >= trailerLen {
		// a complete frame and index whose offsets, CRC and frame count
		// check, followed by a trailer whose magic alone is damaged: an
		// append that finished (the index is synced before its trailer),
		// not an interrupted one
		if _, err := readTrailerMagic(r, size, v, nil, false); err == nil {
			a.TailTrailer = true
		}
	}
	if x != nil {
		a.Index = *x
	} else {
		a.Index = Index{Version: v, K: 1}
	}
	return a, nil
}

// readTrailer checks the trailer ending at end and decodes its index.
//
// budget, when not nil, is what the index may still cost to check: its
// length is charged before it is read (see findTrailer).
func readTrailer(r io.ReaderAt, end int64, version int, budget *int64) (*Index, error) {
	return readTrailerMagic(r, end, version, budget, true)
}

// readTrailerMagic is readTrailer, checking the trailer's magic only when
// magic is set.
func readTrailerMagic(r io.ReaderAt, end int64, version int, budget *int64, magic bool) (*Index, error) {
	if end < headerLen+trailerLen {
		return nil, fmt.Errorf("%w: no trailer", ErrCorrupt)
	}
	var t [trailerLen]byte
	if _, err := r.ReadAt(t[:], end-trailerLen); err != nil {
		return nil, err
	}
	if magic && !bytes.Equal(t[24:], TrailerMagic[:]) {
		return nil, fmt.Errorf("%w: offset %d: trailer magic missing", ErrCorrupt, end-8)
	}
	off := int64(binary.LittleEndian.Uint64(t[0:]))
	n := int64(binary.LittleEndian.Uint64(t[8:]))
	if off < headerLen || n < 0 || n > maxIndex || off > end-trailerLen || n != end-trailerLen-off {
		return nil, fmt.Errorf("%w: offset %d: index at %d (+%d) does not end at the trailer", ErrCorrupt, end-trailerLen, off, n)
	}
	if budget != nil {
		if *budget -= n; *budget < 0 {
			return nil, errTrailerBudget
		}
	}
	idx := make([]byte, n)
	if _, err := r.ReadAt(idx, off); err != nil {
		return nil, err
	}
	if crc32.Checksum(idx, castagnoli) != binary.LittleEndian.Uint32(t[16:]) {
		return nil, fmt.Errorf("%w: offset %d: index checksum mismatch", ErrCorrupt, off)
	}
	x, err := ParseIndex(idx, off, version)
	if err != nil {
		return nil, err
	}
	if int(binary.LittleEndian.Uint32(t[20:])) != len(x.Frames) {
		return nil, fmt.Errorf("%w: offset %d: trailer counts a different number of frames", ErrCorrupt, end-trailerLen)
	}
	return x, nil
}

// errTrailerBudget: findTrailer's budget is spent.
var errTrailerBudget = errors.New("trajectory: trailer search budget spent")

// findTrailer scans backwards from size for the last valid trailer. It
// returns its end and index, or headerLen and nil when there is none (an
// empty trajectory whose first append was interrupted).
//
// Checking a candidate reads and checksums the index it points to, so the
// indexes checked may total at most twice the file size (plus 1 MiB): a
// file of nothing but fake trailers would otherwise cost time and memory
// quadratic in its size. An interrupted append leaves a frame's worth of
// bytes, which hardly ever holds a trailer's magic: the first candidate is
// the real trailer.
func findTrailer(r io.ReaderAt, size int64, version int) (int64, *Index, error) {
	const win = 1 << 20
	// no larger than the file: a small damaged file (every fuzzed input)
	// would pay for a 1 MiB window
	buf := make([]byte, min(win, size)+int64(len(TrailerMagic)))
	budget := 2*size + 1<<20
	hi := size // candidates end at most here
	for hi > headerLen {
		lo := max(hi-win, headerLen)
		n := hi - lo
		b := buf[:n]
		if _, err := r.ReadAt(b, lo); err != nil && !errors.Is(err, io.EOF) {
			return 0, nil, err
		}
		for j := len(b); j > 0; {
			k := bytes.LastIndex(b[:j], TrailerMagic[:])
			if k < 0 {
				break
			}
			end := lo + int64(k) + int64(len(TrailerMagic))
			x, err := readTrailer(r, end, version, &budget)
			if err == nil {
				return end, x, nil
			}
			if err == errTrailerBudget {
				return 0, nil, fmt.Errorf("%w: no valid trailer found; gave up at offset %d after checking indexes of twice the file's size", ErrCorrupt, end)
			}
			j = k + len(TrailerMagic) - 1
		}
		// a magic may straddle the window boundary
		hi = lo + int64(len(TrailerMagic)) - 1
		if lo == headerLen {
			break
		}
	}
	return headerLen, nil, nil
}

// Find returns the index of the frame named name, else of the frame whose
// index name is (as ls lists them), else of the one frame whose name is
// name followed by extensions ("step_000500" for
// "step_000500.bf16.safetensors"). A name that several frames share, or
// that several frames' names extend, is an error naming them: give the
// full name or the index instead. A name no frame has is an error that
// lists the names that contain it, if any.
func (a *Archive) Find(name string) (int, error) {
	var at []int
	for i, f := range a.Frames {
		if f.Name == name {
			at = append(at, i)
		}
	}
	switch {
	case len(at) == 1:
		return at[0], nil
	case len(at) > 1:
		return -1, fmt.Errorf("%w: %d frames are named %q (frames %s); give the index of one", ErrAmbiguous, len(at), name, strings.Trim(fmt.Sprint(at), "[]"))
	}
	if i, err := strconv.Atoi(name); err == nil && i >= 0 && i < len(a.Frames) {
		return i, nil
	}
	var like []int
	for i, f := range a.Frames {
		if name != "" && strings.HasPrefix(f.Name, name+".") {
			at = append(at, i)
		} else if name != "" && strings.Contains(f.Name, name) {
			like = append(like, i)
		}
	}
	switch {
	case len(at) == 1:
		return at[0], nil
	case len(at) > 1:
		return -1, fmt.Errorf("%w: %q names %d frames: %s; give the full name or the index", ErrAmbiguous, name, len(at), a.frameList(at))
	case len(like) > 0:
		return -1, fmt.Errorf("%w: %q (frames whose name contains it: %s)", ErrNotFound, name, a.frameList(like))
	}
	return -1, fmt.Errorf("%w: %q", ErrNotFound, name)
}

// frameList lists frames as "3 (step_000150.bf16.safetensors), ...", at
// most five of them.
func (a *Archive) frameList(at []int) string {
	var b strings.Builder
	for k, i := range at {
		if k == 5 {
			fmt.Fprintf(&b, ", and %d more", len(at)-k)
			break
		}
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d (%s)", i, a.Frames[i].Name)
	}
	return b.String()
}

// Chain returns the frames to decode, keyframe first, to get frame i.
func (a *Archive) Chain(i int) ([]int, error) {
	if i < 0 || i >= len(a.Frames) {
		return nil, fmt.Errorf("%w: %d", ErrNotFound, i)
	}
	var c []int
	for j := i; ; j = a.Frames[j].Ref {
		c = append(c, j)
		if a.Frames[j].Ref < 0 {
			break
		}
		if a.Frames[j].Ref >= j {
			return nil, fmt.Errorf("%w: frame %d refers forward", ErrCorrupt, j)
		}
	}
	for l, r := 0, len(c)-1; l < r; l, r = l+1, r-1 {
		c[l], c[r] = c[r], c[l]
	}
	return c, nil
}

// FrameReader opens frame i's .nzip archive.
func (a *Archive) FrameReader(i int) (*codec.Reader, error) {
	f := a.Frames[i]
	rd, err := codec.NewSectionReader(a.r, f.Offset, f.Length)
	if err != nil {
		return nil, fmt.Errorf("frame %d (%s): %w", i, f.Name, err)
	}
	if !holds(rd, f.files()) {
		rd.Close()
		return nil, fmt.Errorf("%w: frame %d (%s) does not hold the files the index names", ErrCorrupt, i, f.Name)
	}
	return rd, nil
}

// holds reports whether an .nzip archive holds exactly these files (by
// size and SHA-256), in this order.
func holds(rd *codec.Reader, files []FrameFile) bool {
	fs := rd.Files()
	if len(fs) != len(files) {
		return false
	}
	for k, f := range files {
		if fs[k].Size != f.Size || fs[k].SHA256 != f.SHA256 {
			return false
		}
	}
	return true
}

// Decoded is a decoded frame: its files' bytes and layouts, which serve as
// the reference of the frames coded against it. Data, Segs and Format are
// those of the first file (the only one of a single-file step).
type Decoded struct {
	Frame  int
	Files  []DecodedFile // every file of the step, in order
	Data   []byte
	Segs   []codec.Segment
	Format string // the loader's format name recorded in the frame
}

// DecodedFile is one decoded file of a step.
type DecodedFile struct {
	Name   string // as the index names it
	Data   []byte
	Segs   []codec.Segment
	Format string
}

// inputs is the decoded frame as inputs to code (frame f's file names).
func (d *Decoded) inputs(f Frame) []codec.Input {
	fs := f.files()
	ins := make([]codec.Input, len(d.Files))
	for k, df := range d.Files {
		ins[k] = codec.Input{Name: fs[k].Name, R: codec.Bytes(df.Data), Size: int64(len(df.Data)), Format: df.Format, Segments: df.Segs}
	}
	return ins
}

// reference makes a codec reference of a decoded frame.
func (d *Decoded) reference(f Frame) (*codec.Reference, error) {
	return codec.NewReferenceSums(d.inputs(f), fileSums(f))
}

// fileSums lists the SHA-256 of each of a frame's files.
func fileSums(f Frame) [][32]byte {
	var s [][32]byte
	for _, ff := range f.files() {
		s = append(s, ff.SHA256)
	}
	return s
}

// Extract decodes frame i: its keyframe, then every frame of its reference
// chain. Every block's CRC-32C is checked, and the SHA-256 of frame i
// (unless opt.SkipHash), which depends on every frame before it in the
// chain. opt.Ref is ignored.
func (a *Archive) Extract(ctx context.Context, i int, opt codec.DecodeOptions) (*Decoded, error) {
	chain, err := a.Chain(i)
	if err != nil {
		return nil, err
	}
	var prev *Decoded
	var spare [][]byte // the buffers of the frame before prev, free again
	for k, j := range chain {
		o := opt
		if k < len(chain)-1 {
			o.SkipHash = true
		}
		d, err := a.decodeFrameTo(ctx, spare, j, prev, o)
		if err != nil {
			return nil, err
		}
		if prev != nil {
			spare = spare[:0]
			for _, df := range prev.Files {
				spare = append(spare, df.Data)
			}
		}
		prev = d
	}
	return prev, nil
}

// decodeFrame decodes frame j given its decoded reference (nil for a keyframe).
func (a *Archive) decodeFrame(ctx context.Context, j int, ref *Decoded, opt codec.DecodeOptions) (*Decoded, error) {
	return a.decodeFrameTo(ctx, nil, j, ref, opt)
}

// decodeFrameTo is decodeFrame, file k into buf[k] when it is there and
// large enough.
func (a *Archive) decodeFrameTo(ctx context.Context, buf [][]byte, j int, ref *Decoded, opt codec.DecodeOptions) (*Decoded, error) {
	f := a.Frames[j]
	rd, err := a.FrameReader(j)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	if f.Ref >= 0 {
		if ref == nil || ref.Frame != f.Ref {
			return nil, fmt.Errorf("trajectory: internal error: frame %d decoded without its reference", j)
		}
		cr, err := ref.reference(a.Frames[f.Ref])
		if err != nil {
			return nil, err
		}
		if err := rd.UseRef(cr); err != nil {
			return nil, fmt.Errorf("frame %d (%s): %w", j, f.Name, err)
		}
	}
	opt.Ref = nil
	d := &Decoded{Frame: j}
	for k, ff := range f.files() {
		var b []byte
		if k < len(buf) {
			b = buf[k]
		}
		data, err := rd.ReadFileTo(ctx, b, k, opt)
		if err != nil {
			if len(f.files()) > 1 {
				return nil, fmt.Errorf("frame %d (%s), file %s: %w", j, f.Name, ff.Name, err)
			}
			return nil, fmt.Errorf("frame %d (%s): %w", j, f.Name, err)
		}
		fi := rd.Files()[k]
		d.Files = append(d.Files, DecodedFile{Name: ff.Name, Data: data, Segs: tensorSegments(fi), Format: fi.Format})
	}
	d.Data, d.Segs, d.Format = d.Files[0].Data, d.Files[0].Segs, d.Files[0].Format
	return d, nil
}

// tensorSegments turns the tensor list of an archived file into a layout.
func tensorSegments(fi *codec.FileInfo) []codec.Segment {
	segs := make([]codec.Segment, 0, len(fi.Tensors))
	for _, t := range fi.Tensors {
		segs = append(segs, codec.Segment{Name: t.Name, DType: t.DType, Type: t.Type, Shape: t.Shape, Offset: t.Offset, Length: t.Length})
	}
	return segs
}

// Walk decodes every frame in order, each once, and calls fn with it; a
// decoded frame is kept only while a later frame refers to it. Every
// frame's blocks and SHA-256 are checked.
func (a *Archive) Walk(ctx context.Context, opt codec.DecodeOptions, fn func(d *Decoded) error) error {
	if _, err := lastUses(a.Frames); err != nil {
		return err
	}
	frames := make([]int, len(a.Frames))
	for i := range frames {
		frames[i] = i
	}
	return a.walk(ctx, frames, opt, fn)
}

// walk is Walk over frames (in order; each coded against an earlier one of
// them, or a keyframe).
func (a *Archive) walk(ctx context.Context, frames []int, opt codec.DecodeOptions, fn func(d *Decoded) error) error {
	last := map[int]int{} // the last frame that refers to each
	for _, j := range frames {
		if r := a.Frames[j].Ref; r >= 0 {
			last[r] = j
		}
	}
	keep := map[int]*Decoded{}
	for _, i := range frames {
		f := a.Frames[i]
		var ref *Decoded
		if f.Ref >= 0 {
			ref = keep[f.Ref]
		}
		d, err := a.decodeFrame(ctx, i, ref, opt)
		if err != nil {
			return err
		}
		if err := fn(d); err != nil {
			return err
		}
		if last[i] > i {
			keep[i] = d
		}
		// only this frame's reference can have seen its last use (scanning
		// keep instead was quadratic in a hostile index's frames)
		if f.Ref >= 0 && last[f.Ref] == i {
			delete(keep, f.Ref)
		}
	}
	return nil
}
