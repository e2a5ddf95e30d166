//go:build amd64 && !noasm && gc

#include "textflag.h"
#include "bitwin_amd64.h"

// swCtx offsets (ref_switch_amd64.go)
#define SW_REC 0
#define SW_DELTA 8
#define SW_O 16
#define SW_P 24
#define SW_C 88

// SWLOOKUP decodes one token of the stream with window W into off(R14):
// its context is the byte at off(R14)(R12*1) (R12 = ex - tv), whose word
// in R13's table is the address of its group's decoding table, whose low
// 6 bits are the shift; the table's entry at W>>shift is token<<8 | code
// length, and W shifts out the code.
#define SWLOOKUP(W, off) \
	MOVBLZX off(R14)(R12*1), DI \
	MOVQ    (R13)(DI*8), DI \
	SHRXQ   DI, W, CX \
	MOVWQZX (DI)(CX*2), CX \
	SHLXQ   CX, W, W \
	SHRL    $8, CX \
	MOVB    CX, off(R14)

// SWLOOKUP8 does one lookup in each of the eight streams: values j·8 to
// j·8+7 from R14.
#define SWLOOKUP8(j) \
	SWLOOKUP(AX, 8*j) \
	SWLOOKUP(BX, 8*j+1) \
	SWLOOKUP(DX, 8*j+2) \
	SWLOOKUP(SI, 8*j+3) \
	SWLOOKUP(R8, 8*j+4) \
	SWLOOKUP(R9, 8*j+5) \
	SWLOOKUP(R10, 8*j+6) \
	SWLOOKUP(R11, 8*j+7)

// SWRELOAD, SWLOAD and SWSAVE are bitwin_amd64.h's for swCtx.
#define SWRELOAD(W, i) BWRELOAD(W, SW_P, i)
#define SWLOAD(W, i) BWLOAD(W, SW_P, SW_C, i)
#define SWSAVE(W, i) BWSAVE(W, SW_C, i)

// func refSwitchRounds(ctx *swCtx, rounds int)
// rounds ≥ 1 rounds of five tokens in each of the eight streams (values
// i, i+8, ... of stream i mod 8), 40 values a round. The caller
// guarantees every window and store stays inside its buffers. Each window
// keeps a sentinel 1 in its lowest bit: the lookups of a round read at
// most 62 bits from its top, so that bit is never data.
TEXT ·refSwitchRounds(SB), NOSPLIT, $0-16
	MOVQ ctx+0(FP), R15
	MOVQ SW_REC(R15), R13
	MOVQ SW_DELTA(R15), R12
	MOVQ SW_O(R15), R14
	SWLOAD(AX, 0)
	SWLOAD(BX, 1)
	SWLOAD(DX, 2)
	SWLOAD(SI, 3)
	SWLOAD(R8, 4)
	SWLOAD(R9, 5)
	SWLOAD(R10, 6)
	SWLOAD(R11, 7)

loop:
	SWLOOKUP8(0)
	SWLOOKUP8(1)
	SWLOOKUP8(2)
	SWLOOKUP8(3)
	SWLOOKUP8(4)
	ADDQ $40, R14
	DECQ rounds+8(FP)
	JZ   done
	SWRELOAD(AX, 0)
	SWRELOAD(BX, 1)
	SWRELOAD(DX, 2)
	SWRELOAD(SI, 3)
	SWRELOAD(R8, 4)
	SWRELOAD(R9, 5)
	SWRELOAD(R10, 6)
	SWRELOAD(R11, 7)
	JMP  loop

done:
	SWSAVE(AX, 0)
	SWSAVE(BX, 1)
	SWSAVE(DX, 2)
	SWSAVE(SI, 3)
	SWSAVE(R8, 4)
	SWSAVE(R9, 5)
	SWSAVE(R10, 6)
	SWSAVE(R11, 7)
	MOVQ R14, SW_O(R15)
	RET
