package baseline

// zstd: the general-purpose baseline. The whole file goes through one
// klauspost/compress zstd EncodeAll call, so LZ matching sees the whole file;
// levels map to the library's four encoders through EncoderLevelFromZstd
// (1-2 fastest, 3-5 default, 6-9 better, 10-22 best).
//
// Literal entropy coding: klauspost's encoder leaves the literals of
// match-free blocks uncompressed at its fastest and default levels unless
// WithAllLitEntropyCompression is set; C zstd Huffman-codes literals at every
// non-negative level. Raw weights have almost no matches, so without it
// zstd-1/zstd-3 barely compress BF16 at all: on bench/real-bf16 zstd-3 gives
// 1.273x with it (C zstd -3: 1.273x) and 1.021x without. The registered names
// turn it on at every level to match C zstd; "zstd-<level>-nolit" keeps the
// library default for comparison. Levels 10 to 22 all use klauspost's best
// encoder, which is faster and compresses somewhat less than C zstd -19.
//
// Source: Y. Collet, M. Kucherawy, "Zstandard Compression and the
// 'application/zstd' Media Type", RFC 8878; github.com/klauspost/compress/zstd.

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"

	"neuralzip/codec"
)

// zstdDefaultLit is the literal entropy setting of the plain "zstd-<level>"
// names (see the file comment).
const zstdDefaultLit = true

// zstdMaxRatio bounds how much one archive byte can decode to: a zstd RLE
// block is 4 bytes for at most 128 KiB (RFC 8878 §3.1.1.2), the same bound the
// klauspost decoder uses before it allocates.
const zstdMaxRatio = (128 << 10) / 4

type zstdCodec struct {
	name string
	enc  *zstd.Encoder
}

func newZstd(name string, level int, lit bool, opt Options) (*zstdCodec, error) {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
		zstd.WithAllLitEntropyCompression(lit),
		zstd.WithEncoderConcurrency(opt.threads()),
	)
	if err != nil {
		return nil, fmt.Errorf("baseline: %s: %w", name, err)
	}
	return &zstdCodec{name: name, enc: enc}, nil
}

func (c *zstdCodec) Name() string { return c.name }

// Compress ignores segs: zstd sees the file as bytes.
func (c *zstdCodec) Compress(src []byte, segs []codec.Segment) ([]byte, error) {
	if _, err := spans(len(src), segs, opaqueOnly); err != nil {
		return nil, err
	}
	dst := appendHeader(make([]byte, 0, len(src)/2+64), magicZstd, len(src))
	if len(src) == 0 {
		return dst, nil // no frame for nothing
	}
	return c.enc.EncodeAll(src, dst), nil
}

func (c *zstdCodec) Decompress(comp []byte) ([]byte, error) {
	r := &reader{codec: "zstd", b: comp}
	n, err := r.header(magicZstd)
	if err != nil {
		return nil, err
	}
	return zstdDecode(r, r.b[r.off:], nil, n, true)
}

// zstdDecode decodes one zstd frame that must hold exactly n bytes and
// appends them to dst. r positions errors. When alloc is false dst must
// already have room for n bytes, so decoding does not allocate.
func zstdDecode(r *reader, frame, dst []byte, n int, alloc bool) ([]byte, error) {
	if n == 0 {
		if len(frame) != 0 {
			return nil, r.corrupt("%d bytes of data for an empty original", len(frame))
		}
		return dst, nil
	}
	var h zstd.Header
	if err := h.Decode(frame); err != nil {
		return nil, r.corrupt("zstd frame header: %v", err)
	}
	// EncodeAll stores the content size in every frame of 256 bytes or
	// more: two independent fields must agree before n bytes are allocated.
	if h.Skippable || (h.HasFCS && h.FrameContentSize != uint64(n)) || (!h.HasFCS && n >= 256) {
		return nil, r.corrupt("zstd frame holds %d bytes (known: %v), archive says %d", h.FrameContentSize, h.HasFCS, n)
	}
	if uint64(n) > uint64(len(frame))*zstdMaxRatio {
		return nil, r.corrupt("%d zstd bytes cannot hold %d bytes", len(frame), n)
	}
	if alloc && cap(dst)-len(dst) < n {
		dst = append(make([]byte, 0, len(dst)+n), dst...)
	}
	if cap(dst)-len(dst) < n {
		return nil, r.corrupt("internal: no room for %d bytes", n)
	}
	start := len(dst)
	out, err := zstdDecoder().DecodeAll(frame, dst[:start:start+n])
	if err != nil {
		return nil, r.corrupt("zstd: %v", err)
	}
	if len(out)-start != n {
		return nil, r.corrupt("zstd frame decoded to %d bytes, want %d", len(out)-start, n)
	}
	return dst[:start+n], nil
}

// zstdDecoder is shared by every codec: DecodeAll is safe for concurrent
// use. DecodeAll is limited to the capacity of dst (which is the
// cross-checked original length), so a corrupt frame cannot make it
// allocate; WithDecoderMaxMemory caps the rest.
var zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxMemory(maxOriginal),
	)
	if err != nil {
		panic("baseline: zstd decoder options: " + err.Error())
	}
	return d
})

// zstdEncoder returns the shared level-3 encoder (literal entropy on) that
// zipnn and dfloat11 use for bytes they do not model.
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithAllLitEntropyCompression(true),
		zstd.WithEncoderConcurrency(0),
	)
	if err != nil {
		panic("baseline: zstd encoder options: " + err.Error())
	}
	return e
})

// Threads reports that a zstd call runs on one goroutine whatever
// Options.Threads says (bench reports this).
func (c *zstdCodec) Threads() int { return 1 }
