//go:build !amd64 || noasm || !gc

package huff

func (h *Decoder) fast4(dst, src []byte, st *[4]hxStream) { h.fast4Go(dst, src, st) }

func (h *Decoder) fast1(dst, src []byte, s *hxStream) { h.fast1Go(dst, src, s) }

func (h *Decoder) buildDouble() { h.buildDoubleGo() }

func encodeHuffStreamFast(out, src []byte, enc *[256]uint32) int {
	return encodeHuffStream(out, src, enc)
}

func huffEnc2Asm(out0, out1, src0, src1 *byte, n int, enc *[256]uint64, w *[2]W) {}
