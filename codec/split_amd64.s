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

// LOADTAB256 loads a 256-byte table from R into Z16-Z19.
#define LOADTAB256(R) \
	VMOVDQU64 0(R), Z16 \
	VMOVDQU64 64(R), Z17 \
	VMOVDQU64 128(R), Z18 \
	VMOVDQU64 192(R), Z19

// TAB256 looks each byte of IDX up in the table of Z16-Z19 into OUT (TMP
// and K1 are clobbered): two VPERMI2B over its halves and a select on the
// index's bit 7.
#define TAB256(IDX, OUT, TMP) \
	VMOVDQA64 IDX, OUT \
	VPERMI2B Z17, Z16, OUT \
	VMOVDQA64 IDX, TMP \
	VPERMI2B Z19, Z18, TMP \
	VPMOVB2M IDX, K1 \
	VMOVDQU8 TMP, K1, OUT

// func mergeF16AVX512(dst *byte, syms *byte, p0 *byte, p1 *byte, n int, sh int, tab *[256]byte, inter *[128]byte)
// mergeF16 for n values (a multiple of 64): the high byte of value i is
// tab[syms[i]<<sh | p1[i]] (p1 nil: tab[syms[i]]), looked up in four
// 64-byte registers by two VPERMI2B and a select on the index's bit 7; the
// low byte is p0[i]; inter holds the two VPERMI2B index vectors that
// interleave 64 low and 64 high bytes into 128 output bytes.
TEXT ·mergeF16AVX512(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ syms+8(FP), SI
	MOVQ p0+16(FP), R8
	MOVQ p1+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ sh+40(FP), DX
	MOVQ tab+48(FP), AX
	MOVQ inter+56(FP), BX
	LOADTAB256(AX)
	VMOVDQU64 0(BX), Z20
	VMOVDQU64 64(BX), Z21
	VMOVQ DX, X22             // the shift, for VPSLLW
	XORQ R10, R10

mloop:
	CMPQ R10, CX
	JGE  mdone
	VMOVDQU8 (SI)(R10*1), Z0  // syms
	TESTQ R9, R9
	JZ   mnop1
	// syms < 2^(8-sh): shifting words moves no bit into the next byte
	VPSLLW X22, Z0, Z0
	VPORD (R9)(R10*1), Z0, Z0

mnop1:
	TAB256(Z0, Z1, Z2)        // the high bytes
	VMOVDQU8 (R8)(R10*1), Z3  // the low bytes
	VMOVDQA64 Z20, Z4
	VPERMI2B Z1, Z3, Z4       // values 0..31
	VMOVDQA64 Z21, Z5
	VPERMI2B Z1, Z3, Z5       // values 32..63
	VMOVDQU8 Z4, (DI)(R10*2)
	VMOVDQU8 Z5, 64(DI)(R10*2)
	ADDQ $64, R10
	JMP  mloop

mdone:
	VZEROUPPER
	RET

// func unpackAVX512(dst *byte, src *byte, blocks int, w int, idx *[64]byte, ctl *[64]byte)
// unpack of 64 symbols of w < 8 bits per block: the 8w bytes of a block
// are spread so that qword k holds bytes kw..kw+7 (VPERMB by idx), and
// VPMULTISHIFTQB takes byte j of qword k from bit j·w of it (ctl); then
// the symbols are masked to w bits. Each block reads 64 bytes from src at
// its start, which the caller keeps inside src.
TEXT ·unpackAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVQ w+24(FP), DX
	MOVQ idx+32(FP), AX
	MOVQ ctl+40(FP), BX
	VMOVDQU64 (AX), Z20
	VMOVDQU64 (BX), Z21
	MOVL $1, R8
	SHLXL DX, R8, R8
	DECL R8
	VPBROADCASTB R8, Z22      // (1 << w) - 1
	SHLQ $3, DX               // bytes per block
	TESTQ CX, CX
	JZ   udone2

uloop2:
	VMOVDQU8 (SI), Z0
	VPERMB Z0, Z20, Z1
	VPMULTISHIFTQB Z1, Z21, Z2
	VPANDQ Z22, Z2, Z2
	VMOVDQU8 Z2, (DI)
	ADDQ DX, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  uloop2

udone2:
	VZEROUPPER
	RET

// func mergeF32AVX512(dst *byte, e *byte, p0 *byte, p1 *byte, p2 *byte, n int, inter *[128]byte, interW *[128]byte)
// mergeF32 for n values (a multiple of 64): bytes 2 and 3 of value i are
// (e<<7 | p2&0x7f, p2&0x80 | e>>1), built 64 at a time by word shifts and
// a bitwise select on bit 7; then the four byte planes are interleaved by
// VPERMI2B (bytes 0,1 and bytes 2,3 into words, inter) and VPERMI2W (the
// two words into values, interW).
TEXT ·mergeF32AVX512(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ e+8(FP), SI
	MOVQ p0+16(FP), R8
	MOVQ p1+24(FP), R9
	MOVQ p2+32(FP), R11
	MOVQ n+40(FP), CX
	MOVQ inter+48(FP), AX
	MOVQ interW+56(FP), BX
	VMOVDQU64 0(AX), Z20
	VMOVDQU64 64(AX), Z21
	VMOVDQU64 0(BX), Z22
	VMOVDQU64 64(BX), Z23
	MOVL $0x80, DX
	VPBROADCASTB DX, Z24
	XORQ R10, R10

floop:
	CMPQ R10, CX
	JGE  fdone
	VMOVDQU8 (SI)(R10*1), Z0   // exponents
	VMOVDQU8 (R11)(R10*1), Z1  // plane 2: sign and top 7 mantissa bits
	VPSLLW $7, Z0, Z2          // bit 7 of each byte: its exponent's bit 0
	VMOVDQA64 Z24, Z4
	VPTERNLOGD $0xCA, Z1, Z2, Z4 // byte 2: bit 7 from Z2, the rest from p2
	VPSRLW $1, Z0, Z3          // bits 0..6 of each byte: its exponent's bits 1..7
	VMOVDQA64 Z24, Z5
	VPTERNLOGD $0xCA, Z3, Z1, Z5 // byte 3: bit 7 from p2, the rest from Z3
	VMOVDQU8 (R8)(R10*1), Z6   // byte 0
	VMOVDQU8 (R9)(R10*1), Z7   // byte 1
	VMOVDQA64 Z20, Z8
	VPERMI2B Z7, Z6, Z8        // bytes 0,1 of values 0..31
	VMOVDQA64 Z21, Z9
	VPERMI2B Z7, Z6, Z9        // of values 32..63
	VMOVDQA64 Z20, Z10
	VPERMI2B Z5, Z4, Z10       // bytes 2,3 of values 0..31
	VMOVDQA64 Z21, Z11
	VPERMI2B Z5, Z4, Z11       // of values 32..63
	VMOVDQA64 Z22, Z12
	VPERMI2W Z10, Z8, Z12      // values 0..15
	VMOVDQA64 Z23, Z13
	VPERMI2W Z10, Z8, Z13      // 16..31
	VMOVDQA64 Z22, Z14
	VPERMI2W Z11, Z9, Z14      // 32..47
	VMOVDQA64 Z23, Z15
	VPERMI2W Z11, Z9, Z15      // 48..63
	VMOVDQU8 Z12, (DI)(R10*4)
	VMOVDQU8 Z13, 64(DI)(R10*4)
	VMOVDQU8 Z14, 128(DI)(R10*4)
	VMOVDQU8 Z15, 192(DI)(R10*4)
	ADDQ $64, R10
	JMP  floop

fdone:
	VZEROUPPER
	RET

// func splitF32AVX512(src *byte, e *byte, p0 *byte, p1 *byte, p2 *byte, n int, tr *[64]byte, or *[192]byte)
// splitF32 for n values (a multiple of 64), without the histogram: each
// 64-byte register of 16 values is transposed to four 16-byte planes
// (VPERMB by tr), the planes of four registers gathered by VSHUFI64X2;
// then e = b3<<1 | b2>>7 and p2 = b3&0x80 | b2&0x7f. or gets the OR of
// the p0, p1 and p2 bytes (64 each).
TEXT ·splitF32AVX512(SB), NOSPLIT, $0-64
	MOVQ src+0(FP), SI
	MOVQ e+8(FP), DI
	MOVQ p0+16(FP), R8
	MOVQ p1+24(FP), R9
	MOVQ p2+32(FP), R11
	MOVQ n+40(FP), CX
	MOVQ tr+48(FP), AX
	MOVQ or+56(FP), BX
	VMOVDQU64 (AX), Z20
	MOVL $0x80, DX
	VPBROADCASTB DX, Z21
	MOVL $0x01, DX
	VPBROADCASTB DX, Z22
	VPXORQ Z23, Z23, Z23       // OR of p0
	VPXORQ Z24, Z24, Z24       // of p1
	VPXORQ Z25, Z25, Z25       // of p2
	XORQ R10, R10

sploop:
	CMPQ R10, CX
	JGE  spdone
	VPERMB 0(SI)(R10*4), Z20, Z0
	VPERMB 64(SI)(R10*4), Z20, Z1
	VPERMB 128(SI)(R10*4), Z20, Z2
	VPERMB 192(SI)(R10*4), Z20, Z3
	VSHUFI64X2 $0x44, Z1, Z0, Z4
	VSHUFI64X2 $0x44, Z3, Z2, Z5
	VSHUFI64X2 $0xEE, Z1, Z0, Z6
	VSHUFI64X2 $0xEE, Z3, Z2, Z7
	VSHUFI64X2 $0x88, Z5, Z4, Z8  // byte 0 of the 64 values
	VSHUFI64X2 $0xDD, Z5, Z4, Z9  // byte 1
	VSHUFI64X2 $0x88, Z7, Z6, Z10 // byte 2
	VSHUFI64X2 $0xDD, Z7, Z6, Z11 // byte 3
	VPADDB Z11, Z11, Z12           // b3<<1
	VPSRLW $7, Z10, Z13            // bit 0 of each byte: its b2's bit 7
	VMOVDQA64 Z22, Z14
	VPTERNLOGD $0xEA, Z12, Z13, Z14 // e = (Z13 & 1) | b3<<1
	VMOVDQA64 Z21, Z15
	VPTERNLOGD $0xCA, Z10, Z11, Z15 // p2: bit 7 from b3, the rest from b2
	VMOVDQU8 Z14, (DI)(R10*1)
	VMOVDQU8 Z8, (R8)(R10*1)
	VMOVDQU8 Z9, (R9)(R10*1)
	VMOVDQU8 Z15, (R11)(R10*1)
	VPORQ Z8, Z23, Z23
	VPORQ Z9, Z24, Z24
	VPORQ Z15, Z25, Z25
	ADDQ $64, R10
	JMP  sploop

spdone:
	VMOVDQU64 Z23, 0(BX)
	VMOVDQU64 Z24, 64(BX)
	VMOVDQU64 Z25, 128(BX)
	VZEROUPPER
	RET

// func splitF16AVX512(src *byte, syms *byte, p0 *byte, p1 *byte, n int, sh int, tab *[256]byte, deint *[128]byte)
// splitF16 for n values (a multiple of 64): the low and high bytes of 64
// values separated by two VPERMI2B (deint), c = tab[high byte] by two
// VPERMI2B and a select on bit 7; then syms = c >> sh and p1 = the low sh
// bits of c (p1 nil: syms = c).
TEXT ·splitF16AVX512(SB), NOSPLIT, $0-64
	MOVQ src+0(FP), SI
	MOVQ syms+8(FP), DI
	MOVQ p0+16(FP), R8
	MOVQ p1+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ sh+40(FP), DX
	MOVQ tab+48(FP), AX
	MOVQ deint+56(FP), BX
	LOADTAB256(AX)
	VMOVDQU64 0(BX), Z20
	VMOVDQU64 64(BX), Z21
	VMOVQ DX, X22             // the shift
	MOVL $0xff, R11
	SHRXL DX, R11, R12
	VPBROADCASTB R12, Z23     // 0xff >> sh: the symbol's bits
	MOVL $1, R11
	SHLXL DX, R11, R11
	DECL R11
	VPBROADCASTB R11, Z24     // (1 << sh) - 1: the low sh bits
	XORQ R10, R10

hloop:
	CMPQ R10, CX
	JGE  hdone
	VMOVDQU8 0(SI)(R10*2), Z0
	VMOVDQU8 64(SI)(R10*2), Z1
	VMOVDQA64 Z20, Z2
	VPERMI2B Z1, Z0, Z2       // the low bytes
	VMOVDQA64 Z21, Z3
	VPERMI2B Z1, Z0, Z3       // the high bytes
	TAB256(Z3, Z4, Z5)        // c
	VMOVDQU8 Z2, (R8)(R10*1)
	TESTQ R9, R9
	JZ   hnop1
	VPANDQ Z24, Z4, Z7
	VMOVDQU8 Z7, (R9)(R10*1)
	VPSRLW X22, Z4, Z4
	VPANDQ Z23, Z4, Z4

hnop1:
	VMOVDQU8 Z4, (DI)(R10*1)
	ADDQ $64, R10
	JMP  hloop

hdone:
	VZEROUPPER
	RET
