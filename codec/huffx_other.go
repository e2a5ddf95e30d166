//go:build !amd64 || noasm || !gc

package codec

func (h *huffX) fast4(dst, src []byte, st *[4]hxStream) { h.fast4Go(dst, src, st) }

func (h *huffX) fast1(dst, src []byte, s *hxStream) { h.fast1Go(dst, src, s) }

func (h *huffX) buildDouble() { h.buildDoubleGo() }
