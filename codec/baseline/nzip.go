package baseline

import (
	"context"
	"neuralzip/codec"
)

// The nzip codec itself, behind the same interface as the baselines, so
// that every number in `nzip bench` comes from one harness.
func init() {
	Register("nzip", func(opt Options) (Codec, error) {
		return &nzipCodec{opt: codec.EncodeOptions{Threads: opt.Threads}}, nil
	})
}

type nzipCodec struct {
	name string
	opt  codec.EncodeOptions
	ctx  context.Context // cancels its work (nil: never)
}

// NewNZip returns the nzip codec with the given options (for example a
// setup: the bench codec "nzip+setup"); cancelling ctx (nil: never) stops
// its compressions and decompressions.
func NewNZip(ctx context.Context, name string, opt codec.EncodeOptions) Codec {
	return &nzipCodec{name: name, opt: opt, ctx: ctx}
}

func (c *nzipCodec) Name() string {
	if c.name == "" {
		return "nzip"
	}
	return c.name
}

func (c *nzipCodec) Compress(src []byte, segs []codec.Segment) ([]byte, error) {
	return codec.CompressBytes(c.ctx, src, segs, c.opt)
}

// Decompress checks every block's CRC-32C, as the other codecs check
// theirs; the whole-file SHA-256 (which nzip decompress and verify also
// check) is left to them, so the numbers compare decoding, not hashing.
func (c *nzipCodec) Decompress(comp []byte) ([]byte, error) {
	opt := c.opt.Decoding()
	opt.SkipHash = true
	return codec.DecompressBytes(c.ctx, comp, opt)
}
