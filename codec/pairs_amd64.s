//go:build amd64 && !noasm && gc

#include "textflag.h"

// func expandPairsAsm(dst *byte, codes *byte, m int, tab *[256]uint32) int
// Writes the two symbols of each code (tab entry, low 16 bits) to dst,
// stopping before the first code whose entry has bit 16 set (an escape or
// invalid code); returns the number of codes written.
TEXT ·expandPairsAsm(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ codes+8(FP), SI
	MOVQ m+16(FP), CX
	MOVQ tab+24(FP), DX
	XORQ R8, R8               // i

eloop4:
	LEAQ 4(R8), R9
	CMPQ R9, CX
	JA   eloop1
	MOVBQZX 0(SI)(R8*1), AX
	MOVBQZX 1(SI)(R8*1), BX
	MOVBQZX 2(SI)(R8*1), R10
	MOVBQZX 3(SI)(R8*1), R11
	MOVL (DX)(AX*4), AX
	MOVL (DX)(BX*4), BX
	MOVL (DX)(R10*4), R10
	MOVL (DX)(R11*4), R11
	MOVL AX, R12
	ORL  BX, R12
	ORL  R10, R12
	ORL  R11, R12
	TESTL $0xffff0000, R12
	JNZ  eloop1
	MOVW AX, 0(DI)(R8*2)
	MOVW BX, 2(DI)(R8*2)
	MOVW R10, 4(DI)(R8*2)
	MOVW R11, 6(DI)(R8*2)
	MOVQ R9, R8
	JMP  eloop4

eloop1:
	CMPQ R8, CX
	JAE  edone
	MOVBQZX 0(SI)(R8*1), AX
	MOVL (DX)(AX*4), AX
	TESTL $0xffff0000, AX
	JNZ  edone
	MOVW AX, 0(DI)(R8*2)
	INCQ R8
	JMP  eloop1

edone:
	MOVQ R8, ret+32(FP)
	RET

// func pairizeAsm(codes *byte, syms *byte, m int, pc *[65536]byte) int
// codes[i] = pc[syms[2i] | syms[2i+1]<<8] - 1 until the first pair whose
// entry is 0 (an escape); returns the number of codes written.
TEXT ·pairizeAsm(SB), NOSPLIT, $0-40
	MOVQ codes+0(FP), DI
	MOVQ syms+8(FP), SI
	MOVQ m+16(FP), CX
	MOVQ pc+24(FP), DX
	XORQ R8, R8

ploop4:
	LEAQ 4(R8), R9
	CMPQ R9, CX
	JA   ploop1
	MOVWLZX 0(SI)(R8*2), AX
	MOVWLZX 2(SI)(R8*2), BX
	MOVWLZX 4(SI)(R8*2), R10
	MOVWLZX 6(SI)(R8*2), R11
	MOVBLZX (DX)(AX*1), AX
	MOVBLZX (DX)(BX*1), BX
	MOVBLZX (DX)(R10*1), R10
	MOVBLZX (DX)(R11*1), R11
	TESTL AX, AX
	JZ   ploop1
	TESTL BX, BX
	JZ   ploop1
	TESTL R10, R10
	JZ   ploop1
	TESTL R11, R11
	JZ   ploop1
	DECL AX
	DECL BX
	DECL R10
	DECL R11
	MOVB AX, 0(DI)(R8*1)
	MOVB BX, 1(DI)(R8*1)
	MOVB R10, 2(DI)(R8*1)
	MOVB R11, 3(DI)(R8*1)
	MOVQ R9, R8
	JMP  ploop4

ploop1:
	CMPQ R8, CX
	JAE  pdone
	MOVWLZX 0(SI)(R8*2), AX
	MOVBLZX (DX)(AX*1), AX
	TESTL AX, AX
	JZ   pdone
	DECL AX
	MOVB AX, 0(DI)(R8*1)
	INCQ R8
	JMP  ploop1

pdone:
	MOVQ R8, ret+32(FP)
	RET

// func expandPairsAVX512(dst *byte, codes *byte, m int, tab *[256]uint32, esc int, exc *byte, nexc int, x *int) int
// expandPairs 32 codes at a time, as expandOne decides each code: the
// entries' low and high 16 bits as two tables of 256 words in eight
// registers each, each code's words by VPERMI2W from the four 64-word
// quarters, chosen by the code's bits 6 and 7. A code whose high word is 0
// has its pair in the low word; one whose high word is not 0 is an escape
// when it is esc (filled from exc at *x in order) and invalid otherwise
// (setup tables have such holes below esc). Stops before the first 32
// codes with an invalid code or more escapes than exc has left; returns
// the codes written (*x moved on).
TEXT ·expandPairsAVX512(SB), NOSPLIT, $0-72
	MOVQ dst+0(FP), DI
	MOVQ codes+8(FP), SI
	MOVQ m+16(FP), CX
	MOVQ tab+24(FP), DX
	MOVQ esc+32(FP), R8
	MOVQ exc+40(FP), R13
	MOVQ nexc+48(FP), R14
	MOVQ x+56(FP), R15
	MOVQ (R15), R12           // exceptions used
	// low words in Z16-Z23, high words in Z8-Z14, Z27
	VMOVDQU32 0(DX), Z0
	VPMOVDW Z0, Y1
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y5
	VMOVDQU32 64(DX), Z0
	VPMOVDW Z0, Y2
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y6
	VINSERTI64X4 $1, Y2, Z1, Z16
	VINSERTI64X4 $1, Y6, Z5, Z8
	VMOVDQU32 128(DX), Z0
	VPMOVDW Z0, Y1
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y5
	VMOVDQU32 192(DX), Z0
	VPMOVDW Z0, Y2
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y6
	VINSERTI64X4 $1, Y2, Z1, Z17
	VINSERTI64X4 $1, Y6, Z5, Z9
	VMOVDQU32 256(DX), Z0
	VPMOVDW Z0, Y1
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y5
	VMOVDQU32 320(DX), Z0
	VPMOVDW Z0, Y2
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y6
	VINSERTI64X4 $1, Y2, Z1, Z18
	VINSERTI64X4 $1, Y6, Z5, Z10
	VMOVDQU32 384(DX), Z0
	VPMOVDW Z0, Y1
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y5
	VMOVDQU32 448(DX), Z0
	VPMOVDW Z0, Y2
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y6
	VINSERTI64X4 $1, Y2, Z1, Z19
	VINSERTI64X4 $1, Y6, Z5, Z11
	VMOVDQU32 512(DX), Z0
	VPMOVDW Z0, Y1
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y5
	VMOVDQU32 576(DX), Z0
	VPMOVDW Z0, Y2
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y6
	VINSERTI64X4 $1, Y2, Z1, Z20
	VINSERTI64X4 $1, Y6, Z5, Z12
	VMOVDQU32 640(DX), Z0
	VPMOVDW Z0, Y1
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y5
	VMOVDQU32 704(DX), Z0
	VPMOVDW Z0, Y2
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y6
	VINSERTI64X4 $1, Y2, Z1, Z21
	VINSERTI64X4 $1, Y6, Z5, Z13
	VMOVDQU32 768(DX), Z0
	VPMOVDW Z0, Y1
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y5
	VMOVDQU32 832(DX), Z0
	VPMOVDW Z0, Y2
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y6
	VINSERTI64X4 $1, Y2, Z1, Z22
	VINSERTI64X4 $1, Y6, Z5, Z14
	VMOVDQU32 896(DX), Z0
	VPMOVDW Z0, Y1
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y5
	VMOVDQU32 960(DX), Z0
	VPMOVDW Z0, Y2
	VPSRLD $16, Z0, Z0
	VPMOVDW Z0, Y6
	VINSERTI64X4 $1, Y2, Z1, Z23
	VINSERTI64X4 $1, Y6, Z5, Z27
	VPBROADCASTW R8, Z24      // esc
	MOVL $64, AX
	VPBROADCASTW AX, Z25
	MOVL $128, AX
	VPBROADCASTW AX, Z26
	XORQ R9, R9

ploop:
	LEAQ 32(R9), R10
	CMPQ R10, CX
	JA   pdone
	VPMOVZXBW (SI)(R9*1), Z0  // 32 codes
	VPTESTMW Z25, Z0, K2      // bit 6
	VPTESTMW Z26, Z0, K3      // bit 7
	VMOVDQA64 Z0, Z5
	VPERMI2W Z9, Z8, Z5       // high words of entries 0-63
	VMOVDQA64 Z0, Z6
	VPERMI2W Z11, Z10, Z6     // 64-127
	VMOVDQA64 Z0, Z7
	VPERMI2W Z13, Z12, Z7     // 128-191
	VMOVDQA64 Z0, Z28
	VPERMI2W Z27, Z14, Z28    // 192-255
	VMOVDQU16 Z6, K2, Z5
	VMOVDQU16 Z28, K2, Z7
	VMOVDQU16 Z7, K3, Z5      // the codes' high words
	VPCMPUW $4, Z24, Z0, K5   // code != esc
	VPTESTMW Z5, Z5, K5, K1   // ... without a pair: invalid
	KORTESTD K1, K1
	JNZ  pdone
	VPCMPUW $0, Z24, Z0, K5   // code == esc
	VPTESTMW Z5, Z5, K5, K4   // ... without a pair: the escapes
	KMOVD K4, R11
	POPCNTL R11, AX
	LEAQ (R12)(AX*2), AX      // exceptions used after this chunk
	CMPQ AX, R14
	JA   pdone
	VMOVDQA64 Z0, Z1
	VPERMI2W Z17, Z16, Z1     // low words of entries 0-63
	VMOVDQA64 Z0, Z2
	VPERMI2W Z19, Z18, Z2     // 64-127
	VMOVDQA64 Z0, Z3
	VPERMI2W Z21, Z20, Z3     // 128-191
	VMOVDQA64 Z0, Z4
	VPERMI2W Z23, Z22, Z4     // 192-255
	VMOVDQU16 Z2, K2, Z1
	VMOVDQU16 Z4, K2, Z3
	VMOVDQU16 Z3, K3, Z1
	VMOVDQU16 Z1, (DI)(R9*2)
	TESTL R11, R11
	JZ   pnext

pesc:
	TZCNTL R11, AX            // an escape: its pair from exc
	MOVWLZX (R13)(R12*1), BX
	ADDQ R9, AX
	MOVW BX, (DI)(AX*2)
	ADDQ $2, R12
	BLSRL R11, R11
	JNZ  pesc

pnext:
	MOVQ R10, R9
	JMP  ploop

pdone:
	VZEROUPPER
	MOVQ R12, (R15)
	MOVQ R9, ret+64(FP)
	RET
