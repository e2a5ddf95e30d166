//go:build amd64 && !noasm && gc

package huff

import "golang.org/x/sys/cpu"

func cpuFeatures() Features {
	x := &cpu.X86
	return Features{
		StreamAsm:    x.HasAVX2,
		Enc2:         x.HasBMI2,
		DecAsm:       x.HasBMI1 && x.HasBMI2,
		DoubleAVX512: x.HasAVX512F,
	}
}
