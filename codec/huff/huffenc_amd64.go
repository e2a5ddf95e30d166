//go:build amd64 && !noasm && gc

package huff

// huffEnc2Asm is huffEnc2Go in assembly (n > 0 symbols in each stream).
//
//go:noescape
func huffEnc2Asm(out0, out1, src0, src1 *byte, n int, enc *[256]uint64, w *[2]W)

//go:noescape
func encodeHuffStreamAsm(out, src *byte, n int, enc *[256]uint32) int

// encodeHuffStreamFast is encodeHuffStream in assembly (out must have
// StreamMax(len(src)) bytes).
func encodeHuffStreamFast(out, src []byte, enc *[256]uint32) int {
	if !use.StreamAsm {
		return encodeHuffStream(out, src, enc)
	}
	_ = out[StreamMax(len(src))-1]
	var p *byte
	if len(src) > 0 {
		p = &src[0]
	}
	return encodeHuffStreamAsm(&out[0], p, len(src), enc)
}
