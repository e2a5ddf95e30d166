package codec

// Choosing a coding by bytes and time.
//
// Where the encoder has codings of one block that decode at different
// speeds, the default path takes a slower one only where the bytes it
// saves pay for the decoding time it adds, at one exchange rate:
// exchangePsPerByte picoseconds of extra decoding (on one core) for each
// byte saved. EncodeOptions.Best (nzip compress -best) chooses by bytes
// alone. The extra costs below are per value of the block, measured as
// the difference of whole-file decoding times on one core (docs/benchmarks.md,
// "Bytes and time"); the rate is set so that the default path decodes
// dense-with-zeros weights as fast as dense ones while real sparse
// activations, where the slow mask saves several per cent, keep it.
//
// The rule is an encoder choice, not the format: readers accept every
// coding either way.
const (
	// exchangePsPerByte: a slower coding must save one byte per this
	// many picoseconds of decoding it adds.
	exchangePsPerByte = 2_000_000

	// costColumnsPs: the column-context range-coded zero mask
	// (maskColumns) over the bitmap or gaps mask, per value of the block.
	costColumnsPs = 12_000

	// costCMPs: a cm block (context-modelled bytes, package bytecm,
	// about 17 MB/s) over its zstd block, per byte of the block: it
	// would have to save 2.5 % of the block's bytes; on real quantised
	// weights it saves 0.1-2 % (handtrack 1.8 %, a Q4_K GGUF 0.12 %), so
	// the default path does not try it at all (Encode) and only Best
	// writes cm blocks
	costCMPs = 50_000

	// costRecordsPs: a records block (quantised records as field
	// streams, records.go) over a zstd block of the same bytes, per byte
	// of the block: records decode at 0.75-1.1 GB/s a core, zstd blocks
	// of such bytes at 4-11 GB/s (most are stored raw inside the frame);
	// so a records block must save 1/2000 of its bytes, and on the real
	// files it saves 0.5-7 %
	costRecordsPs = 1_000

	// costRepeatPs: a repeat block (a float tensor's rows as matches of
	// each other, repeat.go) over the float coder's or zstd's blocks of
	// the same tensor, per value: its symbols decode at ~30 ns a value
	// (100-140 MB/s of F32, go test ./codec/prog -bench Repeat), so it
	// must save a byte per ~70 values; the DFT and DCT bases it is made
	// for save a byte per 1-3 values
	costRepeatPs = 30_000
)

// slowerPays reports whether a coding of a block of n values that saves
// saved bytes and decodes extraPs picoseconds a value slower is worth
// taking on the default path.
func slowerPays(saved, n int, extraPs int64) bool {
	return int64(saved)*exchangePsPerByte >= int64(n)*extraPs
}
