package huff

// Features says which fast paths run. Every fast path has a pure-Go twin;
// tests compare the two by switching tiers off through SetFeatures.
type Features struct {
	StreamAsm    bool // AVX2: one stream encoded in assembly (encodeHuffStreamAsm, twin encodeHuffStream)
	Enc2         bool // BMI2: two streams encoded at once (huffEnc2Asm, twin huffEnc2Go)
	DecAsm       bool // BMI1, BMI2: Decoder's assembly rounds (twins fast4Go, fast1Go)
	DoubleAVX512 bool // AVX-512F: Decoder's two-symbol table built 16 entries at a time (twin buildDoubleGo)
	// a choice, not a CPU feature
	Two bool // Decoder may use two-symbol tables
}

// use is the fast paths in use: what the CPU and the build allow (no
// assembly under the noasm tag, on other architectures and other
// compilers), with two-symbol tables on.
var use = func() Features {
	f := cpuFeatures()
	f.Two = true
	return f
}()

// Use is the fast paths in use.
func Use() Features { return use }

// SetFeatures makes f the fast paths in use and returns what restores the
// ones before. It is for tests that compare tiers, here and in callers;
// nothing may be coding while it runs.
func SetFeatures(f Features) (restore func()) {
	saved := use
	use = f
	return func() { use = saved }
}
