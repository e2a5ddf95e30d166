package baseline

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Every archive starts with a 4-byte magic that names the codec family and
// one version byte, then the original length as a uvarint. What follows is
// the family's own layout (see doc.go).
const (
	magicZstd     = "NZBZ"
	magicGzip     = "NZBG"
	magicZipNN    = "NZBN"
	magicDFloat11 = "NZBD"

	formatVersion = 1
)

// maxOriginal bounds any original length an archive may declare (1 TiB).
// Each family further bounds it by what its archive size can decode to.
const maxOriginal = 1 << 40

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum is the CRC-32C that the zipnn and dfloat11 archives end with.
func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// appendHeader appends magic, version and the original length.
func appendHeader(dst []byte, magic string, origLen int) []byte {
	dst = append(dst, magic...)
	dst = append(dst, formatVersion)
	return binary.AppendUvarint(dst, uint64(origLen))
}

// reader walks an archive with bounds checks. Every failure is a
// *CorruptError carrying the offset where it happened.
type reader struct {
	codec string
	b     []byte
	off   int
}

func (r *reader) corrupt(format string, args ...any) error {
	return &CorruptError{Codec: r.codec, Offset: int64(r.off), Reason: fmt.Sprintf(format, args...)}
}

func (r *reader) remaining() int { return len(r.b) - r.off }

// header checks magic and version and returns the declared original length.
func (r *reader) header(magic string) (int, error) {
	if len(r.b) < len(magic)+1 || string(r.b[:len(magic)]) != magic {
		return 0, fmt.Errorf("%w: %s wants magic %q", ErrFormat, r.codec, magic)
	}
	if v := r.b[len(magic)]; v != formatVersion {
		return 0, fmt.Errorf("%w: %s archive version %d, this build reads %d", ErrFormat, r.codec, v, formatVersion)
	}
	r.off = len(magic) + 1
	n, err := r.uvarint()
	if err != nil {
		return 0, err
	}
	if n > maxOriginal {
		return 0, r.corrupt("original length %d exceeds the %d-byte limit", n, uint64(maxOriginal))
	}
	return int(n), nil
}

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, r.corrupt("unexpected end of archive")
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

func (r *reader) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		if n == 0 {
			return 0, r.corrupt("unexpected end of archive")
		}
		return 0, r.corrupt("varint overflows 64 bits")
	}
	r.off += n
	return v, nil
}

// length reads a uvarint that must not exceed limit.
func (r *reader) length(limit int, what string) (int, error) {
	start := r.off
	v, err := r.uvarint()
	if err != nil {
		return 0, err
	}
	if v > uint64(limit) {
		r.off = start
		return 0, r.corrupt("%s %d exceeds %d", what, v, limit)
	}
	return int(v), nil
}

// bytes returns the next n bytes (aliasing the archive).
func (r *reader) bytes(n int) ([]byte, error) {
	if n < 0 || n > r.remaining() {
		return nil, r.corrupt("%d bytes needed, %d left", n, r.remaining())
	}
	b := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return b, nil
}

// trailer splits off the final CRC-32C, leaving it out of r.
func (r *reader) trailer() (uint32, error) {
	if r.remaining() < 4 {
		return 0, r.corrupt("archive too short for its checksum")
	}
	end := len(r.b) - 4
	sum := binary.LittleEndian.Uint32(r.b[end:])
	r.b = r.b[:end]
	return sum, nil
}

// verify compares the decoded output with the stored checksum.
func (r *reader) verify(out []byte, want uint32) error {
	if got := checksum(out); got != want {
		return &CorruptError{Codec: r.codec, Offset: int64(len(r.b)), Reason: fmt.Sprintf("checksum mismatch: decoded data has CRC-32C %08x, archive says %08x", got, want)}
	}
	return nil
}

func appendUvarint(dst []byte, v int) []byte { return binary.AppendUvarint(dst, uint64(v)) }

func appendUint32(dst []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(dst, v) }

// uvarintLen is the size of v as a uvarint.
func uvarintLen(v int) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// begin reads an archive's header and trailer and the segment count that
// follows the header; every segment entry takes at least minEntry bytes.
func (r *reader) begin(magic string, minEntry int) (origLen int, sum uint32, nseg int, err error) {
	if origLen, err = r.header(magic); err != nil {
		return
	}
	if sum, err = r.trailer(); err != nil {
		return
	}
	nseg, err = r.length(r.remaining()/minEntry, "segment count")
	return
}
