//go:build amd64 && !noasm && gc

package b3

import "golang.org/x/sys/cpu"

// useAVX512: the 16-way kernels of b3_amd64.s (a variable so that tests
// compare them with the other path).
var useAVX512 = cpu.X86.HasAVX512F

//go:noescape
func chunks16(cvs *[8][16]uint32, buf *[GroupSize]byte, lo, hi uint32)

//go:noescape
func parents16(cvs *[8][16]uint32, left, right *[8][16]uint32)
