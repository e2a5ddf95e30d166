package main

import (
	"neuralzip/codec"
	"neuralzip/codec/baseline"
)

// setupCodecName is the bench codec "nzip with a setup".
const setupCodecName = "nzip+setup"

// newSetupCodec is nzip with a setup behind the baseline interface, so that
// bench and setup compare measure it with the same harness as the others
// (baseline.MeasureCodec). It codes with the setup's chunk size, as
// compress -setup does.
func newSetupCodec(s *codec.Setup, external bool, threads int) baseline.Codec {
	return baseline.NewNZip(setupCodecName, codec.Options{Threads: threads, Setup: s, SetupExternal: external, ChunkValues: s.ChunkValues})
}
