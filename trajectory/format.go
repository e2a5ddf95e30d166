// Package trajectory implements .nztraj archives: the checkpoints of a
// training run (or any sequence of related models) as frames, each an .nzip
// archive coded against the previous frame or the nearest keyframe (see
// codec.Reference), with keyframes at most K frames apart coded on their
// own. Any step decodes from its keyframe; frames are only ever appended.
//
// # Format, version 1
//
// All integers are little-endian; uvarint and string as in package codec.
//
//	Header | { Frame | Index | Trailer } ...
//
// Header, 16 bytes: the magic 89 4E 5A 54 52 0D 0A 1A ("\x89NZTR\r\n\x1a"),
// u16 version (1), u16 flags (0; readers reject others), u32 zero.
//
// Every append writes one frame (a complete .nzip archive of one checkpoint
// file, see codec/doc.go), then an index of all frames so far, then a
// trailer. Nothing already written is ever changed, so the earlier index
// and trailer stay in the file: the archive is the prefix of the file up to
// the end of the last valid trailer, and bytes after it (an interrupted
// append) are ignored and cut off by the next append. A file of just the
// header is an empty trajectory.
//
// Trailer, 32 bytes: u64 index offset, u64 index length (the index ends
// where the trailer starts), u32 CRC-32C (Castagnoli) of the index, u32
// frame count, and the magic "NZTREND\x00". A trailer is valid when its
// magic, offsets, CRC and index all check; readers look for the last valid
// trailer from the end of the file backwards.
//
// Index (raw bytes):
//
//	uvarint K        keyframe interval (≥ 1): no chain is longer than K frames
//	u8      mode     0: a frame is coded against the previous frame,
//	                 1: against the keyframe at or before it
//	uvarint frames
//	per frame:
//	  string   name    base name of the file the frame was made of
//	  uvarint  size    its size in bytes
//	  [32]byte sha256  its SHA-256
//	  uvarint  offset  where the frame's .nzip archive starts in the file
//	  uvarint  length  its length
//	  uvarint  ref     0: a keyframe (coded without reference); otherwise
//	                   1 + the index of the frame it is coded against:
//	                   the frame before it or the last keyframe before it
//	                   (either mode may hold both), and its chain (the
//	                   frame, its reference, and so on down to a
//	                   keyframe) must not be longer than K frames
//
// Frames lie between the header and the index, in order, without
// overlapping. A frame with a reference is an .nzip archive with the
// reference flag whose single reference file has the size and SHA-256 of
// frame ref-1's file. K and mode decide only how later appends choose their
// reference; a reader follows the ref fields. To decode frame i, decode its
// reference chain from the keyframe on, each frame with the one before as
// reference.
//
// An append makes the new frame a keyframe when the frame before it is the
// K-th of its chain (mode 0) or the keyframe before it lies K or more
// frames back (mode 1), so that appends alone give a keyframe every K
// frames. A writer that knows several frames in advance may place
// keyframes earlier, where they cost least (PlanKeyframes); later appends
// follow the same rule from there.
//
// # Format, version 2
//
// Version 2 lets a frame (a step) hold several files, e.g. a sharded
// checkpoint: a *.safetensors.index.json and its shards. Everything is as in
// version 1 (header version 2) except the per-frame fields of the index:
//
//	per frame:
//	  string   name    the step's name (a single-file step: the file's
//	                   base name; a sharded one: e.g. its directory's name)
//	  uvarint  files   (≥ 1) then per file, in the order of the frame's
//	                   .nzip archive:
//	    string   name    the file's name
//	    uvarint  size    its size in bytes
//	    [32]byte sha256  its SHA-256
//	  uvarint  offset  as in version 1
//	  uvarint  length
//	  uvarint  ref
//
// A frame's .nzip archive holds the step's files in this order. A frame
// with a reference is an .nzip archive whose reference files are exactly the
// files of frame ref-1 (by size and SHA-256), so that its tensors are
// matched by name across all of them. The step's size is the sum of its
// files' sizes; its SHA-256 (Frame.SHA256) is the file's SHA-256 for a step
// of one file, else the SHA-256 of the concatenated per-file SHA-256s.
//
// Readers read versions 1 and 2. A writer appending to a version 1
// archive keeps writing version 1 indexes (single-file steps only: a step
// of several files needs the archive repacked, which writes version 2).
package trajectory

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Magic starts every trajectory archive; TrailerMagic ends every trailer.
var (
	Magic        = [8]byte{0x89, 'N', 'Z', 'T', 'R', '\r', '\n', 0x1a}
	TrailerMagic = [8]byte{'N', 'Z', 'T', 'R', 'E', 'N', 'D', 0}
)

// Version is the trajectory format version this package writes; it also
// reads MinVersion and appends to such archives in their own version.
const (
	Version    = 2
	MinVersion = 1
)

const (
	headerLen  = 16
	trailerLen = 32
	maxIndex   = 1 << 28 // largest index a reader accepts
)

// RefMode says what frames are coded against (the index's mode byte).
type RefMode byte

const (
	RefPrevious RefMode = 0 // each frame against the previous one
	RefKeyframe RefMode = 1 // each frame against its keyframe
)

// Errors.
var (
	// ErrNotTrajectory means the file does not start with the magic.
	ErrNotTrajectory = errors.New("trajectory: not a trajectory archive")
	// ErrAmbiguous means a name given to Find names several frames.
	ErrAmbiguous = errors.New("trajectory: ambiguous step name")
	// ErrCorrupt means the archive (or an index) is damaged.
	ErrCorrupt = errors.New("trajectory: corrupt archive")
	// ErrNotFound means no frame has the name or index asked for.
	ErrNotFound = errors.New("trajectory: no such frame")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Frame is one step of a trajectory.
type Frame struct {
	Name   string      // the step's name: a single file's base name, or e.g. a sharded checkpoint's directory
	Files  []FrameFile // the step's files (≥ 1), in archive order
	Size   int64       // the step's size: the sum of its files' sizes
	SHA256 [32]byte    // a single file's SHA-256; for several, the SHA-256 of their concatenated SHA-256s (StepSum)
	Offset int64       // of the frame's .nzip archive in the trajectory file
	Length int64       // of that archive
	Ref    int         // index of the frame it is coded against, -1 for a keyframe
}

// FrameFile is one file of a step.
type FrameFile struct {
	Name   string
	Size   int64
	SHA256 [32]byte
}

// StepSum is Frame.SHA256 of a step of these files: the file's SHA-256
// for one file, else the SHA-256 of the files' SHA-256s concatenated.
func StepSum(files []FrameFile) [32]byte {
	if len(files) == 1 {
		return files[0].SHA256
	}
	h := sha256.New()
	for _, f := range files {
		h.Write(f.SHA256[:])
	}
	return [32]byte(h.Sum(nil))
}

// files returns the frame's files; a frame built without Files (by hand)
// is the one file its Name, Size and SHA256 describe.
func (f Frame) files() []FrameFile {
	if len(f.Files) == 0 {
		return []FrameFile{{Name: f.Name, Size: f.Size, SHA256: f.SHA256}}
	}
	return f.Files
}

// Keyframe reports whether the frame is coded without a reference.
func (f Frame) Keyframe() bool { return f.Ref < 0 }

// Index is the decoded index of a trajectory.
type Index struct {
	// Version is the format version of the archive (its header): 1 or 2;
	// Marshal writes version 2 for any value but 1.
	Version int
	K       int // keyframe interval
	Mode    RefMode
	Frames  []Frame
}

// Marshal encodes the index in its version. A version 1 index describes
// each frame by its Name, Size and SHA256 (single-file frames only; the
// writer refuses others).
func (x *Index) Marshal() []byte {
	var b []byte
	b = binary.AppendUvarint(b, uint64(x.K))
	b = append(b, byte(x.Mode))
	b = binary.AppendUvarint(b, uint64(len(x.Frames)))
	for _, f := range x.Frames {
		b = binary.AppendUvarint(b, uint64(len(f.Name)))
		b = append(b, f.Name...)
		if x.Version == 1 {
			b = binary.AppendUvarint(b, uint64(f.Size))
			b = append(b, f.SHA256[:]...)
		} else {
			fs := f.files()
			b = binary.AppendUvarint(b, uint64(len(fs)))
			for _, ff := range fs {
				b = binary.AppendUvarint(b, uint64(len(ff.Name)))
				b = append(b, ff.Name...)
				b = binary.AppendUvarint(b, uint64(ff.Size))
				b = append(b, ff.SHA256[:]...)
			}
		}
		b = binary.AppendUvarint(b, uint64(f.Offset))
		b = binary.AppendUvarint(b, uint64(f.Length))
		b = binary.AppendUvarint(b, uint64(f.Ref+1))
	}
	return b
}

// ParseIndex decodes an index of format version (1 or 2) whose frames
// must lie in [16, end). It checks every count and offset before
// allocating.
func ParseIndex(b []byte, end int64, version int) (*Index, error) {
	if version < MinVersion || version > Version {
		return nil, fmt.Errorf("%w: unsupported version %d (this build reads %d to %d)", ErrCorrupt, version, MinVersion, Version)
	}
	r := reader{b: b}
	x := &Index{Version: version}
	x.K = int(r.uvarint(math.MaxInt32, "keyframe interval"))
	if r.err == nil && x.K < 1 {
		r.fail("keyframe interval 0")
	}
	x.Mode = RefMode(r.u8("mode"))
	if r.err == nil && x.Mode > RefKeyframe {
		r.fail("unknown reference mode %d", x.Mode)
	}
	n := r.uvarint(uint64(len(r.b)/36), "frame count")
	pos := int64(headerLen)
	key, depth := -1, 0 // the last keyframe, the chain length of the frame before
	for i := uint64(0); i < n && r.err == nil; i++ {
		var f Frame
		f.Name = r.str("name")
		if version == 1 {
			f.Size = int64(r.uvarint(math.MaxInt64, "size"))
			copy(f.SHA256[:], r.bytes(32, "SHA-256"))
			f.Files = []FrameFile{{Name: f.Name, Size: f.Size, SHA256: f.SHA256}}
		} else {
			f.Files = r.files()
			if r.err != nil {
				break
			}
			f.SHA256 = StepSum(f.Files)
			for _, ff := range f.Files {
				if ff.Size > math.MaxInt64-f.Size {
					r.fail("frame %d (%q): files total more than 2^63 bytes", i, f.Name)
					break
				}
				f.Size += ff.Size
			}
		}
		f.Offset = int64(r.uvarint(math.MaxInt64, "offset"))
		f.Length = int64(r.uvarint(math.MaxInt64, "length"))
		f.Ref = int(r.uvarint(i, "reference")) - 1
		if r.err != nil {
			break
		}
		if f.Offset < pos || f.Offset > end || f.Length > end-f.Offset {
			r.fail("frame %d (%q) at [%d,+%d) outside [%d,%d)", i, f.Name, f.Offset, f.Length, pos, end)
			break
		}
		if depth, r.err = refRule(f, int(i), key, depth, x.K); r.err != nil {
			break
		}
		if f.Ref < 0 {
			key = int(i)
		}
		pos = f.Offset + f.Length
		x.Frames = append(x.Frames, f)
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: index: %v", ErrCorrupt, r.err)
	}
	return x, nil
}

// refRule checks frame f, the i-th, against the rule that bounds a
// reader's work (and that every writer follows): a frame is coded against
// the frame before it or the last keyframe (key), and no chain is longer
// than k frames. depth is the chain length of the frame before; it
// returns frame i's.
func refRule(f Frame, i, key, depth, k int) (int, error) {
	switch {
	case f.Ref < 0:
		depth = 1
	case f.Ref == i-1:
		depth++
	case f.Ref == key:
		depth = 2
	default:
		return 0, fmt.Errorf("frame %d (%q) is coded against frame %d, neither the frame before it nor the last keyframe (%d)", i, f.Name, f.Ref, key)
	}
	if depth > k {
		return 0, fmt.Errorf("frame %d (%q) decodes through %d frames, more than the keyframe interval %d", i, f.Name, depth, k)
	}
	return depth, nil
}

// minFileEntry is the fewest index bytes a file of a version 2 frame takes
// (name length, size, SHA-256).
const minFileEntry = 1 + 1 + 32

// files decodes a version 2 frame's file list, its count bounded by the
// bytes left before anything is allocated.
func (r *reader) files() []FrameFile {
	n := r.uvarint(uint64(len(r.b)/minFileEntry), "file count")
	if r.err == nil && n == 0 {
		r.fail("a frame of no files")
	}
	if r.err != nil {
		return nil
	}
	fs := make([]FrameFile, 0, n)
	for range n {
		var ff FrameFile
		ff.Name = r.str("file name")
		ff.Size = int64(r.uvarint(math.MaxInt64, "file size"))
		copy(ff.SHA256[:], r.bytes(32, "file SHA-256"))
		if r.err != nil {
			return nil
		}
		fs = append(fs, ff)
	}
	return fs
}

// str decodes a string.
func (r *reader) str(what string) string {
	l := r.uvarint(uint64(len(r.b)), what+" length")
	return string(r.bytes(int(l), what))
}

// reader decodes with bounds checks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *reader) uvarint(max uint64, what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.fail("bad %s", what)
		return 0
	}
	if v > max {
		r.fail("%s %d exceeds %d", what, v, max)
		return 0
	}
	r.b = r.b[k:]
	return v
}

func (r *reader) bytes(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.fail("%s: need %d bytes, have %d", what, n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8(what string) byte {
	v := r.bytes(1, what)
	if v == nil {
		return 0
	}
	return v[0]
}

// header is the header of a new archive (format Version).
func header() []byte { return headerVersion(Version) }

// headerVersion is the header of an archive of format version v.
func headerVersion(v int) []byte {
	var h [headerLen]byte
	copy(h[:], Magic[:])
	binary.LittleEndian.PutUint16(h[8:], uint16(v))
	return h[:]
}

// appendTrailer appends the index and its trailer for an index written at off.
func appendTrailer(dst []byte, idx []byte, off int64, frames int) []byte {
	dst = append(dst, idx...)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(off))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(idx)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(idx, castagnoli))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(frames))
	return append(dst, TrailerMagic[:]...)
}
