package codec

import "neuralzip/codec/huff"

// features says which fast paths run. use holds what the CPU and the build
// allow (cpuFeatures: none under noasm, on other architectures and other
// compilers); every fast path has a pure-Go twin, and tests switch tiers
// off through setFeatures, which restores them, to compare the two.
type features struct {
	avx2 bool // AVX2 and scalar assembly: float split/merge, pair expansion and pairize, reference blocks
	// AVX-512 tiers, each used only with avx2
	avx512       bool          // F, BW, VBMI: F16/F32 split and merge, unpacking, reference deltas and exponents
	avx512Group  bool          // and VBMI2, BMI1, POPCNT: reference-block ungrouping (refUngroupAVX512, refCountGroupsAVX512)
	avx512Lanes  bool          // and VBMI2: reference deltas in 16- and 32-bit lanes (refDeltasAdd16W, refDeltasAdd32D)
	avx512Wide   bool          // and DQ: reference blocks of 4-byte values
	avx512Pairs  bool          // F, BW: pair expansion with escapes (expandPairsWide)
	avx512Tokens bool          // F, CD: reference token coding
	avx512Gather bool          // F, BW, VBMI2, POPCNT: the sparse coder's gather (gatherNonzeroAVX512)
	switchAsm    bool          // BMI1, BMI2: method-3 token rounds (refSwitchRounds, twin fast8Go)
	huff         huff.Features // package huff's, which reads its own copy (setFeatures sets both)
	// choices, not CPU features
	huffX        bool // huff.Decoder decodes every Huffman block (where it has its assembly), else huff0
	switchRounds bool // method-3 tokens in rounds (fast8) where they can; off: window and tail alone, every read checked
}

// use is the fast paths in use.
var use = func() features {
	f := cpuFeatures()
	f.huff = huff.Use()
	f.huffX = f.huff.DecAsm
	f.switchRounds = true
	return f
}()
