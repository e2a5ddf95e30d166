package main

import (
	"neuralzip/codec"
	"neuralzip/codec/baseline"
)

// setupCodecName is the bench codec "nzip with a setup".
const setupCodecName = "nzip+setup"

// gaussianCodecName is nzip with the built-in Gaussian setup (no -setup
// needed).
const gaussianCodecName = "nzip+gaussian"

// bestCodecName is the bench codec of nzip compress -best: every block's
// coding chosen by bytes alone (codec.EncodeOptions.Best).
const bestCodecName = "nzip-best"

// newSetupCodec is nzip with a setup behind the baseline interface, so that
// bench and setup compare measure it with the same harness as the others
// (baseline.MeasureCodec). It codes with the setup's chunk size, as
// compress -setup does.
func newSetupCodec(s *codec.Setup, external bool, threads int) baseline.Codec {
	return newSetupCodecOpt(s, codec.EncodeOptions{Threads: threads, SetupExternal: external})
}

// newSetupCodecOpt is newSetupCodec with more options; a zero ChunkValues
// means the setup's.
func newSetupCodecOpt(s *codec.Setup, opt codec.EncodeOptions) baseline.Codec {
	return newSetupCodecNamed(setupCodecName, s, opt)
}

// newSetupCodecNamed is newSetupCodecOpt under another codec name.
func newSetupCodecNamed(name string, s *codec.Setup, opt codec.EncodeOptions) baseline.Codec {
	opt.Setup = s
	if opt.ChunkValues == 0 {
		opt.ChunkValues = s.ChunkValues
	}
	return baseline.NewNZip(nil, name, opt)
}
