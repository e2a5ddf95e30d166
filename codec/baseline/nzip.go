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

type nzipCodec struct{ opt codec.Options }

func (c *nzipCodec) Name() string { return "nzip" }

func (c *nzipCodec) Compress(src []byte, segs []codec.Segment) ([]byte, error) {
	return codec.CompressBytes(src, segs, c.opt)
}

func (c *nzipCodec) Decompress(comp []byte) ([]byte, error) {
	return codec.DecompressBytes(comp, c.opt)
}
