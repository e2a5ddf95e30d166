//go:build amd64 && !noasm && gc

#include "textflag.h"
#include "bitwin_amd64.h"

// hxCtx offsets (huffx_amd64.go)
#define CTX_TAB 0
#define CTX_SH 8
#define CTX_P 16
#define CTX_C 48
#define CTX_O 80

// LOOKUP decodes one table entry of stream W into output pointer O:
// entry = bits | sym1<<8 | sym2<<16 | count<<24; the four bytes from sym1
// on are stored (the third and fourth are overwritten later), O advances
// by count and W shifts out the bits.
#define LOOKUP(W, O) \
	SHRXQ CX, W, DI \
	MOVL  (R14)(DI*4), DI \
	SHLXQ DI, W, W \
	SHRL  $8, DI \
	MOVL  DI, (O) \
	SHRL  $16, DI \
	ADDQ  DI, O

// LOOKUP1 is LOOKUP for a table of single symbols (R14 = single,
// entry = symbol<<8 | bits): one byte stored at offset off.
#define LOOKUP1(W, O, off) \
	SHRXQ   CX, W, DI \
	MOVWQZX (R14)(DI*2), DI \
	SHLXQ   DI, W, W \
	SHRQ    $8, DI \
	MOVB    DI, off(O)

// RELOAD, LOAD and SAVE are bitwin_amd64.h's for hxCtx.
#define RELOAD(W, i) BWRELOAD(W, CTX_P, i)
#define LOAD(W, i) BWLOAD(W, CTX_P, CTX_C, i)
#define SAVE(W, i) BWSAVE(W, CTX_C, i)

// ENTER loads the state: ctx in R15, rounds in R13, the table in R14, the
// shift in CX, output pointers in R8-R11, windows in AX, BX, DX, SI.
#define ENTER \
	MOVQ ctx+0(FP), R15 \
	MOVQ rounds+8(FP), R13 \
	MOVQ CTX_TAB(R15), R14 \
	MOVQ CTX_SH(R15), CX \
	MOVQ (CTX_O+0)(R15), R8 \
	MOVQ (CTX_O+8)(R15), R9 \
	MOVQ (CTX_O+16)(R15), R10 \
	MOVQ (CTX_O+24)(R15), R11 \
	LOAD(AX, 0) \
	LOAD(BX, 1) \
	LOAD(DX, 2) \
	LOAD(SI, 3)

// LEAVE stores the state back.
#define LEAVE \
	SAVE(AX, 0) \
	SAVE(BX, 1) \
	SAVE(DX, 2) \
	SAVE(SI, 3) \
	MOVQ R8, (CTX_O+0)(R15) \
	MOVQ R9, (CTX_O+8)(R15) \
	MOVQ R10, (CTX_O+16)(R15) \
	MOVQ R11, (CTX_O+24)(R15)

#define RELOAD4 \
	RELOAD(AX, 0) \
	RELOAD(BX, 1) \
	RELOAD(DX, 2) \
	RELOAD(SI, 3)

// LOOKUP4 does one lookup in each of the four streams.
#define LOOKUP4 \
	LOOKUP(AX, R8) \
	LOOKUP(BX, R9) \
	LOOKUP(DX, R10) \
	LOOKUP(SI, R11)

// LOOKUP1x4 does LOOKUP1 in each of the four streams, storing at off.
#define LOOKUP1x4(off) \
	LOOKUP1(AX, R8, off) \
	LOOKUP1(BX, R9, off) \
	LOOKUP1(DX, R10, off) \
	LOOKUP1(SI, R11, off)

// func huffXRounds1(ctx *hxCtx, rounds int)
// huffXRounds with one symbol per lookup (ctx.tab is the single table).
TEXT ·huffXRounds1(SB), NOSPLIT, $0-16
	ENTER

loop1:
	LOOKUP1x4(0)
	LOOKUP1x4(1)
	LOOKUP1x4(2)
	LOOKUP1x4(3)
	LOOKUP1x4(4)
	ADDQ $5, R8
	ADDQ $5, R9
	ADDQ $5, R10
	ADDQ $5, R11
	DECQ R13
	JZ   done1
	RELOAD4
	JMP  loop1

done1:
	LEAVE
	RET

// RELOADP is RELOAD for a stream whose window end is kept in register P.
#define RELOADP(W, P) \
	TZCNTQ W, DI \
	MOVQ   DI, W \
	SHRQ   $3, W \
	SUBQ   W, P \
	MOVQ   -8(P), W \
	ORQ    $1, W \
	ANDQ   $7, DI \
	SHLXQ  DI, W, W

// ENTER1 loads stream 0 of ctx: ctx in R15, rounds in R13, the table in
// R14, the shift in CX, the output pointer in R8, the window end in R9,
// the window in AX.
#define ENTER1 \
	MOVQ ctx+0(FP), R15 \
	MOVQ rounds+8(FP), R13 \
	MOVQ CTX_TAB(R15), R14 \
	MOVQ CTX_SH(R15), CX \
	MOVQ (CTX_O+0)(R15), R8 \
	MOVQ (CTX_P+0)(R15), R9 \
	LOAD(AX, 0)

// LEAVE1 stores stream 0's state back.
#define LEAVE1 \
	SAVE(AX, 0) \
	MOVQ R8, (CTX_O+0)(R15) \
	MOVQ R9, (CTX_P+0)(R15)

// func huffXStream1(ctx *hxCtx, rounds int)
// huffXRounds1 for the one stream of a 1-stream block (stream 0 of ctx).
TEXT ·huffXStream1(SB), NOSPLIT, $0-16
	ENTER1

sloop1:
	LOOKUP1(AX, R8, 0)
	LOOKUP1(AX, R8, 1)
	LOOKUP1(AX, R8, 2)
	LOOKUP1(AX, R8, 3)
	LOOKUP1(AX, R8, 4)
	ADDQ $5, R8
	DECQ R13
	JZ   sdone1
	RELOADP(AX, R9)
	JMP  sloop1

sdone1:
	LEAVE1
	RET

// func huffXStream(ctx *hxCtx, rounds int)
// huffXRounds for the one stream of a 1-stream block (stream 0 of ctx).
TEXT ·huffXStream(SB), NOSPLIT, $0-16
	ENTER1

sloop:
	LOOKUP(AX, R8)
	LOOKUP(AX, R8)
	LOOKUP(AX, R8)
	LOOKUP(AX, R8)
	LOOKUP(AX, R8)
	DECQ R13
	JZ   sdone
	RELOADP(AX, R9)
	JMP  sloop

sdone:
	LEAVE1
	RET

// func huffXRounds(ctx *hxCtx, rounds int)
// rounds ≥ 1 rounds of five lookups in each of the four streams. The
// caller guarantees every window and store stays inside its buffers.
// Each window keeps a sentinel 1 in its lowest bit: the lookups of a
// round read at most 62 bits from its top, so that bit is never data.
TEXT ·huffXRounds(SB), NOSPLIT, $0-16
	ENTER

loop:
	LOOKUP4
	LOOKUP4
	LOOKUP4
	LOOKUP4
	LOOKUP4
	DECQ R13
	JZ   done
	RELOAD4
	JMP  loop

done:
	LEAVE
	RET

DATA hxIota<>+0(SB)/4, $0
DATA hxIota<>+4(SB)/4, $1
DATA hxIota<>+8(SB)/4, $2
DATA hxIota<>+12(SB)/4, $3
DATA hxIota<>+16(SB)/4, $4
DATA hxIota<>+20(SB)/4, $5
DATA hxIota<>+24(SB)/4, $6
DATA hxIota<>+28(SB)/4, $7
DATA hxIota<>+32(SB)/4, $8
DATA hxIota<>+36(SB)/4, $9
DATA hxIota<>+40(SB)/4, $10
DATA hxIota<>+44(SB)/4, $11
DATA hxIota<>+48(SB)/4, $12
DATA hxIota<>+52(SB)/4, $13
DATA hxIota<>+56(SB)/4, $14
DATA hxIota<>+60(SB)/4, $15
GLOBL hxIota<>(SB), RODATA|NOPTR, $64

// func huffXDoubleAVX512(single *uint16, double *uint32, tl int)
// buildDouble 16 entries at a time: entry i's next code is single[(i <<
// l1) mod 2^tl], gathered (4-byte reads at 2-byte steps: the last may read
// 2 bytes past single, which Decoder's layout keeps inside the struct).
TEXT ·huffXDoubleAVX512(SB), NOSPLIT, $0-24
	MOVQ single+0(FP), SI
	MOVQ double+8(FP), DI
	MOVQ tl+16(FP), CX
	MOVL $1, AX
	SHLQ CX, AX              // n = 2^tl (a multiple of 16: tl ≥ 4 here)
	LEAQ -1(AX), DX
	VPBROADCASTD DX, Z1      // mask
	VPBROADCASTD CX, Z2      // tl
	MOVL $0xFF, DX
	VPBROADCASTD DX, Z3      // 0xFF
	MOVL $0xFF00, DX
	VPBROADCASTD DX, Z4      // 0xFF00
	MOVL $0x01000000, DX
	VPBROADCASTD DX, Z5      // count 1
	MOVL $0x02000000, DX
	VPBROADCASTD DX, Z6      // count 2
	MOVL $0xFFFF, DX
	VPBROADCASTD DX, Z7      // 0xFFFF
	VMOVDQU32 hxIota<>(SB), Z8 // i + lane
	MOVL $16, DX
	VPBROADCASTD DX, Z9      // 16
	XORQ BX, BX

loop:
	VPMOVZXWD  (SI)(BX*2), Z10        // e1
	VPANDD     Z3, Z10, Z11           // l1
	VPANDD     Z4, Z10, Z12           // s1<<8
	VPSLLVD    Z11, Z8, Z13           // i << l1
	VPANDD     Z1, Z13, Z13
	KXNORW     K1, K1, K1
	VPXORD     Z14, Z14, Z14
	VPGATHERDD (SI)(Z13*2), K1, Z14  // e2 (low 16 bits)
	VPANDD     Z7, Z14, Z14
	VPANDD     Z3, Z14, Z15           // l2
	VPADDD     Z11, Z15, Z15          // l1 + l2
	VPSRLD     $8, Z14, Z14
	VPSLLD     $16, Z14, Z14          // s2<<16
	VPTERNLOGD $0xFE, Z12, Z15, Z14   // s2<<16 | l1+l2 | s1<<8
	VPORD      Z6, Z14, Z14           // two
	VPCMPUD    $2, Z2, Z15, K2        // l1+l2 <= tl
	VMOVDQA32  Z5, Z16
	VPTERNLOGD $0xFE, Z12, Z11, Z16   // one = count1 | s1<<8 | l1
	VPBLENDMD  Z14, Z16, K2, Z17
	VMOVDQU32  Z17, (DI)(BX*4)
	VPADDD     Z9, Z8, Z8
	ADDQ       $16, BX
	CMPQ       BX, AX
	JB         loop
	VZEROUPPER
	RET

