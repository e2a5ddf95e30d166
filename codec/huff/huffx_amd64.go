//go:build amd64 && !noasm && gc

package huff

import (
	"runtime"
	"unsafe"
)

// hxCtx is huffXRounds' state (offsets in huffx_amd64.s): absolute
// pointers, valid only during the call.
type hxCtx struct {
	tab *uint32
	sh  uint64
	p   [4]uintptr // end of each stream's window
	c   [4]uint64  // bits consumed from the window's top
	o   [4]uintptr // next output byte
}

//go:noescape
func huffXRounds(ctx *hxCtx, rounds int)

//go:noescape
func huffXRounds1(ctx *hxCtx, rounds int)

//go:noescape
func huffXStream(ctx *hxCtx, rounds int)

//go:noescape
func huffXStream1(ctx *hxCtx, rounds int)

//go:noescape
func huffXDoubleAVX512(single *uint16, double *uint32, tl int)

// buildDouble is buildDoubleGo, 16 entries at a time where AVX-512 is.
func (h *Decoder) buildDouble() {
	if use.DoubleAVX512 && h.TL >= 4 {
		huffXDoubleAVX512(&h.Single[0], &h.double[0], int(h.TL))
		return
	}
	h.buildDoubleGo()
}

// fast4 is fast4Go in assembly: as many rounds at a time as every stream's
// input and output allow without checks.
func (h *Decoder) fast4(dst, src []byte, st *[4]hxStream) {
	if !use.DecAsm {
		h.fast4Go(dst, src, st)
		return
	}
	for {
		// A round starts with a window of at least 57 unread bits, reads
		// at most 55 and moves the next window down by at most 7 bytes;
		// it writes at most 10 symbols (+2 bytes of slack) with two
		// symbols per lookup, exactly 5 with one.
		r := 1 << 30
		for i := range st {
			s := &st[i]
			p := s.p - int(s.c>>3)
			if p < 8 {
				return
			}
			if h.two {
				r = min(r, (p-8)/7+1, (s.oe-s.o-2)/10)
			} else {
				r = min(r, (p-8)/7+1, (s.oe-s.o)/5)
			}
		}
		if r <= 0 {
			return
		}
		sb, db := uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(unsafe.Pointer(unsafe.SliceData(dst)))
		ctx := hxCtx{tab: &h.double[0], sh: uint64(64 - h.TL)}
		if !h.two {
			ctx.tab = (*uint32)(unsafe.Pointer(&h.Single[0]))
		}
		for i := range st {
			s := &st[i]
			p := s.p - int(s.c>>3)
			ctx.p[i], ctx.c[i], ctx.o[i] = sb+uintptr(p), uint64(s.c&7), db+uintptr(s.o)
		}
		if h.two {
			huffXRounds(&ctx, r)
		} else {
			huffXRounds1(&ctx, r)
		}
		runtime.KeepAlive(src)
		runtime.KeepAlive(dst)
		for i := range st {
			st[i].p, st[i].c, st[i].o = int(ctx.p[i]-sb), uint(ctx.c[i]), int(ctx.o[i]-db)
		}
	}
}

// fast1 is fast1Go in assembly (stream 0 of the context): as many rounds
// at a time as the stream's input and output allow without checks.
func (h *Decoder) fast1(dst, src []byte, s *hxStream) {
	if !use.DecAsm {
		h.fast1Go(dst, src, s)
		return
	}
	for {
		p := s.p - int(s.c>>3)
		if p < 8 {
			return
		}
		var r int
		if h.two {
			r = min((p-8)/7+1, (s.oe-s.o-2)/10)
		} else {
			r = min((p-8)/7+1, (s.oe-s.o)/5)
		}
		if r <= 0 {
			return
		}
		sb, db := uintptr(unsafe.Pointer(unsafe.SliceData(src))), uintptr(unsafe.Pointer(unsafe.SliceData(dst)))
		ctx := hxCtx{tab: &h.double[0], sh: uint64(64 - h.TL)}
		ctx.p[0], ctx.c[0], ctx.o[0] = sb+uintptr(p), uint64(s.c&7), db+uintptr(s.o)
		if h.two {
			huffXStream(&ctx, r)
		} else {
			ctx.tab = (*uint32)(unsafe.Pointer(&h.Single[0]))
			huffXStream1(&ctx, r)
		}
		runtime.KeepAlive(src)
		runtime.KeepAlive(dst)
		s.p, s.c, s.o = int(ctx.p[0]-sb), uint(ctx.c[0]), int(ctx.o[0]-db)
	}
}
