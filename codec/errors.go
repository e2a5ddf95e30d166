package codec

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package wrap one of these, so
// callers can test with errors.Is; CorruptError adds where it happened.
var (
	// ErrNotArchive means the input does not start with the .nzip magic.
	ErrNotArchive = errors.New("codec: not an nzip archive")

	// ErrLossy means the input is a lossy archive (nzip quantize): its
	// weights are approximations, not the original bytes, and this
	// package does not read it. Errors wrapping it wrap ErrNotArchive too.
	ErrLossy = errors.New("codec: a lossy archive (nzip quantize), not a lossless .nzip archive: its weights are approximations, not the original bytes")

	// ErrVersion means the archive was written by a newer, incompatible format version.
	ErrVersion = errors.New("codec: unsupported archive version")

	// ErrCorrupt means the archive is damaged: a length, table or
	// payload is inconsistent, or a checksum does not match.
	ErrCorrupt = errors.New("codec: corrupt archive")

	// ErrChecksum means decoded data does not match its stored checksum
	// (CRC-32C of a block or SHA-256 of a file).
	ErrChecksum = errors.New("codec: checksum mismatch")

	// ErrTooLarge means a size read from the archive exceeds a limit of this
	// decoder (or the archive itself), so nothing was allocated for it.
	ErrTooLarge = errors.New("codec: size exceeds limit")

	// ErrNotFound means a named file or tensor is not in the archive.
	ErrNotFound = errors.New("codec: not found")
)

// CorruptError reports damage found at a position of the archive.
// Offset is the byte offset in the archive (in the file that holds it, for
// a Reader from NewSectionReader), -1 when the damage has no one position
// (a file's SHA-256); Block is the block index within
// File, or -1 when the damage is not inside a block payload. FileOffset is the
// offset in the original file the block starts at (when Block >= 0).
type CorruptError struct {
	Offset     int64
	File       string
	Block      int
	FileOffset int64
	Msg        string
	Err        error // ErrCorrupt, ErrChecksum or ErrTooLarge
}

func (e *CorruptError) Error() string {
	if e.Block >= 0 {
		return fmt.Sprintf("codec: archive offset %d: file %q block %d (original offset %d): %s", e.Offset, e.File, e.Block, e.FileOffset, e.Msg)
	}
	return fmt.Sprintf("codec: archive offset %d: %s", e.Offset, e.Msg)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// errf makes a payload-level corruption error; the block decoder's caller
// fills in where.
func errf(format string, args ...any) error {
	return &payloadError{msg: fmt.Sprintf(format, args...)}
}

type payloadError struct{ msg string }

func (e *payloadError) Error() string { return e.msg }
func (e *payloadError) Unwrap() error { return ErrCorrupt }
