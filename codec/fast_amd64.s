//go:build amd64 && !noasm && gc

#include "textflag.h"

// func mergeBF16AVX2(dst, e, r *byte, n int)
// n is a multiple of 32. dst gets 2n bytes: value i = (r&0x80)<<8 | e<<7 | r&0x7f.
TEXT ·mergeBF16AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ e+8(FP), SI
	MOVQ r+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ $0x8080808080808080, AX
	MOVQ AX, X8
	VPBROADCASTQ X8, Y8
	MOVQ $0x7f7f7f7f7f7f7f7f, AX
	MOVQ AX, X9
	VPBROADCASTQ X9, Y9

mloop:
	CMPQ CX, $32
	JB   mdone
	VMOVDQU (SI), Y0
	VMOVDQU (DX), Y1
	VPSLLW  $7, Y0, Y2
	VPAND   Y8, Y2, Y2
	VPAND   Y9, Y1, Y3
	VPOR    Y2, Y3, Y2     // low bytes
	VPSRLW  $1, Y0, Y4
	VPAND   Y9, Y4, Y4
	VPAND   Y8, Y1, Y5
	VPOR    Y4, Y5, Y4     // high bytes
	VPERMQ  $0xD8, Y2, Y2
	VPERMQ  $0xD8, Y4, Y4
	VPUNPCKLBW Y4, Y2, Y6
	VPUNPCKHBW Y4, Y2, Y7
	VMOVDQU Y6, (DI)
	VMOVDQU Y7, 32(DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $64, DI
	SUBQ $32, CX
	JMP  mloop

mdone:
	VZEROUPPER
	RET

// func splitBF16AVX2(src, e, r *byte, n int, or *[32]byte)
// n is a multiple of 32. e[i] = value>>7 & 0xff, r[i] = sign<<7 | mantissa;
// the OR of all r bytes is accumulated into or.
TEXT ·splitBF16AVX2(SB), NOSPLIT, $0-40
	MOVQ src+0(FP), SI
	MOVQ e+8(FP), DI
	MOVQ r+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ or+32(FP), BX
	MOVQ $0x00ff00ff00ff00ff, AX
	MOVQ AX, X10
	VPBROADCASTQ X10, Y10
	MOVQ $0x0080008000800080, AX
	MOVQ AX, X11
	VPBROADCASTQ X11, Y11
	MOVQ $0x007f007f007f007f, AX
	MOVQ AX, X12
	VPBROADCASTQ X12, Y12
	VMOVDQU (BX), Y13

sloop:
	CMPQ CX, $32
	JB   sdone
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	VPSRLW  $7, Y0, Y2
	VPAND   Y10, Y2, Y2
	VPSRLW  $7, Y1, Y3
	VPAND   Y10, Y3, Y3
	VPACKUSWB Y3, Y2, Y4
	VPERMQ  $0xD8, Y4, Y4
	VPSRLW  $8, Y0, Y5
	VPAND   Y11, Y5, Y5
	VPAND   Y12, Y0, Y6
	VPOR    Y5, Y6, Y5
	VPSRLW  $8, Y1, Y7
	VPAND   Y11, Y7, Y7
	VPAND   Y12, Y1, Y6
	VPOR    Y7, Y6, Y7
	VPACKUSWB Y7, Y5, Y5
	VPERMQ  $0xD8, Y5, Y5
	VPOR    Y5, Y13, Y13
	VMOVDQU Y4, (DI)
	VMOVDQU Y5, (DX)
	ADDQ $64, SI
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $32, CX
	JMP  sloop

sdone:
	VMOVDQU Y13, (BX)
	VZEROUPPER
	RET
