//go:build amd64 && !noasm && gc

package codec

import (
	"runtime"
	"unsafe"
)

// swCtx is refSwitchRounds' state (offsets in ref_switch_amd64.s):
// absolute pointers, valid only during the call.
type swCtx struct {
	rec   *[256]uintptr                // per context key: the address of its group's table (see refSwitchDec)
	delta uintptr                      // ex's address minus tv's (mod 2^64)
	o     uintptr                      // the next token's address of stream 0 (stream k: o+k)
	p     [refSwitchMaxStreams]uintptr // end of each stream's window
	c     [refSwitchMaxStreams]uint64  // bits consumed from the window's top
}

//go:noescape
func refSwitchRounds(ctx *swCtx, rounds int)

// fast8 is fast8Go in assembly: as many rounds at a time as every
// stream's input and the tokens left allow without checks.
func (d *refSwitchDec) fast8(tv, ex, src []byte, st *[refSwitchMaxStreams]swStream) {
	if !use.switchAsm {
		d.fast8Go(tv, ex, src, st)
		return
	}
	ex = ex[:len(tv)]
	var rec [256]uintptr
	base := uintptr(unsafe.Pointer(unsafe.SliceData(d.tabs)))
	for c, inf := range d.cinfo {
		rec[c] = base + uintptr(inf>>6) // ≡ the shift mod 64
	}
	const S = refSwitchMaxStreams
	for {
		// A round starts with a window of at least 57 unread bits, reads
		// at most 55 and moves the next window down by at most 7 bytes;
		// it takes 5 tokens of each stream. The streams move in step:
		// stream k's next value is st[0].o + k.
		r := 1 << 30
		for i := range st {
			s := &st[i]
			p := s.p - int(s.c>>3)
			if p < 8 {
				return
			}
			r = min(r, (p-8)/7+1, (len(tv)-s.o)/(5*S))
		}
		if r <= 0 {
			return
		}
		sb := uintptr(unsafe.Pointer(unsafe.SliceData(src)))
		tb := uintptr(unsafe.Pointer(unsafe.SliceData(tv)))
		ctx := swCtx{rec: &rec, delta: uintptr(unsafe.Pointer(unsafe.SliceData(ex))) - tb, o: tb + uintptr(st[0].o)}
		for i := range st {
			s := &st[i]
			p := s.p - int(s.c>>3)
			ctx.p[i], ctx.c[i] = sb+uintptr(p), uint64(s.c&7)
		}
		refSwitchRounds(&ctx, r)
		runtime.KeepAlive(src)
		runtime.KeepAlive(tv)
		runtime.KeepAlive(ex)
		runtime.KeepAlive(d.tabs)
		o := int(ctx.o - tb)
		for i := range st {
			st[i].p, st[i].c, st[i].o = int(ctx.p[i]-sb), uint(ctx.c[i]), o+i
		}
	}
}
