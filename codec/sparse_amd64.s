//go:build amd64 && !noasm && gc

#include "textflag.h"

// func gatherNonzeroAVX512(src *byte, n, size int, vals, mask *byte, or *[64]byte) (bytes int)
//
// The sparse gather of gatherNonzero, 64 bytes of src at a time: the
// nonzero lanes (VPTESTM) give the mask bits (stored little-endian, one
// bit per value) and are compressed (VPCOMPRESSB/W/D, VBMI2) to vals at
// the bytes written so far; 64 bytes are stored whatever the count, which
// stays within vals (len(vals) ≥ len(src): the written bytes never pass the
// end of the values read). n is the number of values, a multiple of
// 64/size; or receives the OR of all the words read.
TEXT ·gatherNonzeroAVX512(SB), NOSPLIT, $0-56
	MOVQ src+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ size+16(FP), DX
	MOVQ vals+24(FP), DI
	MOVQ mask+32(FP), R8
	MOVQ or+40(FP), R9
	XORQ AX, AX
	VPXORQ Z2, Z2, Z2
	TESTQ CX, CX
	JZ done
	CMPQ DX, $2
	JEQ words
	CMPQ DX, $1
	JEQ bytes

dwords:
	VMOVDQU32 (SI), Z0
	VPORQ Z0, Z2, Z2
	VPTESTMD Z0, Z0, K1
	VPCOMPRESSD Z0, K1, Z1
	VMOVDQU32 Z1, (DI)(AX*1)
	KMOVW K1, BX
	MOVW BX, (R8)
	POPCNTL BX, BX
	SHLQ $2, BX
	ADDQ BX, AX
	ADDQ $64, SI
	ADDQ $2, R8
	SUBQ $16, CX
	JNZ dwords
	JMP done

words:
	VMOVDQU16 (SI), Z0
	VPORQ Z0, Z2, Z2
	VPTESTMW Z0, Z0, K1
	VPCOMPRESSW Z0, K1, Z1
	VMOVDQU16 Z1, (DI)(AX*1)
	KMOVD K1, BX
	MOVL BX, (R8)
	POPCNTL BX, BX
	SHLQ $1, BX
	ADDQ BX, AX
	ADDQ $64, SI
	ADDQ $4, R8
	SUBQ $32, CX
	JNZ words
	JMP done

bytes:
	VMOVDQU8 (SI), Z0
	VPORQ Z0, Z2, Z2
	VPTESTMB Z0, Z0, K1
	VPCOMPRESSB Z0, K1, Z1
	VMOVDQU8 Z1, (DI)(AX*1)
	KMOVQ K1, BX
	MOVQ BX, (R8)
	POPCNTQ BX, BX
	ADDQ BX, AX
	ADDQ $64, SI
	ADDQ $8, R8
	SUBQ $64, CX
	JNZ bytes

done:
	VMOVDQU64 Z2, (R9)
	MOVQ AX, bytes+48(FP)
	VZEROUPPER
	RET
