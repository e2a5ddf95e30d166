//go:build amd64 && !noasm && gc

#include "textflag.h"

// func encodeHuffStreamAsm(out *byte, src *byte, n int, enc *[256]uint32) int
// The same bit stream as encodeHuffStream: symbols coded last to first into
// an LSB-first container flushed 8 bytes at a time, then a 1 end bit.
// Entries of enc are code | length<<16 with lengths of at most 11 bits, so
// five codes fit on top of the at most 7 bits a flush leaves.
TEXT ·encodeHuffStreamAsm(SB), NOSPLIT, $0-40
	MOVQ out+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), R8
	MOVQ enc+24(FP), DX
	XORQ R9, R9               // container
	XORQ CX, CX               // bits in the container
	XORQ R10, R10             // output position

#define PUTCODE \
	DECQ R8 \
	MOVBLZX (SI)(R8*1), AX \
	MOVL (DX)(AX*4), AX \
	MOVL AX, BX \
	SHRL $16, BX \
	ANDL $0xffff, AX \
	SHLQ CL, AX \
	ORQ AX, R9 \
	ADDQ BX, CX

#define FLUSH \
	MOVQ R9, (DI)(R10*1) \
	MOVQ CX, AX \
	SHRQ $3, AX \
	ADDQ AX, R10 \
	MOVQ CX, R11 \
	ANDQ $56, CX \
	SHRQ CL, R9 \
	MOVQ R11, CX \
	ANDQ $7, CX

hloop5:
	CMPQ R8, $5
	JL   hloop1
	PUTCODE
	PUTCODE
	PUTCODE
	PUTCODE
	PUTCODE
	FLUSH
	JMP  hloop5

hloop1:
	TESTQ R8, R8
	JZ   hend
	PUTCODE
	FLUSH
	JMP  hloop1

hend:
	MOVQ $1, AX
	SHLQ CL, AX
	ORQ  AX, R9
	INCQ CX
	MOVQ R9, (DI)(R10*1)
	ADDQ $7, CX
	SHRQ $3, CX
	ADDQ CX, R10
	MOVQ R10, ret+32(FP)
	RET

// func huffEnc2Asm(out0, out1, src0, src1 *byte, n int, enc *[256]uint64, w *[2]W)
// Codes src0[n-1..0] and src1[n-1..0] into two huff0 streams from the
// states in w (see W in huff.go), four codes of each between flushes.
TEXT ·huffEnc2Asm(SB), NOSPLIT, $0-56
	MOVQ out0+0(FP), R10
	MOVQ out1+8(FP), R13
	MOVQ src0+16(FP), SI
	MOVQ src1+24(FP), DI
	MOVQ n+32(FP), CX
	MOVQ enc+40(FP), DX
	MOVQ w+48(FP), BX
	MOVQ 0(BX), R8            // container 0
	MOVQ 8(BX), R9            // bit count 0 (low byte)
	ADDQ 16(BX), R10          // output pointer 0
	MOVQ 24(BX), R11          // container 1
	MOVQ 32(BX), R12          // bit count 1
	ADDQ 40(BX), R13          // output pointer 1

#define HPUT2(off) \
	MOVBQZX off(SI)(CX*1), AX \
	MOVBQZX off(DI)(CX*1), BX \
	MOVQ    (DX)(AX*8), AX \
	MOVQ    (DX)(BX*8), BX \
	SHRXQ   AX, R8, R8 \
	SHRXQ   BX, R11, R11 \
	ORQ     AX, R8 \
	ORQ     BX, R11 \
	ADDQ    AX, R9 \
	ADDQ    BX, R12

#define HFLUSH2 \
	ANDQ  $0xff, R9 \
	ANDQ  $0xff, R12 \
	MOVQ  R9, AX \
	MOVQ  R12, BX \
	NEGQ  AX \
	NEGQ  BX \
	SHRXQ AX, R8, AX \
	SHRXQ BX, R11, BX \
	MOVQ  AX, (R10) \
	MOVQ  BX, (R13) \
	MOVQ  R9, AX \
	MOVQ  R12, BX \
	SHRQ  $3, AX \
	SHRQ  $3, BX \
	ADDQ  AX, R10 \
	ADDQ  BX, R13 \
	ANDQ  $7, R9 \
	ANDQ  $7, R12

	SUBQ $4, CX
	JLT  h2tail

h2loop:
	HPUT2(3)
	HPUT2(2)
	HPUT2(1)
	HPUT2(0)
	HFLUSH2
	SUBQ $4, CX
	JGE  h2loop

h2tail:
	ADDQ $4, CX
	JZ   h2done

h2one:
	HPUT2(-1)
	DECQ CX
	JNZ  h2one
	HFLUSH2

h2done:
	MOVQ w+48(FP), BX
	MOVQ R8, 0(BX)
	MOVQ R9, 8(BX)
	SUBQ out0+0(FP), R10
	MOVQ R10, 16(BX)
	MOVQ R11, 24(BX)
	MOVQ R12, 32(BX)
	SUBQ out1+8(FP), R13
	MOVQ R13, 40(BX)
	RET
