package baseline

import (
	"neuralzip/codec"
)

// The nzip codec itself, behind the same interface as the baselines, so
// that every number in `nzip bench` comes from one harness.
func init() {
	Register("nzip", func(opt Options) (Codec, error) {
		return &nzipCodec{opt: codec.Options{Threads: opt.Threads}}, nil
	})
}

type nzipCodec struct {
	name string
	opt  codec.Options
}

// NewNZip returns the nzip codec with the given options (for example a
// setup: the bench codec "nzip+setup").
func NewNZip(name string, opt codec.Options) Codec { return &nzipCodec{name: name, opt: opt} }

func (c *nzipCodec) Name() string {
	if c.name == "" {
		return "nzip"
	}
	return c.name
}

func (c *nzipCodec) Compress(src []byte, segs []codec.Segment) ([]byte, error) {
	return codec.CompressBytes(src, segs, c.opt)
}

// Decompress checks every block's CRC-32C, as the other codecs check
// theirs; the whole-file SHA-256 (which nzip decompress and verify also
// check) is left to them, so the numbers compare decoding, not hashing.
func (c *nzipCodec) Decompress(comp []byte) ([]byte, error) {
	opt := c.opt
	opt.SkipHash = true
	return codec.DecompressBytes(comp, opt)
}
