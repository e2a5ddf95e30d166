//go:build ignore

// gen writes b3_amd64.s, the 16-way AVX-512 BLAKE3 compression kernels:
//
//	go run gen.go
//
// Each zmm register holds one state or message word of 16 independent
// compressions (one per lane). Chunks16 compresses the 16 chunks of a
// 16 KiB group side by side, loading each lane's 64-byte block with
// plain loads and transposing them in registers (no gathers: they are
// slow on AMD cores); Parents16 compresses 16 parent nodes whose
// children's chaining values are given word by word.
package main

import (
	"bytes"
	"fmt"
	"os"
)

var out bytes.Buffer

func p(format string, args ...any) { fmt.Fprintf(&out, "\t"+format+"\n", args...) }

// state word i is in Z(i); message word i in Z(msg[i])
var msg [16]int

func z(i int) string { return fmt.Sprintf("Z%d", i) }

// g is the quarter-round on columns/diagonals, four at once, step by step
// so that the four chains interleave.
func g4(a, b, c, d [4]int, mx, my [4]int) {
	for i := 0; i < 4; i++ {
		p("VPADDD %s, %s, %s", z(b[i]), z(a[i]), z(a[i]))
	}
	for i := 0; i < 4; i++ {
		p("VPADDD %s, %s, %s", z(msg[mx[i]]), z(a[i]), z(a[i]))
	}
	for i := 0; i < 4; i++ {
		p("VPXORD %s, %s, %s", z(a[i]), z(d[i]), z(d[i]))
	}
	for i := 0; i < 4; i++ {
		p("VPRORD $16, %s, %s", z(d[i]), z(d[i]))
	}
	for i := 0; i < 4; i++ {
		p("VPADDD %s, %s, %s", z(d[i]), z(c[i]), z(c[i]))
	}
	for i := 0; i < 4; i++ {
		p("VPXORD %s, %s, %s", z(c[i]), z(b[i]), z(b[i]))
	}
	for i := 0; i < 4; i++ {
		p("VPRORD $12, %s, %s", z(b[i]), z(b[i]))
	}
	for i := 0; i < 4; i++ {
		p("VPADDD %s, %s, %s", z(b[i]), z(a[i]), z(a[i]))
	}
	for i := 0; i < 4; i++ {
		p("VPADDD %s, %s, %s", z(msg[my[i]]), z(a[i]), z(a[i]))
	}
	for i := 0; i < 4; i++ {
		p("VPXORD %s, %s, %s", z(a[i]), z(d[i]), z(d[i]))
	}
	for i := 0; i < 4; i++ {
		p("VPRORD $8, %s, %s", z(d[i]), z(d[i]))
	}
	for i := 0; i < 4; i++ {
		p("VPADDD %s, %s, %s", z(d[i]), z(c[i]), z(c[i]))
	}
	for i := 0; i < 4; i++ {
		p("VPXORD %s, %s, %s", z(c[i]), z(b[i]), z(b[i]))
	}
	for i := 0; i < 4; i++ {
		p("VPRORD $7, %s, %s", z(b[i]), z(b[i]))
	}
}

var perm = [16]int{2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8}

// rounds emits BLAKE3's seven rounds on Z0..Z15 with the message in
// Z16..Z31, then the chaining value Z0..Z7 ^= Z8..Z15.
func rounds() {
	for i := range msg {
		msg[i] = 16 + i
	}
	for r := 0; r < 7; r++ {
		p("// round %d", r+1)
		g4([4]int{0, 1, 2, 3}, [4]int{4, 5, 6, 7}, [4]int{8, 9, 10, 11}, [4]int{12, 13, 14, 15},
			[4]int{0, 2, 4, 6}, [4]int{1, 3, 5, 7})
		g4([4]int{0, 1, 2, 3}, [4]int{5, 6, 7, 4}, [4]int{10, 11, 8, 9}, [4]int{15, 12, 13, 14},
			[4]int{8, 10, 12, 14}, [4]int{9, 11, 13, 15})
		var next [16]int
		for i := range next {
			next[i] = msg[perm[i]]
		}
		msg = next
	}
	for i := 0; i < 8; i++ {
		p("VPXORD %s, %s, %s", z(i+8), z(i), z(i))
	}
}

// initState sets Z8..Z15: the IV's first words, the counters, the block
// length and the flags, from the frame (see the TEXT lines).
func initState(flags string) {
	p("VPBROADCASTD iv<>+0(SB), Z8")
	p("VPBROADCASTD iv<>+4(SB), Z9")
	p("VPBROADCASTD iv<>+8(SB), Z10")
	p("VPBROADCASTD iv<>+12(SB), Z11")
	p("VMOVDQU32 ctrlo-64(SP), Z12")
	p("VMOVDQU32 ctrhi-128(SP), Z13")
	p("VPBROADCASTD blocklen<>+0(SB), Z14")
	p("VPBROADCASTD %s, Z15", flags)
}

// transpose turns the 16 rows in Z16..Z31 (row i: lane i's 16 words)
// into 16 columns (Z16+w: word w of every lane), with Z0..Z15 as
// scratch.
func transpose() {
	// 32-bit interleave: t[2k] = lo(r[2k], r[2k+1]), t[2k+1] = hi(...)
	for k := 0; k < 8; k++ {
		p("VPUNPCKLDQ Z%d, Z%d, Z%d", 17+2*k, 16+2*k, 2*k)
		p("VPUNPCKHDQ Z%d, Z%d, Z%d", 17+2*k, 16+2*k, 2*k+1)
	}
	// 64-bit interleave of pairs of those: for rows 4q..4q+3
	for q := 0; q < 4; q++ {
		a, b := 4*q, 4*q+2 // lo and hi of (r4q, r4q+1) are a, a+1; of (r4q+2, r4q+3): b, b+1
		p("VPUNPCKLQDQ Z%d, Z%d, Z%d", b, a, 16+4*q)
		p("VPUNPCKHQDQ Z%d, Z%d, Z%d", b, a, 17+4*q)
		p("VPUNPCKLQDQ Z%d, Z%d, Z%d", b+1, a+1, 18+4*q)
		p("VPUNPCKHQDQ Z%d, Z%d, Z%d", b+1, a+1, 19+4*q)
	}
	// Now Z16+4q+j holds, in each 128-bit lane L (0..3), words 4L+j' of
	// rows 4q..4q+3 where j' = j (words 0,1,2,3 of the 128-bit lane's
	// source). 128-bit interleave: combine row groups q=0,1 and q=2,3.
	for j := 0; j < 4; j++ {
		p("VSHUFI32X4 $0x88, Z%d, Z%d, Z%d", 20+j, 16+j, j)    // lanes 0,2 of q0 then 0,2 of q1
		p("VSHUFI32X4 $0xdd, Z%d, Z%d, Z%d", 20+j, 16+j, 4+j)  // lanes 1,3
		p("VSHUFI32X4 $0x88, Z%d, Z%d, Z%d", 28+j, 24+j, 8+j)  // q2, q3
		p("VSHUFI32X4 $0xdd, Z%d, Z%d, Z%d", 28+j, 24+j, 12+j) //
	}
	// Z(j) = [q0.L0, q0.L2, q1.L0, q1.L2] word j; Z(4+j): L1, L3; likewise
	// Z(8+j), Z(12+j) for q2, q3. Final: word 4L+j of rows 0..15 =
	// [q0.L, q1.L, q2.L, q3.L].
	for j := 0; j < 4; j++ {
		p("VSHUFI32X4 $0x88, Z%d, Z%d, Z%d", 8+j, j, 16+j)    // L0: q0,q1 from Z(j) 128-lanes 0,2; q2,q3 from Z(8+j) 0,2
		p("VSHUFI32X4 $0xdd, Z%d, Z%d, Z%d", 8+j, j, 24+j)    // L2
		p("VSHUFI32X4 $0x88, Z%d, Z%d, Z%d", 12+j, 4+j, 20+j) // L1
		p("VSHUFI32X4 $0xdd, Z%d, Z%d, Z%d", 12+j, 4+j, 28+j) // L3
	}
}

func main() {
	fmt.Fprint(&out, `// Code generated by gen.go (go run gen.go). DO NOT EDIT.

//go:build amd64 && !noasm && gc

#include "textflag.h"

DATA iv<>+0(SB)/4, $0x6a09e667
DATA iv<>+4(SB)/4, $0xbb67ae85
DATA iv<>+8(SB)/4, $0x3c6ef372
DATA iv<>+12(SB)/4, $0xa54ff53a
DATA iv<>+16(SB)/4, $0x510e527f
DATA iv<>+20(SB)/4, $0x9b05688c
DATA iv<>+24(SB)/4, $0x1f83d9ab
DATA iv<>+28(SB)/4, $0x5be0cd19
GLOBL iv<>(SB), RODATA|NOPTR, $32

DATA blocklen<>+0(SB)/4, $64
GLOBL blocklen<>(SB), RODATA|NOPTR, $4

DATA lanes<>+0(SB)/4, $0
DATA lanes<>+4(SB)/4, $1
DATA lanes<>+8(SB)/4, $2
DATA lanes<>+12(SB)/4, $3
DATA lanes<>+16(SB)/4, $4
DATA lanes<>+20(SB)/4, $5
DATA lanes<>+24(SB)/4, $6
DATA lanes<>+28(SB)/4, $7
DATA lanes<>+32(SB)/4, $8
DATA lanes<>+36(SB)/4, $9
DATA lanes<>+40(SB)/4, $10
DATA lanes<>+44(SB)/4, $11
DATA lanes<>+48(SB)/4, $12
DATA lanes<>+52(SB)/4, $13
DATA lanes<>+56(SB)/4, $14
DATA lanes<>+60(SB)/4, $15
GLOBL lanes<>(SB), RODATA|NOPTR, $64

// chunk flags of block 0..15: CHUNK_START on the first, CHUNK_END on the last
DATA chunkflags<>+0(SB)/4, $1
`)
	for i := 1; i < 15; i++ {
		fmt.Fprintf(&out, "DATA chunkflags<>+%d(SB)/4, $0\n", 4*i)
	}
	fmt.Fprint(&out, `DATA chunkflags<>+60(SB)/4, $2
GLOBL chunkflags<>(SB), RODATA|NOPTR, $64

DATA parentflag<>+0(SB)/4, $4
GLOBL parentflag<>(SB), RODATA|NOPTR, $4

// func chunks16(cvs *[8][16]uint32, buf *[16384]byte, lo, hi uint32)
// Requires: AVX512F
TEXT ·chunks16(SB), NOSPLIT, $704-24
	MOVQ cvs+0(FP), AX
	MOVQ buf+8(FP), CX
	// per-lane chunk counters: counter+lane, with the carry into the high word
	MOVL lo+16(FP), R8
	VPBROADCASTD R8, Z0
	VPADDD lanes<>+0(SB), Z0, Z1
	VPCMPUD $1, Z0, Z1, K1
	MOVL hi+20(FP), R9
	VPBROADCASTD R9, Z2
	VPTERNLOGD $0xff, Z3, Z3, Z3
	VPSUBD Z3, Z2, K1, Z2
	VMOVDQU32 Z1, ctrlo-64(SP)
	VMOVDQU32 Z2, ctrhi-128(SP)
	// the chaining values start as the IV
`)
	for i := 0; i < 8; i++ {
		p("VPBROADCASTD iv<>+%d(SB), Z3", 4*i)
		p("VMOVDQU32 Z3, cv%d-%d(SP)", i, 192+64*i)
	}
	p("LEAQ chunkflags<>+0(SB), BX")
	p("XORQ DX, DX")
	fmt.Fprint(&out, "loop:\n")
	for l := 0; l < 16; l++ {
		p("VMOVDQU32 %d(CX), Z%d", 1024*l, 16+l)
	}
	transpose()
	for i := 0; i < 8; i++ {
		p("VMOVDQU32 cv%d-%d(SP), Z%d", i, 192+64*i, i)
	}
	initState("(BX)(DX*4)")
	rounds()
	for i := 0; i < 8; i++ {
		p("VMOVDQU32 Z%d, cv%d-%d(SP)", i, i, 192+64*i)
	}
	p("ADDQ $64, CX")
	p("INCQ DX")
	p("CMPQ DX, $16")
	p("JNE loop")
	for i := 0; i < 8; i++ {
		p("VMOVDQU32 Z%d, %d(AX)", i, 64*i)
	}
	p("VZEROUPPER")
	p("RET")
	fmt.Fprint(&out, `
// func parents16(cvs *[8][16]uint32, left, right *[8][16]uint32)
// Requires: AVX512F
TEXT ·parents16(SB), NOSPLIT, $128-24
	MOVQ cvs+0(FP), AX
	MOVQ left+8(FP), CX
	MOVQ right+16(FP), DX
	VPXORD Z0, Z0, Z0
	VMOVDQU32 Z0, ctrlo-64(SP)
	VMOVDQU32 Z0, ctrhi-128(SP)
`)
	for i := 0; i < 8; i++ {
		p("VMOVDQU32 %d(CX), Z%d", 64*i, 16+i)
		p("VMOVDQU32 %d(DX), Z%d", 64*i, 24+i)
		p("VPBROADCASTD iv<>+%d(SB), Z%d", 4*i, i)
	}
	initState("parentflag<>+0(SB)")
	rounds()
	for i := 0; i < 8; i++ {
		p("VMOVDQU32 Z%d, %d(AX)", i, 64*i)
	}
	p("VZEROUPPER")
	p("RET")
	if err := os.WriteFile("b3_amd64.s", out.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
