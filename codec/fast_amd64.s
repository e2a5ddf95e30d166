//go:build amd64 && !noasm && gc

#include "textflag.h"

// The fused extra-bit/add passes (refDeltasAdd*) share their arguments
// (dst *byte, ref *byte, ts *byte, n int, pad *byte, bp uint, limit uint,
// q uint) (int, uint), their registers for them (DI, SI, DX, R13, R9, BX,
// R10, CX; R8 counts the values done), the check of the extra-bit position
// every 64 values. (Each writes its results itself: go vet does not look
// into macros.)
#define DELTAS_ARGS \
	MOVQ dst+0(FP), DI \
	MOVQ ref+8(FP), SI \
	MOVQ ts+16(FP), DX \
	MOVQ n+24(FP), R13 \
	MOVQ pad+32(FP), R9 \
	MOVQ bp+40(FP), BX \
	MOVQ limit+48(FP), R10 \
	MOVQ q+56(FP), CX

// DELTAS_CHECK ends at done after the last value, and every 64 values
// when the position has passed limit; otherwise it goes on at body.
#define DELTAS_CHECK(body, done) \
	CMPQ R8, R13 \
	JGE  done \
	TESTQ $63, R8 \
	JNZ  body \
	CMPQ BX, R10 \
	JA   done

// DELTAS_TOKENS_D starts a step of 16 values in 32-bit lanes (the
// 16- and 32-bit-lane kernels of refDeltasAdd16AVX512 and
// refDeltasAdd32DAVX512): from the 16 tokens at DX+R8 with the constants
// Z20-Z23, Z27-Z30 of their setup: the tokens' sign masks (Z3), bases (Z5), low
// masks (Z6), inclusive prefix sums of the extra-bit counts (Z7), each
// value's bit (Z8) and the indexes of its byte and the three after it in
// the window at bp/8 (Z9).
#define DELTAS_TOKENS_D \
	VPMOVZXBD (DX)(R8*1), Z0 \
	VPADDD Z21, Z0, Z1 \
	VPSRLD $1, Z1, Z2 \
	VPANDD Z21, Z1, Z3 \
	VPSUBD Z3, Z27, Z3 \
	VPSRLD X20, Z2, Z4 \
	VPSUBUSW Z21, Z4, Z4 \
	VPMINUD Z22, Z2, Z5 \
	VPTERNLOGD $0xd8, Z23, Z2, Z5 \
	VPSLLVD Z4, Z5, Z5 \
	VPSLLVD Z4, Z21, Z6 \
	VPSUBD Z21, Z6, Z6 \
	VALIGND $15, Z27, Z4, Z7 \
	VPADDD Z7, Z4, Z7 \
	VALIGND $14, Z27, Z7, Z8 \
	VPADDD Z8, Z7, Z7 \
	VALIGND $12, Z27, Z7, Z8 \
	VPADDD Z8, Z7, Z7 \
	VALIGND $8, Z27, Z7, Z8 \
	VPADDD Z8, Z7, Z7 \
	VPSUBD Z4, Z7, Z8 \
	MOVQ BX, R11 \
	ANDQ $7, R11 \
	VPBROADCASTD R11, Z9 \
	VPADDD Z9, Z8, Z8 \
	VPSRLD $3, Z8, Z9 \
	VPANDD Z29, Z8, Z8 \
	VPSHUFB Z30, Z9, Z9 \
	VPADDB Z28, Z9, Z9

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

// func refDeltasAsm(ds *uint32, ts *byte, n int, tab *refTok, pad *byte, bp uint, limit uint) (int, uint)
// refApply.deltas over n values: the signed difference of each token (its
// refTok: base, low mask, neg mask, extra-bit count at offsets 0, 4, 8, 12
// of 16 bytes) with its extra bits read at bit position bp of pad. Every 64
// values it stops when bp has passed limit (the padding of pad covers 64
// values of reads past the limit) and returns the values done and bp.
TEXT ·refDeltasAsm(SB), NOSPLIT, $0-72
	MOVQ ds+0(FP), DI
	MOVQ ts+8(FP), SI
	MOVQ n+16(FP), DX
	MOVQ tab+24(FP), R8
	MOVQ pad+32(FP), R9
	MOVQ bp+40(FP), BX
	MOVQ limit+48(FP), R10
	XORQ AX, AX               // i

dloop:
	CMPQ AX, DX
	JGE  ddone
	TESTQ $63, AX
	JNZ  dbody
	CMPQ BX, R10
	JA   ddone

dbody:
	MOVBQZX (SI)(AX*1), R11
	SHLQ $4, R11              // &tab[t]
	MOVQ BX, R12
	SHRQ $3, R12
	MOVQ (R9)(R12*1), R13     // 8 bytes at bp/8
	MOVQ BX, CX
	ANDQ $7, CX
	SHRQ CX, R13
	ANDL 4(R8)(R11*1), R13
	ORL  (R8)(R11*1), R13     // a = base | extra
	MOVL 8(R8)(R11*1), R12
	XORL R12, R13
	SUBL R12, R13             // (a ^ neg) - neg
	MOVL R13, (DI)(AX*4)
	MOVBQZX 12(R8)(R11*1), R12
	ADDQ R12, BX
	INCQ AX
	JMP  dloop

ddone:
	MOVQ AX, ret+56(FP)
	MOVQ BX, ret1+64(FP)
	RET

// func add16AVX2(d *byte, ref *byte, ds *uint32, n int)
// add16 for n values, n a multiple of 16: key(r) + the difference (negated
// for negative r), masked to 16 bits, unkeyed, packed to 2-byte values.
TEXT ·add16AVX2(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ ref+8(FP), SI
	MOVQ ds+16(FP), DX
	MOVQ n+24(FP), CX
	MOVL $0x8000, AX
	MOVQ AX, X8
	VPBROADCASTD X8, Y8       // 0x8000
	MOVL $0x7fff, AX
	MOVQ AX, X9
	VPBROADCASTD X9, Y9       // 0x7fff
	MOVL $0xffff, AX
	MOVQ AX, X10
	VPBROADCASTD X10, Y10     // 0xffff
	MOVL $1, AX
	MOVQ AX, X11
	VPBROADCASTD X11, Y11     // 1
	XORQ R8, R8

aloop:
	CMPQ R8, CX
	JGE  adone
	VPMOVZXWD (SI)(R8*2), Y0  // r, values 0-7
	VMOVDQU (DX)(R8*4), Y1    // d
	VPMOVZXWD 16(SI)(R8*2), Y4 // values 8-15
	VMOVDQU 32(DX)(R8*4), Y5
	VPSLLD $16, Y0, Y2
	VPSRAD $31, Y2, Y2        // s = -(sign of r)
	VPSLLD $16, Y4, Y6
	VPSRAD $31, Y6, Y6
	VPAND Y9, Y2, Y3
	VPOR  Y8, Y3, Y3
	VPXOR Y0, Y3, Y3          // key(r)
	VPAND Y9, Y6, Y7
	VPOR  Y8, Y7, Y7
	VPXOR Y4, Y7, Y7
	VPXOR Y2, Y1, Y1
	VPSUBD Y2, Y1, Y1         // (d ^ s) - s
	VPXOR Y6, Y5, Y5
	VPSUBD Y6, Y5, Y5
	VPADDD Y1, Y3, Y3
	VPAND Y10, Y3, Y3
	VPADDD Y5, Y7, Y7
	VPAND Y10, Y7, Y7
	VPSRLD $15, Y3, Y1        // unkey: ^= 0x8000 | ((k>>15)-1) & 0x7fff
	VPSUBD Y11, Y1, Y1
	VPAND Y9, Y1, Y1
	VPOR  Y8, Y1, Y1
	VPXOR Y1, Y3, Y3
	VPSRLD $15, Y7, Y5
	VPSUBD Y11, Y5, Y5
	VPAND Y9, Y5, Y5
	VPOR  Y8, Y5, Y5
	VPXOR Y5, Y7, Y7
	VPACKUSDW Y7, Y3, Y3      // per lane: 0-3, 8-11 | 4-7, 12-15
	VPERMQ $0xd8, Y3, Y3
	VMOVDQU Y3, (DI)(R8*2)
	ADDQ $16, R8
	JMP  aloop

adone:
	VZEROUPPER
	RET

// func refDeltasAdd16WAVX2(dst *byte, ref *byte, ts *byte, n int, pad *byte, bp uint, limit uint, q uint) (int, uint)
// refDeltasAsm and add16AVX2 fused for 2-byte signed formats in AVX2, in
// 16-bit lanes, 16 values at a time (n a multiple of 16, 1 ≤ q ≤ 6, so
// that a value has at most 14 extra bits): the token arithmetic of
// refDeltasAdd16WAVX512, with 2^n from
// a byte shuffle (w2pow: the low byte indexed by n, the high one by
// n XOR 8), the bit positions summed within each 128-bit lane, each lane's
// values read from a 16-byte window of pad of its own (8 values read at
// most 7 + 7·14 + 14 bits, so bytes b..b+2 of a value lie within it):
// bytes b, b+1 and b+1, b+2 of each value by VPSHUFB, shifted right by
// its bit s as products with 2^(7-s) (w2shr), and the difference added
// to the reference's key as 16-bit integers (key - 0x8000 is the value
// with its magnitude bits flipped when negative). Every 64 values it
// stops when bp has passed limit, as refDeltasAsm; returns the values
// done and bp.
TEXT ·refDeltasAdd16WAVX2(SB), NOSPLIT, $0-80
	DELTAS_ARGS
	MOVQ CX, X9               // q (as a shift count)
	MOVL $1, R11
	MOVQ R11, X15
	VPBROADCASTW X15, Y15     // 1
	SHLL CX, R11
	MOVQ R11, X14
	VPBROADCASTW X14, Y14     // 1 << q
	MOVL $0x7fff, R11
	MOVQ R11, X12
	VPBROADCASTW X12, Y12     // 0x7fff
	MOVL $0x8007, R11
	MOVQ R11, X13
	VPBROADCASTW X13, Y13     // 0x8007
	MOVQ BX, R11
	ORQ  $0x8000, R11
	MOVQ R11, X8
	VPBROADCASTW X8, Y8
	VPAND Y13, Y8, Y8         // bp's bit in its byte, | 0x8000 (kept in step with bp)
	VMOVDQU w2pow<>(SB), Y11
	VMOVDQU w2shr<>(SB), Y10
	XORQ R8, R8

wloop:
	DELTAS_CHECK(wbody, wdone)

wbody:
	VPMOVZXBW (DX)(R8*1), Y0  // tokens
	VPADDW Y15, Y0, Y0        // t+1
	VPSLLW $15, Y0, Y3
	VPSRAW $15, Y3, Y3        // neg: -((t+1)&1)
	VPSRLW $1, Y0, Y0         // bucket
	VPSRLW X9, Y0, Y4
	VPSUBUSW Y15, Y4, Y4      // extra bits n = max(0, bucket>>q - 1)
	VPMINUW Y14, Y0, Y5
	VPSUBW Y15, Y14, Y2
	VPAND Y2, Y0, Y0
	VPOR Y0, Y5, Y5           // bucket below bit q, min(bucket, 2^q) from bit q
	VPSLLW $8, Y4, Y6
	VPOR Y4, Y6, Y6
	VPSLLW $11, Y15, Y7       // 0x0800
	VPXOR Y7, Y6, Y6          // n | (n^8)<<8
	VPSHUFB Y6, Y11, Y6       // 2^n
	VPMULLW Y6, Y5, Y5        // base
	VPSUBW Y15, Y6, Y6        // low mask
	VPSLLDQ $2, Y4, Y7        // prefix sum of n within each 128-bit lane
	VPADDW Y7, Y4, Y7
	VPSLLDQ $4, Y7, Y2
	VPADDW Y2, Y7, Y7
	VPSLLDQ $8, Y7, Y2
	VPADDW Y2, Y7, Y7         // inclusive
	VPSUBW Y4, Y7, Y4         // exclusive: bit of each value from its lane's first
	VPSHUFHW $0xff, Y7, Y2
	VPSHUFD $0xff, Y2, Y2     // each lane's sum in all its words
	VPERM2I128 $0x08, Y2, Y2, Y1 // the low lane's sum in the high lane, 0 in the low
	VPADDW Y8, Y1, Y1
	VPAND Y13, Y1, Y1         // each lane's first bit in its byte, | 0x8000
	VPADDW Y1, Y4, Y4         // each value's bit in its lane's window (< 128), | 0x8000
	VPERM2I128 $0x01, Y2, Y2, Y0
	VPADDW Y0, Y2, Y2         // both lanes' sum
	VPADDW Y2, Y8, Y8
	VPAND Y13, Y8, Y8         // the next step's first bit in its byte
	VPEXTRW $7, X7, R11       // the low lane's bits
	VPEXTRW $0, X2, R12       // both lanes'
	ADDQ BX, R11              // the high lane's first bit
	MOVQ BX, AX
	SHRQ $3, AX
	VMOVDQU (R9)(AX*1), X0    // the low lane's window: 16 bytes from its first bit's byte
	SHRQ $3, R11
	VINSERTI128 $1, (R9)(R11*1), Y0, Y0 // the high lane's
	ADDQ R12, BX
	VPSRLW $3, Y4, Y1         // byte b | 0x1000
	VPSLLW $8, Y1, Y2
	VPOR Y2, Y1, Y1           // b, b | 0x10 (VPSHUFB reads the low 4 bits)
	VPSLLW $8, Y15, Y2        // 0x0100
	VPADDW Y2, Y1, Y1         // bytes b, b+1
	VPSHUFB Y1, Y0, Y7
	VPADDW Y2, Y1, Y1
	VPADDW Y15, Y1, Y1        // bytes b+1, b+2
	VPSHUFB Y1, Y0, Y1
	VPSHUFB Y4, Y10, Y2       // P = 2^(7-s) (the high byte's bit 7 makes it 0 there)
	VPMULHUW Y2, Y7, Y4
	VPMULLW Y2, Y7, Y7
	VPSRLW $7, Y7, Y7
	VPSLLW $9, Y4, Y4
	VPOR Y4, Y7, Y7           // bytes b, b+1 >> s
	VPMULLW Y2, Y1, Y1
	VPSLLW $1, Y1, Y1         // bytes b+1, b+2 << (8-s)
	VPOR Y1, Y7, Y7
	VPAND Y6, Y7, Y7
	VPOR Y5, Y7, Y7           // magnitude
	VMOVDQU (SI)(R8*2), Y0    // references r
	VPSRAW $15, Y0, Y1        // -(sign of r)
	VPAND Y12, Y1, Y2
	VPXOR Y2, Y0, Y0          // key(r) - 0x8000
	VPXOR Y1, Y3, Y3
	VPXOR Y3, Y7, Y7
	VPSUBW Y3, Y7, Y7         // the difference
	VPADDW Y7, Y0, Y0         // key(v) - 0x8000
	VPSRAW $15, Y0, Y1
	VPAND Y12, Y1, Y1
	VPXOR Y1, Y0, Y0          // v
	VMOVDQU Y0, (DI)(R8*2)
	ADDQ $16, R8
	JMP  wloop

wdone:
	VZEROUPPER
	MOVQ R8, ret+64(FP)
	MOVQ BX, ret1+72(FP)
	RET

// w2pow: 2^i for i < 8, 0 for 8 ≤ i < 16, in both lanes.
DATA w2pow<>+0(SB)/8, $0x8040201008040201
DATA w2pow<>+8(SB)/8, $0
DATA w2pow<>+16(SB)/8, $0x8040201008040201
DATA w2pow<>+24(SB)/8, $0
GLOBL w2pow<>(SB), RODATA|NOPTR, $32

// w2shr: 2^(7 - i mod 8) for i < 16, in both lanes.
DATA w2shr<>+0(SB)/8, $0x0102040810204080
DATA w2shr<>+8(SB)/8, $0x0102040810204080
DATA w2shr<>+16(SB)/8, $0x0102040810204080
DATA w2shr<>+24(SB)/8, $0x0102040810204080
GLOBL w2shr<>(SB), RODATA|NOPTR, $32

// func refExps16AVX2(ex *byte, ref *byte, n int, m uint, em uint)
// refExps16 for n values, n a multiple of 32: each 2-byte value shifted
// right by m and masked with em, packed to bytes.
TEXT ·refExps16AVX2(SB), NOSPLIT, $0-40
	MOVQ ex+0(FP), DI
	MOVQ ref+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ m+24(FP), AX
	MOVQ AX, X12
	MOVQ em+32(FP), AX
	MOVQ AX, X13
	VPBROADCASTW X13, Y13
	XORQ R8, R8

xloop:
	CMPQ R8, CX
	JGE  xdone
	VMOVDQU (SI)(R8*2), Y0    // values 0-15
	VMOVDQU 32(SI)(R8*2), Y1  // values 16-31
	VPSRLW X12, Y0, Y0
	VPSRLW X12, Y1, Y1
	VPAND Y13, Y0, Y0
	VPAND Y13, Y1, Y1
	VPACKUSWB Y1, Y0, Y0      // per lane: 0-7, 16-23 | 8-15, 24-31
	VPERMQ $0xd8, Y0, Y0
	VMOVDQU Y0, (DI)(R8*1)
	ADDQ $32, R8
	JMP  xloop

xdone:
	VZEROUPPER
	RET

// func refDeltasAdd16AVX512(dst *byte, ref *byte, ts *byte, n int, pad *byte, bp uint, limit uint, q uint) (int, uint)
// refDeltasAsm and add16 fused for 2-byte signed formats, 16 values at a
// time (n a multiple of 16): each token's bucket, sign, extra-bit count,
// base and mask are computed (q sub-bucket bits), the counts summed to bit
// positions, the extra bits of all 16 taken from one 64-byte window of pad
// (16 values read at most 16·15 bits), and the differences added to the
// keys of the references. Every 64 values it stops when bp has passed
// limit, as refDeltasAsm; returns the values done and bp.
TEXT ·refDeltasAdd16AVX512(SB), NOSPLIT, $0-80
	DELTAS_ARGS
	VPBROADCASTQ CX, Z20      // q (as a shift count)
	MOVL $1, R11
	VPBROADCASTD R11, Z21     // 1
	SHLL CX, R11
	VPBROADCASTD R11, Z22     // 1 << q
	DECL R11
	VPBROADCASTD R11, Z23     // (1 << q) - 1
	MOVL $0x7fff, R11
	VPBROADCASTD R11, Z25
	VPXORD Z27, Z27, Z27      // 0
	MOVL $0x03020100, R11
	VPBROADCASTD R11, Z28
	MOVL $7, R11
	VPBROADCASTD R11, Z29
	// Z30: the VPSHUFB pattern that copies byte 0 of each dword into all
	// four of its bytes
	MOVQ $0x0404040400000000, R11
	VPBROADCASTQ R11, Z30
	MOVQ $0x0808080808080808, R11
	VPBROADCASTQ R11, Z16
	MOVQ $0xff00ff00ff00ff00, R11
	KMOVQ R11, K1
	VPADDB Z16, Z30, K1, Z30
	XORQ R8, R8

wloop:
	DELTAS_CHECK(wbody, wdone)

wbody:
	DELTAS_TOKENS_D
	MOVQ BX, R11
	SHRQ $3, R11
	VPERMB (R9)(R11*1), Z9, Z10
	VPSRLVD Z8, Z10, Z10
	VPANDD Z6, Z10, Z10
	VPORD Z5, Z10, Z10        // magnitude
	VPMOVZXWD (SI)(R8*2), Z11 // references
	VPSLLD $16, Z11, Z12
	VPSRAD $31, Z12, Z12      // their sign
	VPXORD Z12, Z3, Z3
	VPXORD Z3, Z10, Z10
	VPSUBD Z3, Z10, Z10       // the difference
	// key(r) = r XOR (sign ? 0xffff : 0x8000) in the low 16 bits: bits
	// 0..14 (Z25) r XOR sign, bit 15 NOT r (above it: anything)
	VPTERNLOGD $0x39, Z25, Z11, Z12
	VPADDD Z10, Z12, Z13      // key(r) + d (low 16 bits)
	VPSRLW $15, Z13, Z14
	VPSUBW Z21, Z14, Z14      // low word: 0xffff when bit 15 is 0, else 0
	VPTERNLOGD $0x39, Z25, Z13, Z14 // unkey, the same way
	VPMOVDW Z14, (DI)(R8*2)
	VEXTRACTI32X4 $3, Z7, X15
	VPEXTRD $3, X15, R11
	ADDQ R11, BX
	ADDQ $16, R8
	JMP  wloop

wdone:
	VZEROUPPER
	MOVQ R8, ret+64(FP)
	MOVQ BX, ret1+72(FP)
	RET

// func refDeltasAdd16WAVX512(dst *byte, ref *byte, ts *byte, n int, pad *byte, bp uint, limit uint, q uint) (int, uint)
// refDeltasAdd16AVX512 in 16-bit lanes, 32 values at a time (n a multiple
// of 32; needs VBMI2 besides): the same per-token arithmetic on words, the
// bit positions summed within each 128-bit lane and then across lanes, and
// each value's extra bits taken from the 64-byte window (32 values read at
// most 32·15 bits) as bytes b..b+1 and b+2..b+3 funnel-shifted right by the
// bit offset (VPSHRDVW). Stops every 64 values as refDeltasAdd16AVX512.
TEXT ·refDeltasAdd16WAVX512(SB), NOSPLIT, $0-80
	DELTAS_ARGS
	VPBROADCASTQ CX, Z20      // q (as a shift count)
	MOVL $0x00010001, R11
	VPBROADCASTD R11, Z21     // 1 in every word
	MOVL $1, R11
	SHLL CX, R11
	MOVL R11, R12
	SHLL $16, R12
	ORL  R12, R11
	VPBROADCASTD R11, Z22     // 1 << q
	VPSUBW Z21, Z22, Z23      // (1 << q) - 1
	MOVL $0x7fff7fff, R11
	VPBROADCASTD R11, Z25
	VPXORD Z27, Z27, Z27      // 0
	MOVL $0x00070007, R11
	VPBROADCASTD R11, Z29     // 7
	MOVL $0x01000100, R11
	VPBROADCASTD R11, Z28     // byte indexes +0, +1
	MOVL $0x02020202, R11
	VPBROADCASTD R11, Z26     // +2 more
	MOVL $0x0f0e0f0e, R11
	VPBROADCASTD R11, Z30     // VPSHUFB: each 128-bit lane's last word
	XORQ R8, R8

hloop:
	DELTAS_CHECK(hbody, hdone)

hbody:
	VPMOVZXBW (DX)(R8*1), Z0  // tokens
	VPADDW Z21, Z0, Z1        // t+1
	VPSRLW $1, Z1, Z2         // bucket
	VPANDD Z21, Z1, Z3
	VPSUBW Z3, Z27, Z3        // neg: -((t+1)&1)
	VPSRLW X20, Z2, Z4
	VPSUBUSW Z21, Z4, Z4      // extra bits n = max(0, bucket>>q - 1)
	VPMINUW Z22, Z2, Z5
	VPTERNLOGD $0xd8, Z23, Z2, Z5 // bucket below bit q, min(bucket, 2^q) from bit q
	VPSLLVW Z4, Z5, Z5        // base
	VPSLLVW Z4, Z21, Z6
	VPSUBW Z21, Z6, Z6        // low mask
	VPSLLDQ $2, Z4, Z7        // prefix sum of n within each 128-bit lane
	VPADDW Z7, Z4, Z7
	VPSLLDQ $4, Z7, Z8
	VPADDW Z8, Z7, Z7
	VPSLLDQ $8, Z7, Z8
	VPADDW Z8, Z7, Z7
	VPSHUFB Z30, Z7, Z8       // each lane's sum in all its words
	VALIGND $12, Z27, Z8, Z8  // the sum of the lane before
	VALIGND $12, Z27, Z8, Z9
	VPADDW Z9, Z8, Z8         // of the two before
	VALIGND $8, Z27, Z8, Z9
	VPADDW Z9, Z8, Z8         // of all before
	VPADDW Z8, Z7, Z7         // inclusive
	VPSUBW Z4, Z7, Z8         // exclusive: bit offset of each value
	MOVQ BX, R11
	ANDQ $7, R11
	VPBROADCASTW R11, Z9
	VPADDW Z9, Z8, Z8         // from the window's first byte
	VPSRLW $3, Z8, Z9         // byte
	VPANDD Z29, Z8, Z8        // bit
	VPSLLW $8, Z9, Z10
	VPORD Z10, Z9, Z9
	VPADDW Z28, Z9, Z9        // bytes byte, byte+1 of each lane
	VPADDW Z26, Z9, Z10       // byte+2, byte+3
	MOVQ BX, R11
	SHRQ $3, R11
	VMOVDQU64 (R9)(R11*1), Z11 // the window
	VPERMB Z11, Z9, Z9
	VPERMB Z11, Z10, Z10
	VPSHRDVW Z8, Z10, Z9      // the 16 bits from bit
	VPANDD Z6, Z9, Z9
	VPORD Z5, Z9, Z9          // magnitude
	VMOVDQU64 (SI)(R8*2), Z11 // references
	VPSRAW $15, Z11, Z12      // their sign
	VPXORD Z12, Z3, Z3
	VPXORD Z3, Z9, Z9
	VPSUBW Z3, Z9, Z9         // the difference
	// key(r) = r XOR (sign ? 0xffff : 0x8000): bits 0..14 (Z25) r XOR
	// sign, bit 15 NOT r
	VPTERNLOGD $0x39, Z25, Z11, Z12
	VPADDW Z9, Z12, Z13       // key(r) + d
	VPSRAW $15, Z13, Z14
	// unkey: bits 0..14 flipped where bit 15 is 0, bit 15 flipped
	VPTERNLOGD $0x93, Z25, Z13, Z14
	VMOVDQU64 Z14, (DI)(R8*2)
	VEXTRACTI32X4 $3, Z7, X15
	VPEXTRW $7, X15, R11
	ADDQ R11, BX
	ADDQ $32, R8
	JMP  hloop

hdone:
	VZEROUPPER
	MOVQ R8, ret+64(FP)
	MOVQ BX, ret1+72(FP)
	RET

// func refUngroupAVX512(tv *byte, ex *byte, grouped *byte, gtab *[256]byte, o *[256]uint32, n int, G int, scratch *[64]byte)
// refUngroup for n values (a multiple of 64) as one chain: per 64 values
// the groups (gtab of ex, four 64-byte tables) and then, for each group g
// < G, its next tokens expanded from grouped[o[g]] into the positions of
// its values, o[g] moving on by their number (groups alternate between two
// registers so that the expansions do not wait for each other). At the
// end scratch holds the largest token of each position.
TEXT ·refUngroupAVX512(SB), NOSPLIT, $0-64
	MOVQ tv+0(FP), DI
	MOVQ ex+8(FP), SI
	MOVQ grouped+16(FP), R10
	MOVQ gtab+24(FP), AX
	MOVQ o+32(FP), R9
	MOVQ n+40(FP), R13
	MOVQ G+48(FP), R14
	MOVQ scratch+56(FP), R15
	VMOVDQU64 0(AX), Z16
	VMOVDQU64 64(AX), Z17
	VMOVDQU64 128(AX), Z18
	VMOVDQU64 192(AX), Z19
	VPXORD Z5, Z5, Z5         // largest tokens
	XORQ R8, R8

uchunk:
	CMPQ R8, R13
	JGE  udone
	VMOVDQU8 (SI)(R8*1), Z0   // contexts
	VMOVDQA64 Z0, Z1
	VMOVDQA64 Z0, Z2
	VPERMI2B Z17, Z16, Z1     // groups of contexts 0-127
	VPERMI2B Z19, Z18, Z2     // 128-255
	VPMOVB2M Z0, K1
	VMOVDQU8 Z2, K1, Z1       // the groups
	VPXORD Z4, Z4, Z4
	VPXORD Z6, Z6, Z6
	XORQ BX, BX               // group

ugroup:
	VPBROADCASTB BX, Z3
	VPCMPEQB Z3, Z1, K2       // its positions
	KMOVQ K2, R11
	MOVL (R9)(BX*4), DX
	VPEXPANDB (R10)(DX*1), K2, Z4
	POPCNTQ R11, R11
	ADDL R11, DX
	MOVL DX, (R9)(BX*4)
	INCQ BX
	CMPQ BX, R14
	JGE  ujoin
	VPBROADCASTB BX, Z3
	VPCMPEQB Z3, Z1, K3
	KMOVQ K3, R11
	MOVL (R9)(BX*4), DX
	VPEXPANDB (R10)(DX*1), K3, Z6
	POPCNTQ R11, R11
	ADDL R11, DX
	MOVL DX, (R9)(BX*4)
	INCQ BX
	CMPQ BX, R14
	JLT  ugroup

ujoin:
	VPORD Z6, Z4, Z4
	VMOVDQU8 Z4, (DI)(R8*1)
	VPMAXUB Z4, Z5, Z5
	ADDQ $64, R8
	JMP  uchunk

udone:
	VMOVDQU8 Z5, (R15)
	VZEROUPPER
	RET

// func refCountGroupsAVX512(ex *byte, gtab *[256]byte, n int, G int, count *[256]uint32)
// Adds to count[g] the number of the n values (a multiple of 64) whose
// context ex maps to group g = gtab[ex] < G: per 64 values the groups as
// in refUngroupAVX512, then a compare and a popcount per group.
TEXT ·refCountGroupsAVX512(SB), NOSPLIT, $0-40
	MOVQ ex+0(FP), SI
	MOVQ gtab+8(FP), AX
	MOVQ n+16(FP), R13
	MOVQ G+24(FP), R14
	MOVQ count+32(FP), R9
	VMOVDQU64 0(AX), Z16
	VMOVDQU64 64(AX), Z17
	VMOVDQU64 128(AX), Z18
	VMOVDQU64 192(AX), Z19
	XORQ R8, R8

cchunk:
	CMPQ R8, R13
	JGE  cdone
	VMOVDQU8 (SI)(R8*1), Z0
	VMOVDQA64 Z0, Z1
	VMOVDQA64 Z0, Z2
	VPERMI2B Z17, Z16, Z1
	VPERMI2B Z19, Z18, Z2
	VPMOVB2M Z0, K1
	VMOVDQU8 Z2, K1, Z1       // the groups
	XORQ BX, BX

cgroup:
	VPBROADCASTB BX, Z3
	VPCMPEQB Z3, Z1, K2
	KMOVQ K2, R11
	POPCNTQ R11, R11
	ADDL R11, (R9)(BX*4)
	INCQ BX
	CMPQ BX, R14
	JLT  cgroup
	ADDQ $64, R8
	JMP  cchunk

cdone:
	VZEROUPPER
	RET

// func refTokens16AVX512(toks *byte, ctxs *byte, xs *uint32, xns *byte, src *byte, ref *byte, n int, m uint, em uint, q uint)
// refTokens for n 2-byte values of a signed format (n a multiple of 16),
// 16 at a time: keys of value and reference, their difference d mod 2^16,
// its magnitude a and sign, the bucket of a (itself below 2<<q, else from
// its bit length, VPLZCNTD, and the q bits below the leading one), the
// token 2·bucket - 1 + sign (0 for d = 0), the extra bits below the
// bucket's and the context (the reference's exponent: >> m, & em).
TEXT ·refTokens16AVX512(SB), NOSPLIT, $0-80
	MOVQ toks+0(FP), DI
	MOVQ ctxs+8(FP), R10
	MOVQ xs+16(FP), R11
	MOVQ xns+24(FP), R12
	MOVQ src+32(FP), SI
	MOVQ ref+40(FP), DX
	MOVQ n+48(FP), R13
	MOVQ m+56(FP), AX
	VPBROADCASTQ AX, Z20      // m (shift count)
	MOVQ em+64(FP), AX
	VPBROADCASTD AX, Z21      // exponent mask
	MOVQ q+72(FP), CX
	VPBROADCASTQ CX, Z22      // q (shift count)
	VPBROADCASTD CX, Z23      // q
	MOVL $1, AX
	VPBROADCASTD AX, Z24      // 1
	SHLL CX, AX
	MOVL AX, BX
	DECL BX
	VPBROADCASTD BX, Z25      // (1 << q) - 1
	SHLL $1, AX
	VPBROADCASTD AX, Z26      // 2 << q
	MOVL $0x8000, AX
	VPBROADCASTD AX, Z27
	MOVL $0x7fff, AX
	VPBROADCASTD AX, Z28
	MOVL $0xffff, AX
	VPBROADCASTD AX, Z29
	MOVL $32, AX
	VPBROADCASTD AX, Z30
	VPXORD Z31, Z31, Z31      // 0
	VPADDD Z24, Z23, Z19      // q + 1
	XORQ R8, R8

tloop:
	CMPQ R8, R13
	JGE  tdone
	VPMOVZXWD (SI)(R8*2), Z0  // v
	VPMOVZXWD (DX)(R8*2), Z1  // r
	VPSLLD $16, Z0, Z2
	VPSRAD $31, Z2, Z2
	VPANDD Z28, Z2, Z2
	VPORD Z27, Z2, Z2
	VPXORD Z0, Z2, Z2         // key(v)
	VPSLLD $16, Z1, Z3
	VPSRAD $31, Z3, Z3
	VPANDD Z28, Z3, Z4
	VPORD Z27, Z4, Z4
	VPXORD Z1, Z4, Z4         // key(r)
	VPSUBD Z4, Z2, Z2
	VPANDD Z29, Z2, Z2        // d
	VPSRLD X20, Z1, Z5
	VPANDD Z21, Z5, Z5        // context
	VPMOVDB Z5, (R10)(R8*1)
	VPSRLD $15, Z2, Z6        // 1 when d is negative
	VPSUBD Z6, Z31, Z7
	VPXORD Z7, Z2, Z8
	VPADDD Z6, Z8, Z8
	VPANDD Z29, Z8, Z8        // a = |d|
	VPSRLD $15, Z1, Z9
	VPXORD Z9, Z6, Z6         // token sign
	VPLZCNTD Z8, Z10
	VPSUBD Z10, Z30, Z10      // bit length L
	VPCMPUD $1, Z26, Z8, K1   // a < 2<<q: its own bucket
	VPSUBD Z19, Z10, Z11      // n = L - 1 - q
	VMOVDQA32 Z31, K1, Z11
	VPSUBD Z23, Z10, Z12
	VPSLLD X22, Z12, Z12      // (L - q) << q
	VPSRLVD Z11, Z8, Z13
	VPANDD Z25, Z13, Z13
	VPADDD Z13, Z12, Z12      // bucket
	VMOVDQA32 Z8, K1, Z12
	VPSLLD $1, Z12, Z12
	VPSUBD Z24, Z12, Z12
	VPADDD Z6, Z12, Z12       // 2·bucket - 1 + sign
	VPTESTNMD Z8, Z8, K2
	VMOVDQA32 Z31, K2, Z12    // 0 for d = 0
	VPMOVDB Z12, (DI)(R8*1)
	VPSLLVD Z11, Z24, Z14
	VPSUBD Z24, Z14, Z14
	VPANDD Z8, Z14, Z14       // extra bits
	VMOVDQU32 Z14, (R11)(R8*4)
	VPMOVDB Z11, (R12)(R8*1)
	ADDQ $16, R8
	JMP  tloop

tdone:
	VZEROUPPER
	RET

// func refDeltasAdd32AVX512(dst *byte, ref *byte, ts *byte, n int, pad *byte, bp uint, limit uint, q uint)
// refDeltasAdd16AVX512 for 4-byte signed values, 8 at a time in 64-bit
// lanes (a value's extra bits, at most 31, and its bit offset need more
// than 32): the same token arithmetic, bit positions by prefix sum, 8
// bytes per lane from one 64-byte window of pad (8 values read at most
// 8·31 bits), and the difference added to the key of the reference.
TEXT ·refDeltasAdd32AVX512(SB), NOSPLIT, $0-80
	DELTAS_ARGS
	VPBROADCASTQ CX, Z20      // q (as a shift count)
	MOVQ $1, R11
	VPBROADCASTQ R11, Z21     // 1
	SHLQ CX, R11
	VPBROADCASTQ R11, Z22     // 1 << q
	DECQ R11
	VPBROADCASTQ R11, Z23     // (1 << q) - 1
	MOVQ $0x7fffffff, R11
	VPBROADCASTQ R11, Z25
	VPXORQ Z27, Z27, Z27      // 0
	MOVQ $0x0706050403020100, R11
	VPBROADCASTQ R11, Z28
	MOVQ $7, R11
	VPBROADCASTQ R11, Z29
	// Z30: the VPSHUFB pattern that copies byte 0 of each qword into all
	// eight of its bytes
	VPXORQ Z30, Z30, Z30
	MOVQ $0x0808080808080808, R11
	VPBROADCASTQ R11, Z16
	MOVQ $0xff00ff00ff00ff00, R11
	KMOVQ R11, K1
	VPADDB Z16, Z30, K1, Z30
	XORQ R8, R8

vloop:
	DELTAS_CHECK(vbody, vdone)

vbody:
	VPMOVZXBQ (DX)(R8*1), Z0  // tokens
	VPADDQ Z21, Z0, Z1        // t+1
	VPSRLQ $1, Z1, Z2         // bucket
	VPANDQ Z21, Z1, Z3
	VPSUBQ Z3, Z27, Z3        // neg
	VPSRLQ X20, Z2, Z4
	VPSUBUSW Z21, Z4, Z4      // extra bits n = max(0, bucket>>q - 1) (< 2^16)
	VPMINUQ Z22, Z2, Z5
	VPTERNLOGQ $0xd8, Z23, Z2, Z5 // bucket below bit q, min(bucket, 2^q) from bit q
	VPSLLVQ Z4, Z5, Z5        // base
	VPSLLVQ Z4, Z21, Z6
	VPSUBQ Z21, Z6, Z6        // low mask
	VALIGNQ $7, Z27, Z4, Z7   // prefix sum of n
	VPADDQ Z7, Z4, Z7
	VALIGNQ $6, Z27, Z7, Z8
	VPADDQ Z8, Z7, Z7
	VALIGNQ $4, Z27, Z7, Z8
	VPADDQ Z8, Z7, Z7         // inclusive
	VPSUBQ Z4, Z7, Z8         // exclusive
	MOVQ BX, R11
	ANDQ $7, R11
	VPBROADCASTQ R11, Z9
	VPADDQ Z9, Z8, Z8
	VPSRLQ $3, Z8, Z9         // byte
	VPANDQ Z29, Z8, Z8        // bit
	VPSHUFB Z30, Z9, Z9
	VPADDB Z28, Z9, Z9        // bytes byte..byte+7 of each lane
	MOVQ BX, R11
	SHRQ $3, R11
	VPERMB (R9)(R11*1), Z9, Z10
	VPSRLVQ Z8, Z10, Z10
	VPANDQ Z6, Z10, Z10
	VPORQ Z5, Z10, Z10        // magnitude
	VPMOVZXDQ (SI)(R8*4), Z11 // references
	VPSLLQ $32, Z11, Z12
	VPSRAQ $63, Z12, Z12      // their sign
	VPXORQ Z12, Z3, Z3
	VPXORQ Z3, Z10, Z10
	VPSUBQ Z3, Z10, Z10       // the difference
	// key(r) = r XOR (sign ? 0xffffffff : 0x80000000) in the low 32 bits:
	// bits 0..30 (Z25) r XOR sign, bit 31 NOT r (above it: anything)
	VPTERNLOGQ $0x39, Z25, Z11, Z12
	VPADDQ Z10, Z12, Z13      // key(r) + d (low 32 bits)
	VPSRLD $31, Z13, Z14
	VPSUBD Z21, Z14, Z14      // low dword: all ones when bit 31 is 0, else 0
	VPTERNLOGQ $0x39, Z25, Z13, Z14 // unkey, the same way
	VPMOVQD Z14, (DI)(R8*4)
	VEXTRACTI64X2 $3, Z7, X15
	VPEXTRQ $1, X15, R11
	ADDQ R11, BX
	ADDQ $8, R8
	JMP  vloop

vdone:
	VZEROUPPER
	MOVQ R8, ret+64(FP)
	MOVQ BX, ret1+72(FP)
	RET

// func refDeltasAdd32DAVX512(dst *byte, ref *byte, ts *byte, n int, pad *byte, bp uint, limit uint, q uint) (int, uint)
// refDeltasAdd32AVX512 in 32-bit lanes, 16 values at a time (n a multiple
// of 16; needs VBMI2 besides): a value's bits are taken as bytes b..b+3 and
// b+4..b+7 of the 64-byte window funnel-shifted right by the bit offset
// (VPSHRDVD), which gives the 32 bits from it whatever the offset (at
// most 7) and the count (at most 31). The bits a value uses lie below
// byte 63 of the window (16 values read at most 16·31 bits); indexes of
// bytes past them may wrap (VPERMB takes them mod 64), and those bytes
// are masked off. Stops every 64 values as refDeltasAdd16AVX512.
TEXT ·refDeltasAdd32DAVX512(SB), NOSPLIT, $0-80
	DELTAS_ARGS
	VPBROADCASTQ CX, Z20      // q (as a shift count)
	MOVL $1, R11
	VPBROADCASTD R11, Z21     // 1
	SHLL CX, R11
	VPBROADCASTD R11, Z22     // 1 << q
	DECL R11
	VPBROADCASTD R11, Z23     // (1 << q) - 1
	MOVL $0x7fffffff, R11
	VPBROADCASTD R11, Z25
	VPXORD Z27, Z27, Z27      // 0
	MOVL $0x03020100, R11
	VPBROADCASTD R11, Z28     // byte indexes +0..+3
	MOVL $0x04040404, R11
	VPBROADCASTD R11, Z26     // +4 more
	MOVL $7, R11
	VPBROADCASTD R11, Z29
	// Z30: the VPSHUFB pattern that copies byte 0 of each dword into all
	// four of its bytes
	MOVQ $0x0404040400000000, R11
	VPBROADCASTQ R11, Z30
	MOVQ $0x0808080808080808, R11
	VPBROADCASTQ R11, Z16
	MOVQ $0xff00ff00ff00ff00, R11
	KMOVQ R11, K1
	VPADDB Z16, Z30, K1, Z30
	XORQ R8, R8

dloop:
	DELTAS_CHECK(dbody, ddone)

dbody:
	DELTAS_TOKENS_D
	VPADDB Z26, Z9, Z10       // byte+4..byte+7
	MOVQ BX, R11
	SHRQ $3, R11
	VMOVDQU64 (R9)(R11*1), Z11 // the window
	VPERMB Z11, Z9, Z9
	VPERMB Z11, Z10, Z10
	VPSHRDVD Z8, Z10, Z9      // the 32 bits from bit
	VPANDD Z6, Z9, Z9
	VPORD Z5, Z9, Z9          // magnitude
	VMOVDQU64 (SI)(R8*4), Z11 // references
	VPSRAD $31, Z11, Z12      // their sign
	VPXORD Z12, Z3, Z3
	VPXORD Z3, Z9, Z9
	VPSUBD Z3, Z9, Z9         // the difference
	// key(r) = r XOR (sign ? 0xffffffff : 0x80000000)
	VPTERNLOGD $0x39, Z25, Z11, Z12
	VPADDD Z9, Z12, Z13       // key(r) + d
	VPSRAD $31, Z13, Z14
	// unkey: bits 0..30 flipped where bit 31 is 0, bit 31 flipped
	VPTERNLOGD $0x93, Z25, Z13, Z14
	VMOVDQU64 Z14, (DI)(R8*4)
	VEXTRACTI32X4 $3, Z7, X15
	VPEXTRD $3, X15, R11
	ADDQ R11, BX
	ADDQ $16, R8
	JMP  dloop

ddone:
	VZEROUPPER
	MOVQ R8, ret+64(FP)
	MOVQ BX, ret1+72(FP)
	RET

// func refExps32AVX512(ex *byte, ref *byte, n int, m uint, em uint)
// The exponent of each 4-byte value (>> m, & em) as a byte, 16 at a time
// (n a multiple of 16).
TEXT ·refExps32AVX512(SB), NOSPLIT, $0-40
	MOVQ ex+0(FP), DI
	MOVQ ref+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ m+24(FP), AX
	VPBROADCASTQ AX, Z20
	MOVQ em+32(FP), AX
	VPBROADCASTD AX, Z21
	XORQ R8, R8

eloop32:
	CMPQ R8, CX
	JGE  edone32
	VMOVDQU32 (SI)(R8*4), Z0
	VPSRLD X20, Z0, Z0
	VPANDD Z21, Z0, Z0
	VPMOVDB Z0, (DI)(R8*1)
	ADDQ $16, R8
	JMP  eloop32

edone32:
	VZEROUPPER
	RET

// func expandPairsAVX512(dst *byte, codes *byte, m int, tab *[256]uint32, esc int, exc *byte, nexc int, x *int) int
// expandPairs 32 codes at a time where every code below esc has its pair
// in the low 16 bits of its tab entry: the entries as a table of 256 words
// in eight registers, each code's word by VPERMI2W from the four 64-word
// quarters, chosen by the code's bits 6 and 7; the escapes of a chunk (code
// esc) are then filled from exc at *x in order. Stops before the first 32
// codes with an invalid code (above esc) or more escapes than exc has
// left; returns the codes written (*x moved on).
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
	VMOVDQU32 0(DX), Z0       // the low words of the 256 entries
	VPMOVDW Z0, Y1
	VMOVDQU32 64(DX), Z0
	VPMOVDW Z0, Y2
	VINSERTI64X4 $1, Y2, Z1, Z16
	VMOVDQU32 128(DX), Z0
	VPMOVDW Z0, Y1
	VMOVDQU32 192(DX), Z0
	VPMOVDW Z0, Y2
	VINSERTI64X4 $1, Y2, Z1, Z17
	VMOVDQU32 256(DX), Z0
	VPMOVDW Z0, Y1
	VMOVDQU32 320(DX), Z0
	VPMOVDW Z0, Y2
	VINSERTI64X4 $1, Y2, Z1, Z18
	VMOVDQU32 384(DX), Z0
	VPMOVDW Z0, Y1
	VMOVDQU32 448(DX), Z0
	VPMOVDW Z0, Y2
	VINSERTI64X4 $1, Y2, Z1, Z19
	VMOVDQU32 512(DX), Z0
	VPMOVDW Z0, Y1
	VMOVDQU32 576(DX), Z0
	VPMOVDW Z0, Y2
	VINSERTI64X4 $1, Y2, Z1, Z20
	VMOVDQU32 640(DX), Z0
	VPMOVDW Z0, Y1
	VMOVDQU32 704(DX), Z0
	VPMOVDW Z0, Y2
	VINSERTI64X4 $1, Y2, Z1, Z21
	VMOVDQU32 768(DX), Z0
	VPMOVDW Z0, Y1
	VMOVDQU32 832(DX), Z0
	VPMOVDW Z0, Y2
	VINSERTI64X4 $1, Y2, Z1, Z22
	VMOVDQU32 896(DX), Z0
	VPMOVDW Z0, Y1
	VMOVDQU32 960(DX), Z0
	VPMOVDW Z0, Y2
	VINSERTI64X4 $1, Y2, Z1, Z23
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
	VPCMPUW $6, Z24, Z0, K1   // code > esc: invalid
	KORTESTD K1, K1
	JNZ  pdone
	VPCMPUW $0, Z24, Z0, K4   // the escapes
	KMOVD K4, R11
	POPCNTL R11, AX
	LEAQ (R12)(AX*2), AX      // exceptions used after this chunk
	CMPQ AX, R14
	JA   pdone
	VMOVDQA64 Z0, Z1
	VPERMI2W Z17, Z16, Z1     // entries 0-63
	VMOVDQA64 Z0, Z2
	VPERMI2W Z19, Z18, Z2     // 64-127
	VMOVDQA64 Z0, Z3
	VPERMI2W Z21, Z20, Z3     // 128-191
	VMOVDQA64 Z0, Z4
	VPERMI2W Z23, Z22, Z4     // 192-255
	VPTESTMW Z25, Z0, K2      // bit 6
	VPTESTMW Z26, Z0, K3      // bit 7
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

// func refTokens32AVX512(toks *byte, ctxs *byte, xs *uint32, xns *byte, src *byte, ref *byte, n int, m uint, em uint, q uint)
// refTokens16AVX512 for 4-byte values (F32), 16 at a time: the same
// arithmetic on 32-bit keys, whose difference wraps by itself.
TEXT ·refTokens32AVX512(SB), NOSPLIT, $0-80
	MOVQ toks+0(FP), DI
	MOVQ ctxs+8(FP), R10
	MOVQ xs+16(FP), R11
	MOVQ xns+24(FP), R12
	MOVQ src+32(FP), SI
	MOVQ ref+40(FP), DX
	MOVQ n+48(FP), R13
	MOVQ m+56(FP), AX
	VPBROADCASTQ AX, Z20      // m (shift count)
	MOVQ em+64(FP), AX
	VPBROADCASTD AX, Z21      // exponent mask
	MOVQ q+72(FP), CX
	VPBROADCASTQ CX, Z22      // q (shift count)
	VPBROADCASTD CX, Z23      // q
	MOVL $1, AX
	VPBROADCASTD AX, Z24      // 1
	SHLL CX, AX
	MOVL AX, BX
	DECL BX
	VPBROADCASTD BX, Z25      // (1 << q) - 1
	SHLL $1, AX
	VPBROADCASTD AX, Z26      // 2 << q
	MOVL $0x80000000, AX
	VPBROADCASTD AX, Z27
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z28
	MOVL $32, AX
	VPBROADCASTD AX, Z30
	VPXORD Z31, Z31, Z31      // 0
	VPADDD Z24, Z23, Z19      // q + 1
	XORQ R8, R8

tloop32:
	CMPQ R8, R13
	JGE  tdone32
	VMOVDQU32 (SI)(R8*4), Z0  // v
	VMOVDQU32 (DX)(R8*4), Z1  // r
	VPSRAD $31, Z0, Z2
	VPANDD Z28, Z2, Z2
	VPORD Z27, Z2, Z2
	VPXORD Z0, Z2, Z2         // key(v)
	VPSRAD $31, Z1, Z3
	VPANDD Z28, Z3, Z4
	VPORD Z27, Z4, Z4
	VPXORD Z1, Z4, Z4         // key(r)
	VPSUBD Z4, Z2, Z2         // d
	VPSRLD X20, Z1, Z5
	VPANDD Z21, Z5, Z5        // context
	VPMOVDB Z5, (R10)(R8*1)
	VPSRLD $31, Z2, Z6        // 1 when d is negative
	VPSUBD Z6, Z31, Z7
	VPXORD Z7, Z2, Z8
	VPADDD Z6, Z8, Z8         // a = |d|
	VPSRLD $31, Z1, Z9
	VPXORD Z9, Z6, Z6         // token sign
	VPLZCNTD Z8, Z10
	VPSUBD Z10, Z30, Z10      // bit length L
	VPCMPUD $1, Z26, Z8, K1   // a < 2<<q: its own bucket
	VPSUBD Z19, Z10, Z11      // n = L - 1 - q
	VMOVDQA32 Z31, K1, Z11
	VPSUBD Z23, Z10, Z12
	VPSLLD X22, Z12, Z12      // (L - q) << q
	VPSRLVD Z11, Z8, Z13
	VPANDD Z25, Z13, Z13
	VPADDD Z13, Z12, Z12      // bucket
	VMOVDQA32 Z8, K1, Z12
	VPSLLD $1, Z12, Z12
	VPSUBD Z24, Z12, Z12
	VPADDD Z6, Z12, Z12       // 2·bucket - 1 + sign
	VPTESTNMD Z8, Z8, K2
	VMOVDQA32 Z31, K2, Z12    // 0 for d = 0
	VPMOVDB Z12, (DI)(R8*1)
	VPSLLVD Z11, Z24, Z14
	VPSUBD Z24, Z14, Z14
	VPANDD Z8, Z14, Z14       // extra bits
	VMOVDQU32 Z14, (R11)(R8*4)
	VPMOVDB Z11, (R12)(R8*1)
	ADDQ $16, R8
	JMP  tloop32

tdone32:
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

// func huffEnc2Asm(out0, out1, src0, src1 *byte, n int, enc *[256]uint64, w *[2]huffW)
// Codes src0[n-1..0] and src1[n-1..0] into two huff0 streams from the
// states in w (see huffW in huff.go), four codes of each between flushes.
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
