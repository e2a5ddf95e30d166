package checkpoint

import "neuralzip/dtype"

// A ggmlType describes how ggml stores one element type: blocks of blck
// elements taking size bytes each. Types that package dtype covers map to
// it; quantised types have dt == dtype.Invalid.
type ggmlType struct {
	name string
	blck int64 // elements per block
	size int64 // bytes per block
	dt   dtype.DType
}

// qk is QK_K, the super-block size of the k-quants and i-quants.
const qk = 256

// ggmlTypes is indexed by the ggml_type value stored in GGUF tensor infos.
// Block and type sizes follow ggml/src/ggml-common.h (the block_* structs and
// their static_asserts) and GGML_QUANT_SIZES in gguf-py/gguf/constants.py of
// ggml-org/llama.cpp. Values 4 and 5 (Q4_2, Q4_3), 31 to 33 (Q4_0_4_4,
// Q4_0_4_8, Q4_0_8_8) and 36 to 38 (IQ4_NL_4_4, ...) were removed from ggml
// and are not accepted in files. Q8_1 is 36 bytes as in ggml (2 halves and
// 32 quants); gguf-py still lists the older 40-byte float layout, but Q8_1 is
// an intermediate type that is not stored in files.
var ggmlTypes = [...]ggmlType{
	0:  {"F32", 1, 4, dtype.F32},
	1:  {"F16", 1, 2, dtype.F16},
	2:  {"Q4_0", 32, 2 + 16, dtype.Invalid},
	3:  {"Q4_1", 32, 2 + 2 + 16, dtype.Invalid},
	6:  {"Q5_0", 32, 2 + 4 + 16, dtype.Invalid},
	7:  {"Q5_1", 32, 2 + 2 + 4 + 16, dtype.Invalid},
	8:  {"Q8_0", 32, 2 + 32, dtype.Invalid},
	9:  {"Q8_1", 32, 2 + 2 + 32, dtype.Invalid},
	10: {"Q2_K", qk, 2 + 2 + qk/16 + qk/4, dtype.Invalid},
	11: {"Q3_K", qk, 2 + qk/4 + qk/8 + 12, dtype.Invalid},
	12: {"Q4_K", qk, 2 + 2 + qk/2 + 12, dtype.Invalid},
	13: {"Q5_K", qk, 2 + 2 + qk/2 + qk/8 + 12, dtype.Invalid},
	14: {"Q6_K", qk, 2 + qk/2 + qk/4 + qk/16, dtype.Invalid},
	15: {"Q8_K", qk, 4 + qk + qk/8, dtype.Invalid},
	16: {"IQ2_XXS", qk, 2 + qk/4, dtype.Invalid},
	17: {"IQ2_XS", qk, 2 + qk/4 + qk/32, dtype.Invalid},
	18: {"IQ3_XXS", qk, 2 + qk/4 + qk/8, dtype.Invalid},
	19: {"IQ1_S", qk, 2 + qk/8 + qk/16, dtype.Invalid},
	20: {"IQ4_NL", 32, 2 + 16, dtype.Invalid},
	21: {"IQ3_S", qk, 2 + qk/4 + qk/8 + qk/32 + 4, dtype.Invalid},
	22: {"IQ2_S", qk, 2 + qk/4 + qk/16, dtype.Invalid},
	23: {"IQ4_XS", qk, 2 + 2 + qk/2 + qk/64, dtype.Invalid},
	24: {"I8", 1, 1, dtype.I8},
	25: {"I16", 1, 2, dtype.I16},
	26: {"I32", 1, 4, dtype.I32},
	27: {"I64", 1, 8, dtype.I64},
	28: {"F64", 1, 8, dtype.F64},
	29: {"IQ1_M", qk, qk/8 + qk/16 + qk/32, dtype.Invalid},
	30: {"BF16", 1, 2, dtype.BF16},
	34: {"TQ1_0", qk, 2 + 4*13, dtype.Invalid},
	35: {"TQ2_0", qk, 2 + 64, dtype.Invalid},
	39: {"MXFP4", 32, 1 + 16, dtype.Invalid},
	40: {"NVFP4", 64, 4 + 32, dtype.Invalid},
	41: {"Q1_0", 128, 2 + 16, dtype.Invalid},
}

// lookupGGML returns the description of a ggml type value.
func lookupGGML(t uint32) (ggmlType, bool) {
	if t >= uint32(len(ggmlTypes)) || ggmlTypes[t].blck == 0 {
		return ggmlType{}, false
	}
	return ggmlTypes[t], true
}

// nbytes returns the size in bytes of numel elements of this type; numel
// must be a whole number of blocks. ok is false when the size overflows.
func (t ggmlType) nbytes(numel int64) (n int64, ok bool) {
	blocks := numel / t.blck
	if blocks > maxInt64/t.size {
		return 0, false
	}
	return blocks * t.size, true
}
