// Package gpu decodes .nzip archives on data-parallel devices, bit-exact.
//
// NewPlan cuts one archived file into flat job lists (plan.go): a thread
// per huff0 bit stream (kernel huff_decode), per 256 pair codes
// (pair_count, pair_expand) and per pair stream (pair_scan), and a thread
// per value (merge, exp_hist). The float blocks of the fields form — the
// weights — and sparse float blocks (their zero masks decoded here by the
// planner, the nonzero values scattered by merge) go to the device;
// everything else (zstd, stored, reference, duplicate, F64 and setup-table
// blocks) to the CPU through package codec.
// DecodeFile joins the two and checks every device block's CRC-32C and
// the file's digest (BLAKE3, or SHA-256 in archives before version 7).
//
// Backends: "cpu" runs the kernels' Go twin (twin.go) on goroutines and is
// the reference; "cuda" opens the NVIDIA driver at run time with purego
// (no cgo) and loads kernels/decode.ptx, compiled from kernels/decode.cu by
// scripts/ptx.sh. Without a driver it reports why (Unavailable). The tests
// build decode.cu as C++ behind a stand-in driver (kernels/fakecuda.cc), so
// the CUDA backend's plumbing and the kernels' C code run against the twin
// on machines without a GPU.
//
// The archive format is unchanged for the device: a 65536-value block's
// symbols are four huff0 sub-streams with stored offsets (the jump table),
// so 1 GB of BF16 gives about 32 000 independent streams of 16 384 symbols.
package gpu
