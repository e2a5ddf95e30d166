//go:build !amd64 || noasm || !gc

package codec

var useAVX2 = false

func mergeBF16Asm(dst, e, r []byte) int         { return 0 }
func splitBF16Asm(src, e, r []byte) (int, byte) { return 0, 0 }

func expandPairsFast(dst, codes []byte, i int, tab *[256]uint32) int { return i }

func encodeHuffStreamFast(out, src []byte, enc *[256]uint32) int {
	return encodeHuffStream(out, src, enc)
}

func pairizeFast(codes, syms []byte, i int, pc *[65536]byte) int { return i }
