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
//	                   1 + the index of the frame it is coded against,
//	                   which must be smaller than its own
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
package trajectory

import (
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

// Version is the trajectory format version this package writes and reads.
const Version = 1

const (
	headerLen  = 16
	trailerLen = 32
	maxIndex   = 1 << 28 // largest index a reader accepts
)

// Reference modes.
const (
	RefPrevious = 0 // each frame against the previous one
	RefKeyframe = 1 // each frame against its keyframe
)

// Errors.
var (
	// ErrNotTrajectory means the file does not start with the magic.
	ErrNotTrajectory = errors.New("trajectory: not a trajectory archive")
	// ErrCorrupt means the archive (or an index) is damaged.
	ErrCorrupt = errors.New("trajectory: corrupt archive")
	// ErrNotFound means no frame has the name or index asked for.
	ErrNotFound = errors.New("trajectory: no such frame")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Frame is one step of a trajectory.
type Frame struct {
	Name   string   // base name of the original file
	Size   int64    // original size
	SHA256 [32]byte // of the original file
	Offset int64    // of the frame's .nzip archive in the trajectory file
	Length int64    // of that archive
	Ref    int      // index of the frame it is coded against, -1 for a keyframe
}

// Keyframe reports whether the frame is coded without a reference.
func (f Frame) Keyframe() bool { return f.Ref < 0 }

// Index is the decoded index of a trajectory.
type Index struct {
	K      int // keyframe interval
	Mode   int // RefPrevious or RefKeyframe
	Frames []Frame
}

// Marshal encodes the index.
func (x *Index) Marshal() []byte {
	var b []byte
	b = binary.AppendUvarint(b, uint64(x.K))
	b = append(b, byte(x.Mode))
	b = binary.AppendUvarint(b, uint64(len(x.Frames)))
	for _, f := range x.Frames {
		b = binary.AppendUvarint(b, uint64(len(f.Name)))
		b = append(b, f.Name...)
		b = binary.AppendUvarint(b, uint64(f.Size))
		b = append(b, f.SHA256[:]...)
		b = binary.AppendUvarint(b, uint64(f.Offset))
		b = binary.AppendUvarint(b, uint64(f.Length))
		b = binary.AppendUvarint(b, uint64(f.Ref+1))
	}
	return b
}

// ParseIndex decodes an index whose frames must lie in [16, end). It checks
// every count and offset before allocating.
func ParseIndex(b []byte, end int64) (*Index, error) {
	r := reader{b: b}
	x := &Index{}
	x.K = int(r.uvarint(math.MaxInt32, "keyframe interval"))
	if r.err == nil && x.K < 1 {
		r.fail("keyframe interval 0")
	}
	x.Mode = int(r.u8("mode"))
	if r.err == nil && x.Mode > RefKeyframe {
		r.fail("unknown reference mode %d", x.Mode)
	}
	n := r.uvarint(uint64(len(r.b)/36), "frame count")
	pos := int64(headerLen)
	for i := uint64(0); i < n && r.err == nil; i++ {
		var f Frame
		l := r.uvarint(uint64(len(r.b)), "name length")
		f.Name = string(r.bytes(int(l), "name"))
		f.Size = int64(r.uvarint(math.MaxInt64, "size"))
		copy(f.SHA256[:], r.bytes(32, "SHA-256"))
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

func header() []byte {
	var h [headerLen]byte
	copy(h[:], Magic[:])
	binary.LittleEndian.PutUint16(h[8:], Version)
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
