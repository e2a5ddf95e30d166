//go:build amd64 && !noasm && gc

package codec

import "golang.org/x/sys/cpu"

func cpuFeatures() features {
	x := &cpu.X86
	avx512 := x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VBMI
	return features{
		avx2:         x.HasAVX2,
		avx512:       avx512,
		avx512Group:  avx512 && x.HasAVX512BW && x.HasAVX512VBMI2 && x.HasBMI1 && x.HasPOPCNT,
		avx512Lanes:  avx512 && x.HasAVX512VBMI2,
		avx512Wide:   avx512 && x.HasAVX512DQ,
		avx512Pairs:  x.HasAVX512F && x.HasAVX512BW,
		avx512Tokens: x.HasAVX512F && x.HasAVX512CD,
		avx512Gather: x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VBMI2 && x.HasPOPCNT,
		switchAsm:    x.HasBMI1 && x.HasBMI2,
	}
}
