//go:build !amd64 || noasm || !gc

package codec

func (d *refSwitchDec) fast8(tv, ex, src []byte, st *[refSwitchMaxStreams]swStream) {
	d.fast8Go(tv, ex, src, st)
}
