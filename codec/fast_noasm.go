//go:build !amd64 || noasm || !gc

package codec

func mergeBF16Asm(dst, e, r []byte) int         { return 0 }
func splitBF16Asm(src, e, r []byte) (int, byte) { return 0, 0 }

func mergeF16Fast(dst []byte, j uint, syms []byte, planes [][]byte) int { return 0 }

func splitF16Fast(src []byte, j uint, syms []byte, planes [][]byte) int { return 0 }

func unpackFast(dst, src []byte, w uint) int { return 0 }

func mergeF32Fast(dst, e, p0, p1, p2 []byte) int { return 0 }

func splitF32Fast(src, e, p0, p1, p2 []byte) (int, uint64) { return 0, 0 }

func expandPairsFast(dst, codes []byte, i int, tab *[256]uint32) int { return i }

func pairizeFast(codes, syms []byte, i int, pc *[65536]byte) int { return i }

func (ap *refApply) refDeltasFast(ds []uint32, ts []byte, bp, limit uint) (int, uint) {
	return ap.deltasChecked(ds, ts, bp, limit)
}

func add16Fast(d, ref []byte, ds []uint32) { add16(d, ref, ds) }

func (ap *refApply) deltasAdd16Rest(d, ref []byte, ds []uint32, ts []byte, bp, limit uint) (int, uint) {
	return ap.deltasAdd16Checked(d, ref, ts, bp, limit)
}

func refExps16Fast(ex, ref []byte, m uint, em uint16) { refExps16(ex, ref, m, em) }

func (ap *refApply) deltasAddFast(dst, ref, ts []byte, bp, limit, q uint, size int) (tried, done int, pos uint) {
	return 0, 0, bp
}

func refUngroupFast(tv, ex, grouped []byte, gtab *[256]byte, o *[256]uint32, G int) (int, byte) {
	return 0, 0
}

func refCountGroupsFast(ex []byte, gtab *[256]byte, G int, count *[256]uint32) int { return 0 }

func refTokensFast(toks, ctxs []byte, xs []uint32, xns []byte, src, ref []byte, p *refSpec) int {
	return 0
}

func refExps32Fast(ex, ref []byte, m uint, em uint32) int { return 0 }

func expandPairsWide(dst, codes []byte, tab *[256]uint32, esc byte, exc []byte, x *int) int {
	return 0
}

func gatherNonzeroFast(src []byte, size int, vals, mask []byte) (i, m int, or uint64) {
	return 0, 0, 0
}

func scatterNonzeroFast(dst, vals, mask []byte, size int) (i, k int, zero bool) {
	return 0, 0, false
}
