package baseline

// gzip: DEFLATE at gzip's default level 6 over the whole file, in one gzip
// member. It is the codec most people reach for first, so it anchors the
// comparison, and it should compress like `gzip -6` does.
//
// The writer is the standard library's compress/gzip at level 6, whose
// compress/flate uses zlib's level-6 lazy matching (good 8, lazy 16, nice 128,
// chain 128), so it compresses like GNU gzip -6: 1.279x on bench/real-bf16
// where gzip 1.12 -6 gives 1.268x. klauspost/compress/gzip's levels 1-6 are
// its own fast encoders, which hardly code literal-only blocks and give 1.03x
// there; that is available as "gzip-fast" for comparison. Archives are read
// with klauspost/compress/gzip, the format being the same and its reader
// faster.
//
// Source: P. Deutsch, "DEFLATE Compressed Data Format Specification version
// 1.3", RFC 1951, and "GZIP file format specification version 4.3", RFC 1952;
// compress/gzip, github.com/klauspost/compress/gzip.

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"

	"neuralzip/codec"
)

// gzipMaxRatio bounds how much one DEFLATE byte can decode to: a 258-byte
// match costs at least two bits, so 1032:1 (plus slack for the gzip framing).
const gzipMaxRatio = 1032

type gzipCodec struct {
	name string
	fast bool // klauspost's default level instead of zlib-style level 6
}

func newGzip(name string, _ Options) *gzipCodec {
	return &gzipCodec{name: name, fast: name == "gzip-fast"}
}

func (c *gzipCodec) Name() string { return c.name }

// Compress ignores segs: gzip sees the file as bytes. It is single-threaded.
func (c *gzipCodec) Compress(src []byte, segs []codec.Segment) ([]byte, error) {
	if _, err := spans(len(src), segs, opaqueOnly); err != nil {
		return nil, err
	}
	buf := bytes.NewBuffer(appendHeader(make([]byte, 0, len(src)/2+64), magicGzip, len(src)))
	var w io.WriteCloser
	var err error
	if c.fast {
		w, err = gzip.NewWriterLevel(buf, gzip.DefaultCompression)
	} else {
		w, err = stdgzip.NewWriterLevel(buf, 6)
	}
	if err != nil {
		return nil, fmt.Errorf("baseline: gzip: %w", err)
	}
	if _, err := w.Write(src); err != nil {
		return nil, fmt.Errorf("baseline: gzip: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("baseline: gzip: %w", err)
	}
	return buf.Bytes(), nil
}

func (c *gzipCodec) Decompress(comp []byte) ([]byte, error) {
	r := &reader{codec: "gzip", b: comp}
	n, err := r.header(magicGzip)
	if err != nil {
		return nil, err
	}
	member := r.b[r.off:]
	// The gzip trailer repeats the length (mod 2^32): check it, and that the
	// member can hold n bytes at all, before allocating n bytes.
	if len(member) < 18 {
		return nil, r.corrupt("gzip member of %d bytes is too short", len(member))
	}
	if isize := binary.LittleEndian.Uint32(member[len(member)-4:]); isize != uint32(n) {
		return nil, r.corrupt("gzip trailer says %d bytes (mod 2^32), archive says %d", isize, n)
	}
	if uint64(n) > uint64(len(member))*gzipMaxRatio {
		return nil, r.corrupt("%d gzip bytes cannot hold %d bytes", len(member), n)
	}
	br := bytes.NewReader(member)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, r.corrupt("gzip: %v", err)
	}
	zr.Multistream(false)
	out := make([]byte, n)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, r.corrupt("gzip: %v", err)
	}
	// The next read must hit the end of the member, which also checks its
	// CRC-32 and length.
	var one [1]byte
	if k, err := zr.Read(one[:]); k != 0 || err != io.EOF {
		if err == nil || err == io.EOF {
			return nil, r.corrupt("gzip member holds more than %d bytes", n)
		}
		return nil, r.corrupt("gzip: %v", err)
	}
	if br.Len() != 0 {
		return nil, r.corrupt("%d bytes after the gzip member", br.Len())
	}
	return out, nil
}

// Threads reports that a gzip call runs on one goroutine whatever
// Options.Threads says (bench reports this).
func (c *gzipCodec) Threads() int { return 1 }
