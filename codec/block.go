package codec

import (
	"encoding/binary"
	"math"

	"github.com/klauspost/compress/zstd"

	"neuralzip/codec/prog"
	"neuralzip/dtype"
)

// blockEncoder is one worker's reusable encoding state.
type blockEncoder struct {
	setup      *Setup  // shared tables, or nil
	threshold  float64 // see EncodeOptions.SetupThreshold
	st         streamEncoder
	zstd       *zstd.Encoder
	zstdPlanes *zstd.Encoder // planes of float blocks with repeats (zstdPlanesLevel)
	lzPlanes   bool          // the archive may hold zstd-coded streams (version 9)
	cm         bool          // the archive may hold cm blocks (version 10; cm.go)
	zstdFast   *zstd.Encoder // opaque bytes that compress little (zstdFewMatchesLevel), or nil
	syms       []byte
	planes     [8][]byte
	hist       [256]uint32
	stats      fieldStats
	ref        *refEncoder   // reference-conditioned blocks (ref_block.go)
	best       bool          // EncodeOptions.Best: also try the slow codings
	lz         []byte        // a float block through zstd (lzRepeats)
	lzPlane    []byte        // one plane through zstd (encodeLZPlanes)
	found      []byte        // opaque bytes coded as floats (encodeFound)
	found2     []byte        // the smallest of them
	run        runMemo       // decisions a run of blocks shares (setup)
	lzFew      bool          // the first block of this tensor found too few repeats for zstd (lzWorth)
	lzTryLost  bool          // the first block of this lzTry tensor was smaller without zstd (encodeFloatPlan)
	parts      []blockPart   // encodeFoundLead's
	lead       []byte        // encodeFoundLead's blocks
	sp         sparseEnc     // sparse blocks (sparse.go)
	rec        prog.Encoder  // records blocks (records.go)
	recAlt     []byte        // a records block through the opaque path
	zstdWhole  *zstd.Encoder // whole tensors whose words repeat (zstdWholeLevel), or nil
	whole      []blockPlan   // encodeLZWhole's blocks
	wholeInfo  []blockInfo   // and their infos
	lzAlt      []byte        // a whole tensor through zstdWhole
	repeat     bool          // the archive may hold repeat blocks (version 13; repeat.go)
	rep        prog.RepeatEncoder
	repOut     []byte // a whole tensor as a repeat block
}

// runMemo holds, under a setup, what the first block of a run decided for
// the blocks after it: a run is the consecutive blocks of one tensor in a
// task, up to runValues values (so one block at the default chunk size).
// The post-setup encoder decides per tensor run, not per block: with
// small chunks (4 Ki values) the table pick, the plane estimates and the
// repeat probe cost as much as coding the block. The runs depend on the
// tasks only, which do not depend on the threads: output stays
// deterministic.
type runMemo struct {
	values int     // values in the run's blocks so far; 0: no run
	planes [8]int8 // residual plane p: 1 stored packed, -1 coded, 0 not known
	lz     int8    // 1 the repeat probe found too few repeats for zstd, -1 not, 0 not known
	pick   pickMemo
}

// pickMemo holds the shared tables that a run's first block found
// cheapest (SetupSection.pick); the run's later blocks cost only those,
// at the shifts that fit their own histograms.
type pickMemo struct {
	tables [selNeighbours]int16
	n      int8 // 0: not known yet
}

// runValues is the most values a run spans.
const runValues = DefaultChunkValues

// startRun continues the run with a block of n values of plan p, or
// starts a new one.
func (b *blockEncoder) startRun(p blockPlan, n int) {
	if b.setup != nil && p.float && p.cont && !p.merged && b.run.values > 0 && b.run.values+n <= runValues {
		b.run.values += n
		return
	}
	b.run = runMemo{}
	if b.setup != nil && p.float && !p.merged {
		b.run.values = n
	}
}

func (b *blockEncoder) buffers(n, np int) {
	if cap(b.syms) < n+1 {
		b.syms = make([]byte, n+1)
	}
	b.syms = b.syms[:n]
	for p := 0; p < np; p++ {
		if cap(b.planes[p]) < n+1 {
			b.planes[p] = make([]byte, n+1)
		}
		b.planes[p] = b.planes[p][:n]
	}
}

// encodeGeneric codes non-float bytes: zstd, or stored when zstd does not
// make them smaller. Bytes that zstd shrinks by less than a quarter at the
// archive's level (quantised weights, packed integers: mostly literals)
// are also coded at zstd's fastest level, and the smaller kept: finding
// fewer matches leaves more bytes to the literals' Huffman code, which
// codes them better (handtrack's uint8 weights: 2,305,343 bytes at level
// 3, 2,297,375 at level 1).
func (b *blockEncoder) encodeGeneric(dst, src []byte) ([]byte, byte) {
	mark := len(dst)
	if len(src) >= 16 {
		dst = b.zstd.EncodeAll(src, dst)
		if n := len(dst) - mark; b.zstdFast != nil && b.zstdFast != b.zstd && 4*n > 3*len(src) {
			b.lz = b.zstdFast.EncodeAll(src, b.lz[:0])
			if len(b.lz) < n {
				dst = append(dst[:mark], b.lz...)
			}
		}
		if len(dst)-mark < len(src) {
			return dst, kindZstd
		}
		dst = dst[:mark]
	}
	return append(dst, src...), kindStored
}

// zstdFewMatchesLevel is the zstd level also tried on opaque bytes that
// compress little (encodeGeneric).
const zstdFewMatchesLevel = 1

// lzRepeats samples up to lzProbeWords 4-byte words evenly from p and
// returns how many of the k sampled equal another sampled word: the share
// of repeats (periodic kernels such as STFT bases, tiled rows, runs of one
// value) that LZ codes and the float coder does not. The words of trained
// weights (one F32 value, two of BF16 or F16) seldom repeat among a few
// hundred. Blocks under lzMinWords words are not probed (k = 0).
func lzRepeats(p []byte) (dup, k int) {
	n := len(p) / 4
	if n < lzMinWords {
		return 0, 0
	}
	step := max(1, n/lzProbeWords)
	k = min(lzProbeWords, (n+step-1)/step) // the words at 0, step, 2·step… below n
	var words [lzProbeWords]uint32
	for i, off := 0, 0; i < k; i, off = i+1, off+4*step {
		words[i] = binary.LittleEndian.Uint32(p[off : off+4])
	}
	return repeatCount(words[:k]), k
}

// repeatCount returns how many of the words w (at most lzProbeWords)
// equal an earlier one. A bit filter of hashes sees most words as new
// without a mispredicted branch; a word whose bit is set is looked up
// among the earlier words, and where those lookups grow long (many
// repeats, or a filter too full) the words go through a hash set.
func repeatCount(w []uint32) (dup int) {
	w = w[:min(len(w), lzProbeWords)]
	var filter [1 << (repeatFilterBits - 6)]uint64
	budget := repeatScanBudget
	for i, x := range w {
		h := (x * 0x9e3779b1) >> (32 - repeatFilterBits)
		f, m := &filter[h>>6], uint64(1)<<(h&63)
		if *f&m == 0 {
			*f |= m
			continue
		}
		j := 0
		for j < i && w[j] != x {
			j++
		}
		if budget -= j + 1; budget < 0 {
			return repeatCountSet(w)
		}
		if j < i {
			dup++
		}
	}
	return dup
}

// repeatFilterBits: log2 of repeatCount's filter bits (2 KiB); of 256
// words without repeats, about 2 find their bit set.
const repeatFilterBits = 14

// repeatScanBudget bounds the words that repeatCount's lookups compare.
const repeatScanBudget = 1024

// repeatCountSet is repeatCount through a hash set.
func repeatCountSet(w []uint32) (dup int) {
	var set wordSet
	for _, x := range w {
		if set.add(x) {
			dup++
		}
	}
	return dup
}

// wordSet is an open-addressing set of at most lzProbeWords 32-bit words
// (word | 1<<32 in a slot; 0 empty), twice as many slots as words.
type wordSet [2 * lzProbeWords]uint64

// add puts x in the set and reports whether it was there already.
func (s *wordSet) add(x uint32) bool {
	e := uint64(x) | 1<<32
	h := (x * 0x9e3779b1) >> (32 - lzSetBits)
	for {
		h &= 2*lzProbeWords - 1
		switch s[h] {
		case 0:
			s[h] = e
			return false
		case e:
			return true
		}
		h++
	}
}

// lzWorthTrying reports whether zstd may code a block of n bytes, of which
// the probe found dup of k words repeated, in fewer than coded bytes: at
// least 1/16 of the words repeat, and the bytes that do not repeat are
// fewer than coded (integers: the same decision on every platform).
// The estimate leaves out that literals entropy-code to about 7/8: on the
// real files of models/original and unseen-bf16, zstd won on every block
// that passes and on none of those this gives up (a 64 KiB block of 36,975
// bytes, zstd's strongest level 39,118).
func lzWorthTrying(n, coded, dup, k int) bool {
	return dup > 0 && dup*16 >= k && int64(n)*int64(k-dup) < int64(coded)*int64(k)
}

// lzWorth reports whether a float block p, coded to coded bytes by the
// float coder, is worth coding through zstd too:
// lzWorthTrying(len(p), coded, lzRepeats(p)). The repeat probe is decided
// once per tensor where the tensor has several blocks: the blocks after
// the first (cont) skip it where the first found fewer repeats than zstd
// needs (lzWorthTrying's 1/16), as the blocks after the first of a run do
// under a setup (runMemo). Elsewhere the count stops as soon as the answer
// is known (lzReaches). more says a block of the same tensor follows.
func (b *blockEncoder) lzWorth(p []byte, coded int, cont, more bool) bool {
	if b.run.values > 0 {
		switch b.run.lz {
		case 1:
			return false
		case 0:
			dup, k := lzRepeats(p)
			b.run.lz = -1
			if dup*16 < k || k == 0 {
				b.run.lz = 1
			}
			return lzWorthTrying(len(p), coded, dup, k)
		}
		return lzReaches(p, coded)
	}
	if cont {
		if b.lzFew {
			return false
		}
		return lzReaches(p, coded)
	}
	b.lzFew = false
	if more {
		dup, k := lzRepeats(p)
		b.lzFew = dup*16 < k || k == 0
		return lzWorthTrying(len(p), coded, dup, k)
	}
	return lzReaches(p, coded)
}

// lzNeed is the fewest repeats of k sampled words for which
// lzWorthTrying(n, coded, dup, k) holds.
func lzNeed(n, coded, k int) int {
	need := max(1, (k+15)/16)
	if n <= 0 && coded <= 0 {
		return k + 1 // never: 0 < 0
	}
	if coded < n {
		need = max(need, int(int64(n-coded)*int64(k)/int64(n))+1)
	}
	return need
}

// lzReaches is lzWorthTrying(len(p), coded, lzRepeats(p)), counting the
// repeats of lzRepeats' sample only until they reach lzNeed or can no
// longer reach it (repeatCount's filter and lookups).
func lzReaches(p []byte, coded int) bool {
	n := len(p) / 4
	if n < lzMinWords {
		return false
	}
	step := max(1, n/lzProbeWords)
	k := min(lzProbeWords, (n+step-1)/step)
	need := lzNeed(len(p), coded, k)
	if need > k {
		return false
	}
	var words [lzProbeWords]uint32
	var filter [1 << (repeatFilterBits - 6)]uint64
	budget, dup := repeatScanBudget, 0
	for i, off := 0, 0; i < k; i, off = i+1, off+4*step {
		x := binary.LittleEndian.Uint32(p[off : off+4])
		words[i] = x
		h := (x * 0x9e3779b1) >> (32 - repeatFilterBits)
		if f, m := &filter[h>>6], uint64(1)<<(h&63); *f&m == 0 {
			*f |= m
		} else {
			j := 0
			for j < i && words[j] != x {
				j++
			}
			if budget -= j + 1; budget < 0 {
				for i, off = i+1, off+4*step; i < k; i, off = i+1, off+4*step {
					words[i] = binary.LittleEndian.Uint32(p[off : off+4])
				}
				return repeatCountSet(words[:k]) >= need
			}
			if j < i {
				if dup++; dup >= need {
					return true
				}
			}
		}
		if dup+k-1-i < need {
			return false
		}
	}
	return false
}

// lzTryPlanes says whether a float block is also worth coding as byte
// planes through zstd (encodeLZPlanes), given its size by zstd at the
// archive's level (fast) and by the float coder (coded): where zstd lost,
// but by less than 1/8. There, matches that zstd finds in the planes but
// not in the interleaved bytes pay: Silero's STFT basis, 121,803 B at
// level 3 against 108,864 float, is 61,337 as planes. Elsewhere planes
// gain little for the trial's cost (that one block costs about 6 % of
// real-f32's encode, one thread): where zstd won (heavy repeats: the
// basis's second block, 65,037 at level 3 against 109,474) planes saved
// under 3 % (63,136), and where it lost by more they did not win in the
// corpora.
func lzTryPlanes(fast, coded int) bool {
	f, c := int64(fast), int64(coded)
	return f >= c && 8*f < 9*c
}

// lzPlanesMinBytes is the smallest float block tried as zstd planes: the
// probe's reads (probeBlocks) span smaller ones several times over, and
// the tensors whose values repeat (STFT bases, embeddings) are large.
const lzPlanesMinBytes = 16 << 10

// zstdPlanesLevel is the zstd level that codes the planes of float blocks
// whose words repeat (encodeLZPlanes), whatever the archive's level: its
// lazy matching finds the short periodic matches of such planes (Silero's
// STFT basis: 85,950 B at level 3, 61,321 at this level, 57,568 at the
// strongest, which runs at a tenth of the speed).
const zstdPlanesLevel = 7

// encodeLZPlanes codes len(src)/size values as a planes-form float block
// (one stream per byte of the value) whose streams may be zstd frames
// (mode 8, format version 9): each plane is coded as the float coder codes
// a plane and by zstd at zstdPlanesLevel, and the smaller kept.
func (b *blockEncoder) encodeLZPlanes(dst, src []byte, size int) []byte {
	return b.appendPlanes(dst, src, size, true)
}

// The LZ probe: words sampled and the smallest block probed (in words).
const (
	lzProbeWords = 256
	lzSetBits    = 9 // log2(2·lzProbeWords)
	lzMinWords   = 64
)

// foundFloat reports the float types whose arrays the opaque bytes p may
// hold, most likely first (none: p does not look like floats). Little-
// endian floats of weights have a predictable high byte (sign and
// exponent) and nearly uniform low bytes: in a sample of 4-byte words, F32
// shows it in byte 3, BF16 and F16 in bytes 1 and 3. Unknown files and bare
// weight blobs (a TF.js .bin without its model.json) are such bytes; what
// this guesses is kept only where it codes smaller than zstd.
func foundFloat(p []byte) []dtype.DType {
	if len(p)%4 != 0 {
		return nil
	}
	types, lead := foundFloatAt(p)
	if lead != 0 {
		return nil
	}
	return types
}

// foundFloatAt is foundFloat of float arrays that may start lead (0..3)
// bytes into p (a header of odd length before them): the byte lanes of
// the sampled words rotate with the lead, so one sample tells both.
func foundFloatAt(p []byte) (types []dtype.DType, lead int) {
	n := len(p) / 4
	if n < foundMinWords {
		return nil, 0
	}
	step := max(1, n/foundSampleWords)
	var h [4][256]uint32
	k := 0
	for i := 0; i < n && k < foundSampleWords; i += step {
		v := binary.LittleEndian.Uint32(p[4*i:])
		h[0][byte(v)]++
		h[1][byte(v>>8)]++
		h[2][byte(v>>16)]++
		h[3][byte(v>>24)]++
		k++
	}
	var e [4]float64
	for j := range h {
		e[j], _ = entropyBits(&h[j], k)
		e[j] /= float64(k)
	}
	// bits per byte: high bytes of floats well below the low bytes; with
	// a lead of a bytes, byte j of a value is lane (a+j) mod 4 of the words
	lo := func(j int) bool { return e[j&3] > foundLowBits }
	hi := func(j int) bool { return e[j&3] < foundHighBits }
	for a := 0; a < 4; a++ {
		if hi(a+3) && lo(a) && lo(a+1) {
			return []dtype.DType{dtype.F32}, a
		}
	}
	for a := 0; a < 2; a++ {
		if hi(a+1) && hi(a+3) && lo(a) && lo(a+2) {
			return []dtype.DType{dtype.BF16, dtype.F16}, a
		}
	}
	return nil, 0
}

// Float detection in opaque bytes: the sample, the smallest block tried,
// and the entropies (bits per byte) of a float's high and low bytes.
const (
	foundSampleWords = 1024
	foundMinWords    = 1024
	foundHighBits    = 6.0
	foundLowBits     = 7.0
)

// encodeFound codes opaque bytes src as floats of each type foundFloat
// names and returns the smallest result, when it is smaller than limit
// bytes.
func (b *blockEncoder) encodeFound(dst, src []byte, limit int) ([]byte, dtype.DType, bool) {
	var best dtype.DType
	for _, d := range foundFloat(src) {
		b.found = b.encodeFloat(b.found[:0], src, d)
		if len(b.found) < limit {
			best, limit = d, len(b.found)
			b.found, b.found2 = b.found2, b.found
		}
	}
	if best == dtype.Invalid {
		return dst, 0, false
	}
	return append(dst, b.found2...), best, true
}

// blockPart is one of the blocks a planned block was cut into.
type blockPart struct {
	kind    byte
	dtype   dtype.DType
	origLen int64
	compLen int64
}

// encodeFoundLead codes opaque bytes src whose float arrays start lead
// bytes in (foundFloatAt) as three blocks: the lead and the bytes after
// the last whole word as generic blocks, the words between as floats.
// It appends their payloads to dst; ok is false (dst unchanged) unless
// they are smaller than limit bytes together.
func (b *blockEncoder) encodeFoundLead(dst, src []byte, lead, limit int) (out []byte, parts []blockPart, ok bool) {
	// coded into b.lead first: dst's spare capacity may hold what the
	// caller keeps when this does not pay
	body := (len(src) - lead) &^ 3
	buf, k := b.encodeGeneric(b.lead[:0], src[:lead])
	parts = append(b.parts[:0], blockPart{kind: k, origLen: int64(lead), compLen: int64(len(buf))})
	m := len(buf)
	flt, d, found := b.encodeFound(buf, src[lead:lead+body], limit-m)
	if !found {
		b.lead, b.parts = buf, parts
		return dst, nil, false
	}
	buf = flt
	parts = append(parts, blockPart{kind: kindFloat, dtype: d, origLen: int64(body), compLen: int64(len(buf) - m)})
	if tail := src[lead+body:]; len(tail) > 0 {
		m = len(buf)
		buf, k = b.encodeGeneric(buf, tail)
		parts = append(parts, blockPart{kind: k, origLen: int64(len(tail)), compLen: int64(len(buf) - m)})
	}
	b.lead, b.parts = buf, parts
	if len(buf) >= limit {
		return dst, nil, false
	}
	return append(dst, buf...), parts, true
}

// encodeFloat codes len(src)/size values of float type d. len(src) must be a
// multiple of the element size.
func (b *blockEncoder) encodeFloat(dst, src []byte, d dtype.DType) []byte {
	f, ok := specFor(d)
	if !ok {
		return b.encodePlanes(dst, src, d.Size())
	}
	n := len(src) / f.size
	histOK := true
	sec := b.setup.Section(d)
	if sec != nil && n >= minSharedSymbols {
		// the section fixes the join width; only the dropped bits vary
		f.j = sec.Join
		b.buffers(n, f.planes())
		var orR uint64
		if f.j == 0 {
			orR, histOK = split(src, n, f, b.syms, b.planes[:f.planes()], &b.hist)
		} else {
			var st fieldStats
			if f.size == 2 && f.e == 5 {
				statsF16(src[:2*n], &st)
			} else {
				statsFields(src, n, f, &st)
			}
			orR = st.orR
			histOK = false
			if f.size == 2 && f.e == 5 {
				splitF16(src[:2*n], f.j, b.syms[:n], b.planes[:f.planes()])
			} else {
				splitFields(src, n, f, b.syms, b.planes[:f.planes()], &b.hist)
				histOK = true
			}
		}
		if tz := chooseTZ(orR, f); tz > 0 {
			f.tz = tz
			b.buffers(n, f.planes())
			splitFields(src, n, f, b.syms, b.planes[:f.planes()], &b.hist)
			histOK = true
		}
		dst = append(dst, formFields, byte(f.j), byte(f.tz))
		var hist *[256]uint32
		if histOK {
			hist = &b.hist
		}
		var memo *pickMemo
		if b.run.values > 0 {
			memo = &b.run.pick
		}
		dst = b.st.appendShared(dst, b.syms, f.symW(), sec, hist, b.threshold, memo)
		for p := 0; p < f.planes(); p++ {
			var cut uint8
			if p < len(sec.PlaneCuts) {
				cut = sec.PlaneCuts[p]
			}
			if b.run.values == 0 {
				dst = b.appendPlaneCut(dst, b.planes[p], f.planeW(p), cut)
				continue
			}
			switch b.run.planes[p] {
			case 1:
				dst = append(dst, smPacked)
				dst = appendPacked(dst, b.planes[p], f.planeW(p))
			case -1:
				countHist(&b.hist, b.planes[p])
				dst = b.st.appendStream(dst, b.planes[p], f.planeW(p), &b.hist, false)
			default:
				mark := len(dst)
				dst = b.appendPlaneCut(dst, b.planes[p], f.planeW(p), cut)
				b.run.planes[p] = -1
				if dst[mark] == smPacked {
					b.run.planes[p] = 1
				}
			}
		}
		return dst
	}
	if f.maxJoin() == 0 {
		// No join possible: split once with tz=0, then again only if the
		// residuals have known-zero low bits.
		b.buffers(n, f.planes())
		var orR uint64
		orR, histOK = split(src, n, f, b.syms, b.planes[:f.planes()], &b.hist)
		if tz := chooseTZ(orR, f); tz > 0 {
			f.tz = tz
			b.buffers(n, f.planes())
			splitFields(src, n, f, b.syms, b.planes[:f.planes()], &b.hist)
			histOK = true
		}
	} else {
		f = b.splitJoined(src, n, f, false)
	}
	dst = append(dst, formFields, byte(f.j), byte(f.tz))
	if histOK {
		dst = b.st.appendStream(dst, b.syms, f.symW(), &b.hist, true)
	} else {
		dst = b.st.appendSymbols(dst, b.syms, f.symW())
	}
	for p := 0; p < f.planes(); p++ {
		dst = b.appendPlane(dst, b.planes[p], f.planeW(p))
	}
	return dst
}

// splitJoined chooses the join and the dropped bits of the n values of
// src (fields split f) from their statistics, splits them into b.syms and
// b.planes with b.hist the symbols' histogram, and returns the split. F16
// with its sign takes the fast statistics and split unless generic (the
// sparse coder's twin tests); there the symbol histogram follows from the
// joint one. Other types take statsFields (FP8's from its bytes'
// histogram) and splitFields.
func (b *blockEncoder) splitJoined(src []byte, n int, f fieldSpec, generic bool) fieldSpec {
	f16 := !generic && f.size == 2 && f.e == 5 && f.s == 1
	switch {
	case f16:
		statsF16(src[:2*n], &b.stats)
	case generic:
		statsGeneric(src, n, f, &b.stats)
	default:
		statsFields(src, n, f, &b.stats)
	}
	f.j, f.tz = chooseJoin(&b.stats, f, n)
	b.buffers(n, f.planes())
	if generic {
		splitGeneric(src, n, f, b.syms, b.planes[:f.planes()], &b.hist)
		return f
	}
	if !f16 || f.tz != 0 {
		splitFields(src, n, f, b.syms, b.planes[:f.planes()], &b.hist)
		return f
	}
	splitF16(src[:2*n], f.j, b.syms[:n], b.planes[:f.planes()])
	b.hist = [256]uint32{}
	for s, c := range b.stats.top {
		b.hist[s>>(b.stats.jmax-f.j)] += c
	}
	return f
}

// encodePlanes codes each byte of the values as its own stream.
func (b *blockEncoder) encodePlanes(dst, src []byte, size int) []byte {
	return b.appendPlanes(dst, src, size, false)
}

// appendPlanes appends the planes-form block of len(src)/size values;
// with lz each plane is also coded by zstd (encodeLZPlanes).
func (b *blockEncoder) appendPlanes(dst, src []byte, size int, lz bool) []byte {
	n := len(src) / size
	b.buffers(n, size)
	for i := 0; i < n; i++ {
		for p := 0; p < size; p++ {
			b.planes[p][i] = src[i*size+p]
		}
	}
	dst = append(dst, formPlanes)
	for p := 0; p < size; p++ {
		mark := len(dst)
		dst = b.appendPlane(dst, b.planes[p], 8)
		if !lz {
			continue
		}
		b.lzPlane = b.zstdPlanes.EncodeAll(b.planes[p], b.lzPlane[:0])
		if l := len(b.lzPlane); 1+uvarintLen(uint64(l))+l < len(dst)-mark {
			dst = append(dst[:mark], smZstd)
			dst = binary.AppendUvarint(dst, uint64(l))
			dst = append(dst, b.lzPlane...)
		}
	}
	return dst
}

// appendPlane codes a residual plane. Sign+mantissa bits of trained weights
// are close to uniform, so for long planes a sample decides first whether
// counting and entropy coding can pay at all.
func (b *blockEncoder) appendPlane(dst, p []byte, w uint) []byte {
	return b.appendPlaneCut(dst, p, w, 0)
}

// appendPlaneCut is appendPlane with a setup's cut (see
// SetupSection.PlaneCuts): the plane is stored packed when its sampled
// entropy is at least cut/256 of its width; 0 means planePays decides.
func (b *blockEncoder) appendPlaneCut(dst, p []byte, w uint, cut uint8) []byte {
	bits, n, k, sampled := b.planeEntropy(p, cut != 0)
	var packed bool
	if cut != 0 {
		packed = bits >= float64(n)*float64(w)*(float64(cut)/256)
	} else {
		packed = !planePays(bits, n, k, len(p), w)
	}
	if packed {
		dst = append(dst, smPacked)
		return appendPacked(dst, p, w)
	}
	if sampled {
		countHist(&b.hist, p)
	}
	return b.st.appendStream(dst, p, w, &b.hist, false)
}

// planeEntropy is the order-0 entropy in bits of a sample of plane p and the
// sample's size. Without a setup (cutSample false) long planes are sampled
// every planeSampleStep-th value; under a setup's plane cut, planes of
// 2·planeCutSample values or more are sampled about planeCutSample times
// (the cut was learned on the same estimate). Shorter planes are counted
// whole into b.hist (sampled = false).
func (b *blockEncoder) planeEntropy(p []byte, cutSample bool) (bits float64, n, k int, sampled bool) {
	step := 0
	switch {
	case cutSample && len(p) >= 2*planeCutSample:
		step = len(p) / planeCutSample
	case !cutSample && len(p) >= planeSampleMin:
		step = planeSampleStep
	}
	if step > 0 {
		var h [256]uint32
		for i := 0; i < len(p); i += step {
			h[p[i]]++
			n++
		}
		bits, k = entropyBits(&h, n)
		return bits, n, k, true
	}
	countHist(&b.hist, p)
	bits, k = entropyBits(&b.hist, len(p))
	return bits, len(p), k, false
}

// planePays reports whether a residual plane of size values of w bits, of
// which n (k distinct) have an order-0 entropy of bits, is worth a Huffman
// table: whether the entropy, corrected for the sample's bias (Miller–Madow:
// (k−1)/(2 ln 2) bits) and scaled to the plane, plus an estimate of the
// table (min(4+k, 20+k/5) bytes, fitted to huff0's descriptions of real
// tables) stays below planeGainMilli/1000 of the raw width.
// Integer arithmetic in 1/1024 bit keeps the decision the same on every
// platform.
func planePays(bits float64, n, k, size int, w uint) bool {
	if n == 0 || k < 2 {
		return n > 0
	}
	est := (int64(bits*1024) + int64(k-1)*739) * int64(size) / int64(n)
	est += int64(min(4+k, 20+k/5)) * 8 * 1024
	raw := int64(size) * int64(w) * 1024
	return est*1000 < raw*planeGainMilli
}

// Plane sampling: planes of at least planeSampleMin values are sampled every
// planeSampleStep values (shorter ones are counted whole); unless the
// estimate of planePays stays below planeGainMilli/1000 of the raw width,
// the plane is stored packed without building a Huffman table.
const (
	planeSampleMin  = 8192
	planeSampleStep = 16
	planeGainMilli  = 990
	// planeCutSample: values sampled from a plane under a setup's cut
	planeCutSample = 512
)

// chooseJoin picks the join width and the dropped trailing bits by the
// estimated cost: order-0 bits of the symbols, raw residual bits and a table
// estimate.
func chooseJoin(st *fieldStats, f fieldSpec, n int) (j, tz uint) {
	best := math.Inf(1)
	for jj := uint(0); jj <= st.jmax; jj++ {
		var h [256]uint32
		for s, c := range st.top {
			h[s>>(st.jmax-jj)] += c
		}
		bits, distinct := entropyBits(&h, n)
		g := f
		g.j = jj
		t := chooseTZ(st.orR, g)
		g.tz = t
		cost := bits + float64(n)*float64(g.restW()) + float64(8*(distinct/2+4))
		if cost < best-1e-9 {
			best, j, tz = cost, jj, t
		}
	}
	return j, tz
}

// countHist sets hist to the histogram of p.
func countHist(hist *[256]uint32, p []byte) { countHistWords(hist, p, 1) }

// countHistHalf sets hist to the histogram of every other 8-byte word of p
// (words 0, 2, 4, ... and the bytes after the last of them) and returns
// how many symbols it counted.
func countHistHalf(hist *[256]uint32, p []byte) int { return countHistWords(hist, p, 2) }

// countHistWords counts every step-th 8-byte word of p (eight symbols per
// load, spread over four tables so that runs of one symbol do not wait on
// the same counter) and the bytes from where the next word would not fit;
// it returns how many symbols it counted.
func countHistWords(hist *[256]uint32, p []byte, step int) int {
	var h [4][256]uint32
	i, n := 0, 0
	for ; i+8 <= len(p); i += 8 * step {
		v := binary.LittleEndian.Uint64(p[i:])
		h[0][byte(v)]++
		h[1][byte(v>>8)]++
		h[2][byte(v>>16)]++
		h[3][byte(v>>24)]++
		h[0][byte(v>>32)]++
		h[1][byte(v>>40)]++
		h[2][byte(v>>48)]++
		h[3][byte(v>>56)]++
		n += 8
	}
	for ; i < len(p); i++ {
		h[0][p[i]]++
		n++
	}
	for s := range hist {
		hist[s] = h[0][s] + h[1][s] + h[2][s] + h[3][s]
	}
	return n
}

// blockDecoder is one worker's reusable decoding state.
type blockDecoder struct {
	setup  *Setup // the archive's setup, or nil
	st     streamDecoder
	syms   []byte
	planes [8][]byte
	ref    *refDecoder // reference-conditioned blocks (ref_block.go)
	// methods is the newest difference-block method the archive's format
	// version may hold (refMethodsFor; 0: any)
	methods byte
	sp      sparseDec    // sparse blocks (sparse.go)
	rec     prog.Decoder // records blocks (records.go)
	rep     prog.RepeatDecoder
	repLits []byte // a repeat block's literals (repeat.go)
}

func (b *blockDecoder) buffers(n, np int) {
	if cap(b.syms) < n+1 {
		b.syms = make([]byte, n+1)
	}
	b.syms = b.syms[:n+1]
	for p := 0; p < np; p++ {
		if cap(b.planes[p]) < n+1 {
			b.planes[p] = make([]byte, n+1)
		}
		b.planes[p] = b.planes[p][:n+1]
	}
}

// decode decodes a block payload into dst, whose length is the block's
// original length.
func (b *blockDecoder) decode(dst, src []byte, kind byte, d dtype.DType) error {
	switch kind {
	case kindStored:
		if len(src) != len(dst) {
			return errf("stored block: %d bytes, want %d", len(src), len(dst))
		}
		copy(dst, src)
		return nil
	case kindZstd:
		return zstdDecodeInto(dst, src)
	case kindFloat:
		return b.decodeFloat(dst, src, d)
	case kindCM:
		return decodeCM(dst, src)
	case kindRecords:
		return b.decodeRecords(dst, src)
	case kindRepeat:
		return b.decodeRepeat(dst, src)
	}
	return errf("unknown block kind %d", kind)
}

func (b *blockDecoder) decodeFloat(dst, src []byte, d dtype.DType) error {
	size := d.Size()
	if size == 0 || len(dst)%size != 0 {
		return errf("float block of %v: length %d is not a whole number of values", d, len(dst))
	}
	n := len(dst) / size
	h, err := ReadFloatHeader(src, d)
	if err != nil {
		return err
	}
	if h.Form == FormSparse {
		return b.decodeSparse(dst, src, d, n)
	}
	src = src[h.Len:]
	switch h.Form {
	case FormFields:
		f := h.spec()
		np := f.planes()
		b.buffers(n, np)
		b.st.sec = nil
		if sec := b.setup.Section(d); sec != nil && sec.Join == f.j {
			b.st.sec = sec
		}
		src, err = b.st.decodeStream(b.syms[:n], src, h.Width(0))
		b.st.sec = nil
		if err != nil {
			return err
		}
		var planes [8][]byte
		for p := 0; p < np; p++ {
			// a packed 8-bit plane is used where it lies, without a copy
			if planes[p], src, err = b.st.decodeStreamRef(b.planes[p][:n], src, h.Width(1+p)); err != nil {
				return err
			}
		}
		merge(dst, n, f, b.syms, planes[:np])
	case FormPlanes:
		b.buffers(n, size)
		for p := 0; p < size; p++ {
			if src, err = b.st.decodeStream(b.planes[p][:n], src, h.Width(p)); err != nil {
				return err
			}
		}
		for i := 0; i < n; i++ {
			for p := 0; p < size; p++ {
				dst[i*size+p] = b.planes[p][i]
			}
		}
	}
	if len(src) != 0 {
		return errf("float block: %d trailing bytes", len(src))
	}
	return nil
}
