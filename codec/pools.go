package codec

import (
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Shared coders. zstd encoders and decoders are safe for concurrent
// EncodeAll/DecodeAll and costly to create (their tables are megabytes), so
// there is one per zstd level and one decoder for the whole process; block
// coders keep their buffers in pools between calls.

var zstdEncoders struct {
	sync.Mutex
	byLevel map[int]*zstd.Encoder
}

// zstdEncoder returns the shared encoder for a zstd level.
func zstdEncoder(level int) (*zstd.Encoder, error) {
	zstdEncoders.Lock()
	defer zstdEncoders.Unlock()
	if e := zstdEncoders.byLevel[level]; e != nil {
		return e, nil
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
		zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true),
		zstd.WithLowerEncoderMem(true), zstd.WithAllLitEntropyCompression(true))
	if err != nil {
		return nil, err
	}
	if zstdEncoders.byLevel == nil {
		zstdEncoders.byLevel = map[int]*zstd.Encoder{}
	}
	zstdEncoders.byLevel[level] = e
	return e, nil
}

var zstdDecoders struct {
	once         sync.Once
	block, index *zstd.Decoder
	err          error
}

// zstdDecoder returns the shared decoder for blocks (at most maxBlockLen
// bytes) or for indexes (at most maxIndexRaw).
func zstdDecoder(index bool) (*zstd.Decoder, error) {
	z := &zstdDecoders
	z.once.Do(func() {
		// DecodeAll stops at cap(dst): a frame that declares no size
		// must not decode past the length the index or trailer gives
		// (up to the decoder's memory limit) before it is found wrong.
		z.block, z.err = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxBlockLen), zstd.WithDecoderConcurrency(0), zstd.WithDecodeAllCapLimit(true))
		if z.err == nil {
			z.index, z.err = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxIndexRaw), zstd.WithDecoderConcurrency(0), zstd.WithDecodeAllCapLimit(true))
		}
	})
	if index {
		return z.index, z.err
	}
	return z.block, z.err
}

// zstdDecode decodes one zstd frame that must decode to exactly want bytes
// into dst[:0] (cap ≥ want). A frame that declares another size is rejected
// before anything is allocated; one that declares none is bounded by the
// decoder's limit.
func zstdDecode(dst, src []byte, want int, index bool) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(src); err != nil {
		return nil, errf("zstd header: %v", err)
	}
	if h.HasFCS && h.FrameContentSize != uint64(want) {
		return nil, errf("zstd frame declares %d bytes, want %d", h.FrameContentSize, want)
	}
	d, err := zstdDecoder(index)
	if err != nil {
		return nil, err
	}
	out, err := d.DecodeAll(src, dst[:0])
	if err != nil {
		return nil, errf("zstd: %v", err)
	}
	if len(out) != want {
		return nil, errf("zstd: %d bytes, want %d", len(out), want)
	}
	return out, nil
}

// zstdDecodeInto decodes one zstd frame of a block's payload that must
// decode to exactly len(dst) bytes into dst.
func zstdDecodeInto(dst, src []byte) error {
	out, err := zstdDecode(dst[:0:len(dst)], src, len(dst), false) // cap-limited: DecodeAll may use spare capacity
	if err != nil {
		return err
	}
	if len(out) > 0 && &out[0] != &dst[0] {
		copy(dst, out)
	}
	return nil
}

var blockEncoders = sync.Pool{New: func() any { return &blockEncoder{} }}
var blockDecoders = sync.Pool{New: func() any { return &blockDecoder{} }}
