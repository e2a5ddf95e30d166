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

// func scatterNonzeroAVX512(dst *byte, n, size int, vals, mask *byte) (bytes int, zero bool)
//
// The expansion of scatterNonzero, 64 bytes of dst at a time: the mask
// bits of those values (little-endian, one bit per value) select the lanes
// that take the next values of vals (VPEXPANDB/W/D, VBMI2, zeroing the
// other lanes); the memory form reads only the values it places, so vals
// needs no room past its end. n is the number of values, a multiple of
// 64/size. It returns the bytes of vals used and whether a placed value
// was zero (a lane the mask marks that VPTESTM finds zero).
TEXT ·scatterNonzeroAVX512(SB), NOSPLIT, $0-49
	MOVQ dst+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ size+16(FP), DX
	MOVQ vals+24(FP), SI
	MOVQ mask+32(FP), R8
	XORQ AX, AX
	XORQ R9, R9
	TESTQ CX, CX
	JZ sdone
	CMPQ DX, $2
	JEQ swords
	CMPQ DX, $1
	JEQ sbytes

sdwords:
	MOVWLZX (R8), BX
	KMOVW BX, K1
	VPEXPANDD.Z (SI)(AX*1), K1, Z0
	VMOVDQU32 Z0, (DI)
	VPTESTMD Z0, Z0, K2
	KMOVW K2, R10
	XORL BX, R10
	ORL R10, R9
	POPCNTL BX, BX
	SHLQ $2, BX
	ADDQ BX, AX
	ADDQ $64, DI
	ADDQ $2, R8
	SUBQ $16, CX
	JNZ sdwords
	JMP sdone

swords:
	MOVL (R8), BX
	KMOVD BX, K1
	VPEXPANDW.Z (SI)(AX*1), K1, Z0
	VMOVDQU16 Z0, (DI)
	VPTESTMW Z0, Z0, K2
	KMOVD K2, R10
	XORL BX, R10
	ORL R10, R9
	POPCNTL BX, BX
	SHLQ $1, BX
	ADDQ BX, AX
	ADDQ $64, DI
	ADDQ $4, R8
	SUBQ $32, CX
	JNZ swords
	JMP sdone

sbytes:
	MOVQ (R8), BX
	KMOVQ BX, K1
	VPEXPANDB.Z (SI)(AX*1), K1, Z0
	VMOVDQU8 Z0, (DI)
	VPTESTMB Z0, Z0, K2
	KMOVQ K2, R10
	XORQ BX, R10
	ORQ R10, R9
	POPCNTQ BX, BX
	ADDQ BX, AX
	ADDQ $64, DI
	ADDQ $8, R8
	SUBQ $64, CX
	JNZ sbytes

sdone:
	MOVQ AX, bytes+40(FP)
	TESTQ R9, R9
	SETNE zero+48(FP)
	VZEROUPPER
	RET
