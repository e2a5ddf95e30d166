//go:build amd64 && !noasm && gc

package codec

import (
	"golang.org/x/sys/cpu"
)

// useAVX2 selects the assembly fast paths; tests turn it off to check the
// pure-Go twins.
var useAVX2 = cpu.X86.HasAVX2

// useAVX512 selects the AVX-512 paths (F, BW and VBMI), also only with useAVX2.
var useAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VBMI

// useAVX512G selects the AVX-512 ungrouping (BW, VBMI2 and BMI1, POPCNT
// besides).
var useAVX512G = useAVX512 && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VBMI2 && cpu.X86.HasBMI1 && cpu.X86.HasPOPCNT

// useAVX512W selects the AVX-512 decoding of 2- and 4-byte values in 16-
// and 32-bit lanes (F, BW, VBMI, VBMI2; DQ too for 4-byte values).
var useAVX512W = useAVX512 && cpu.X86.HasAVX512VBMI2

// useAVX512Q selects the AVX-512 decoding of 4-byte values (F, DQ, VBMI).
var useAVX512Q = useAVX512 && cpu.X86.HasAVX512DQ

// useAVX512BW selects the AVX-512 pair expansion (F, BW).
var useAVX512BW = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// useAVX512T selects the AVX-512 token coding (F, CD).
var useAVX512T = cpu.X86.HasAVX512F && cpu.X86.HasAVX512CD
