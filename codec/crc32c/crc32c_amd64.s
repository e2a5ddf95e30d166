//go:build amd64 && !noasm && gc

#include "textflag.h"

// Folding constants of the CRC-32C polynomial (reflected) for a distance
// of F bits: low qword reflect32(x^(F+32) mod P) << 1, high qword
// reflect32(x^(F-32) mod P) << 1 (see crc_test.go, which derives them).
DATA crcK2048<>+0(SB)/8, $0xdcb17aa4
DATA crcK2048<>+8(SB)/8, $0xb9e02b86
GLOBL crcK2048<>(SB), RODATA|NOPTR, $16

DATA crcK512<>+0(SB)/8, $0x740eef02
DATA crcK512<>+8(SB)/8, $0x9e4addf8
GLOBL crcK512<>(SB), RODATA|NOPTR, $16

DATA crcK128<>+0(SB)/8, $0xf20c0dfe
DATA crcK128<>+8(SB)/8, $0x14cd00bd6
GLOBL crcK128<>(SB), RODATA|NOPTR, $16

// func crc32cFoldAVX512(crc uint32, p *byte, n int) uint32
// The raw (not inverted) CRC-32C state after n bytes at p; n >= 256 and a
// multiple of 64. Four 512-bit accumulators fold 256 bytes per iteration;
// they are then folded into one, its four 128-bit lanes into one, and the
// last 16 bytes' worth go through the CRC32 instruction from state 0.
TEXT ·crc32cFoldAVX512(SB), NOSPLIT, $0-28
	MOVL crc+0(FP), AX
	MOVQ p+8(FP), SI
	MOVQ n+16(FP), CX

	VMOVDQU64 (SI), Z1
	VMOVDQU64 64(SI), Z2
	VMOVDQU64 128(SI), Z3
	VMOVDQU64 192(SI), Z4
	VMOVD     AX, X10 // zeroes the rest of Z10
	VPXORQ    Z10, Z1, Z1
	ADDQ      $256, SI
	SUBQ      $256, CX

	VBROADCASTI32X4 crcK2048<>(SB), Z0
	CMPQ            CX, $256
	JB              fold4

loop256:
	VMOVDQU64  (SI), Z11
	VMOVDQU64  64(SI), Z12
	VMOVDQU64  128(SI), Z13
	VMOVDQU64  192(SI), Z14
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0x00, Z0, Z1, Z1
	VPCLMULQDQ $0x11, Z0, Z2, Z6
	VPCLMULQDQ $0x00, Z0, Z2, Z2
	VPCLMULQDQ $0x11, Z0, Z3, Z7
	VPCLMULQDQ $0x00, Z0, Z3, Z3
	VPCLMULQDQ $0x11, Z0, Z4, Z8
	VPCLMULQDQ $0x00, Z0, Z4, Z4
	VPTERNLOGD $0x96, Z11, Z5, Z1
	VPTERNLOGD $0x96, Z12, Z6, Z2
	VPTERNLOGD $0x96, Z13, Z7, Z3
	VPTERNLOGD $0x96, Z14, Z8, Z4
	ADDQ       $256, SI
	SUBQ       $256, CX
	CMPQ       CX, $256
	JAE        loop256

fold4:
	VBROADCASTI32X4 crcK512<>(SB), Z0
	VPCLMULQDQ      $0x11, Z0, Z1, Z5
	VPCLMULQDQ      $0x00, Z0, Z1, Z1
	VPTERNLOGD      $0x96, Z2, Z5, Z1
	VPCLMULQDQ      $0x11, Z0, Z1, Z5
	VPCLMULQDQ      $0x00, Z0, Z1, Z1
	VPTERNLOGD      $0x96, Z3, Z5, Z1
	VPCLMULQDQ      $0x11, Z0, Z1, Z5
	VPCLMULQDQ      $0x00, Z0, Z1, Z1
	VPTERNLOGD      $0x96, Z4, Z5, Z1

loop64:
	CMPQ       CX, $64
	JB         lanes
	VMOVDQU64  (SI), Z11
	VPCLMULQDQ $0x11, Z0, Z1, Z5
	VPCLMULQDQ $0x00, Z0, Z1, Z1
	VPTERNLOGD $0x96, Z11, Z5, Z1
	ADDQ       $64, SI
	SUBQ       $64, CX
	JMP        loop64

lanes:
	VEXTRACTI32X4 $1, Z1, X2
	VEXTRACTI32X4 $2, Z1, X3
	VEXTRACTI32X4 $3, Z1, X4
	VMOVDQU       crcK128<>(SB), X0
	VPCLMULQDQ    $0x11, X0, X1, X5
	VPCLMULQDQ    $0x00, X0, X1, X1
	VPXOR         X5, X1, X1
	VPXOR         X2, X1, X1
	VPCLMULQDQ    $0x11, X0, X1, X5
	VPCLMULQDQ    $0x00, X0, X1, X1
	VPXOR         X5, X1, X1
	VPXOR         X3, X1, X1
	VPCLMULQDQ    $0x11, X0, X1, X5
	VPCLMULQDQ    $0x00, X0, X1, X1
	VPXOR         X5, X1, X1
	VPXOR         X4, X1, X1

	VMOVQ   X1, AX
	VPEXTRQ $1, X1, BX
	VZEROUPPER
	XORL    DX, DX
	CRC32Q  AX, DX
	CRC32Q  BX, DX
	MOVL    DX, ret+24(FP)
	RET
