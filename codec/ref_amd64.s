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
