//go:build !amd64 || noasm || !gc

package codec

var useAVX2 = false

func mergeBF16Asm(dst, e, r []byte) int         { return 0 }
func splitBF16Asm(src, e, r []byte) (int, byte) { return 0, 0 }
