package lossy

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"

	"neuralzip/codec/rangecoder"
)

// e8 is lattice coding in the manner of EntroPack: each row is scaled to
// about unit RMS (a tensor of rows shorter than e8MinRowScale has one
// scale), its values are taken eight at a time and rounded to the nearest
// point of the lattice step·E8, and the points' coordinates are entropy
// coded — a binary range coder with adaptive models conditioned on the
// point's coset and the coordinate's position (the first seven, the
// eighth) — in tiles of e8TileRowsFor rows (16 Ki values or more: 64
// rows, or more of narrow rows), each decodable alone. A row's
// scale is a code of 8 bits on a log scale (e8ScaleRes codes an octave,
// from the tensor's largest row RMS down), coded in its tile by the same
// range coder relative to the tensor's median code; the values are
// normalised by the coded scale, so the reconstruction is exactly what
// the decoder computes. The step for a target rate is
// chosen from a sample of the vectors, coded in tiles of a real tile's
// size with the coder's own models (its adaptive cost, learning included,
// searched by bisection) plus the exact cost of the scales, the header
// and the tiles' framing, so the stream is coded once. The decoder
// (e8Decode) reads the bytes back; the reconstruction is what it returns.
//
// Stream (format 2, lossy archives of version 2):
//
//	rows, cols  uvarint  as coded (rows shorter than e8MinRowScale: 1 × all)
//	unit        f32 LE   the step times the scale of code 0 (the largest
//	                     row RMS): a coordinate k/2 of a point in a row of
//	                     scale code q is k/2 · unit · 2^(−q/4)
//	q0          byte     the reference scale code (the median row's)
//	tiles       per tile: uvarint length, then its range-coded bytes
//	            (rangecoder's FinishShort: ResetShort reads them): per
//	            row, its scale code's difference from q0 (scale models),
//	            then the row's points (of a row of zeros, e8ZeroRow,
//	            zeros)
//
// Format 1 (archives of version 1) is e8v1.go's.
type e8 struct{}

func (e8) Name() string { return "e8" }
func (e8) Rated() bool  { return true }

// e8TileRows is the rows of a tile of format 1 (of format 2: a multiple,
// e8TileRowsFor); e8Sample the vectors the rate estimate reads.
const (
	e8TileRows = 64
	e8Sample   = 4096
	e8MaxX     = 1 << 20 // |coordinate / step| rounded at most (larger is clamped)
	// e8MinRowScale: rows shorter than this share one scale
	e8MinRowScale = 64
	// e8ScaleRes scale codes an octave: scale(q) = base · 2^(−q/e8ScaleRes)
	// (a row normalised to within 9 % of unit RMS: on stories260K at 4
	// bits, 0.5 % less error at the same rate than 8 codes an octave, whose
	// precision costs more than it gives)
	e8ScaleRes = 4
	// e8ZeroRow is the scale code of a row of zeros (its points, zeros,
	// are coded as any row's)
	e8ZeroRow = 255
	// e8Format is the stream format Code writes
	e8Format = 2
)

// e8ScaleFrac[i] = 2^(−i/4), written out so that every decoder computes
// the same scales (math.Ldexp does the octaves exactly).
var e8ScaleFrac = [e8ScaleRes]float64{
	1,
	0.84089641525371454,
	0.70710678118654757,
	0.59460355750136051,
}

// e8TileRowsFor is the rows of a tile of format 2 for rows of cols values
// (as coded): TileRows, or for rows under 256 values as many multiples of
// it as make 16 Ki values (256 rows of 64 values, 128 of 172): narrow
// rows grouped, so that a tile's adaptive models learn from as many
// values as wide rows give them (on stories260K at 4 bits, 1.3 % less
// error at the same rate than tiles of 64 rows).
func e8TileRowsFor(cols int) int {
	return TileRows * max(1, (256+cols-1)/max(cols, 1))
}

// e8Scale is base times the scale of code q (0 for e8ZeroRow).
func e8Scale(base float32, q int) float64 {
	if q == e8ZeroRow {
		return 0
	}
	return math.Ldexp(float64(base)*e8ScaleFrac[q%e8ScaleRes], -q/e8ScaleRes)
}

// e8Unit is the stream's unit for the step chosen, step·base in float32,
// and the step it implies (what the points are rounded with): the step
// halved or doubled until the unit is finite and, for a base above 0,
// above 0.
func e8Unit(step float64, base float32) (float32, float64) {
	if base == 0 {
		return 0, step
	}
	for {
		u := float32(step * float64(base))
		switch {
		case math.IsInf(float64(u), 0):
			step /= 2
		case u == 0:
			step *= 2
		default:
			return u, float64(u) / float64(base)
		}
	}
}

func (e8) Code(v []float32, rows, cols int, bits float64) ([]byte, []float32, error) {
	if err := check(v, rows, cols); err != nil {
		return nil, nil, err
	}
	if rows == 0 || cols == 0 {
		return e8Header(nil, rows, cols, 0, 0), []float32{}, nil
	}
	g := e8Normalize(v, rows, cols)
	if !g.finite() {
		return nil, nil, errE8Values
	}
	step, _ := e8Step(g, bits)
	unit, step := e8Unit(step, g.base)
	coded := e8Header(nil, g.rows, g.cols, unit, g.q0)
	pts := e8Points(g.norm, step)
	var enc e8Enc
	var m e8Models
	tr := e8TileRowsFor(g.cols)
	for t := 0; t < g.rows; t += tr {
		enc.Reset(nil)
		m = e8Models{}
		m.encodeRows(&enc, g, pts, t, min(g.rows, t+tr))
		tile := enc.FinishShort()
		coded = binary.AppendUvarint(coded, uint64(len(tile)))
		coded = append(coded, tile...)
	}
	recon, err := e8Decode(coded)
	if err != nil {
		return nil, nil, err
	}
	return coded, recon, nil
}

// e8Header is rows, cols, the unit and the reference scale code.
func e8Header(dst []byte, rows, cols int, unit float32, q0 int) []byte {
	dst = binary.AppendUvarint(dst, uint64(rows))
	dst = binary.AppendUvarint(dst, uint64(cols))
	dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(unit))
	return append(dst, byte(q0))
}

// e8Geometry is a matrix normalised for E8: its rows as coded, each
// padded with zeros to per values, divided by its coded scale.
type e8Geometry struct {
	norm            []float64
	q               []int // each row's scale code
	base            float32
	q0              int
	rows, cols, per int
}

// finite reports whether the rows' RMS are finite (no NaN or infinite
// value): what e8 codes.
func (g *e8Geometry) finite() bool {
	return !math.IsNaN(float64(g.base)) && !math.IsInf(float64(g.base), 0)
}

// e8Normalize codes each row's scale (rows shorter than e8MinRowScale:
// the tensor as one row) and divides the row by it, padded with zeros to
// whole vectors.
func e8Normalize(v []float32, rows, cols int) *e8Geometry {
	if cols < e8MinRowScale {
		// short rows: one scale for the tensor
		rows, cols = 1, rows*cols
	}
	per := (cols + 7) / 8 * 8 // a row padded with zeros to whole vectors
	g := &e8Geometry{norm: make([]float64, rows*per), q: make([]int, rows), rows: rows, cols: cols, per: per}
	rms := make([]float64, rows)
	var top float64
	for r := range rows {
		var ss float64
		for _, x := range v[r*cols : (r+1)*cols] {
			ss += float64(x) * float64(x)
		}
		rms[r] = math.Sqrt(ss / float64(cols))
		top = max(top, rms[r])
	}
	g.base = float32(top)
	for r := range rows {
		q := e8ZeroRow
		if rms[r] > 0 && g.base > 0 {
			q = int(math.Round(e8ScaleRes * math.Log2(float64(g.base)/rms[r])))
			q = min(max(q, 0), e8ZeroRow-1)
		}
		g.q[r] = q
		if s := e8Scale(g.base, q); s > 0 {
			for i, x := range v[r*cols : (r+1)*cols] {
				g.norm[r*per+i] = float64(x) / s
			}
		}
	}
	sorted := slices.Clone(g.q)
	slices.Sort(sorted)
	g.q0 = sorted[len(sorted)/2]
	return g
}

// encodeRows codes rows [r0, r1) of g (its points pts) with the models m
// to e: per row its scale code, then its points.
func (m *e8Models) encodeRows(e e8BitCoder, g *e8Geometry, pts []int32, r0, r1 int) {
	for r := r0; r < r1; r++ {
		m.encodeInt(e, &m.scale, int32(g.q[r]-g.q0))
		for i := r * g.per; i < (r+1)*g.per; i += 8 {
			m.encodeVector(e, pts[i:i+8])
		}
	}
}

// e8BitCoder is what codes the bits: a range coder (e8Enc), or a Cost
// (e8Cost).
type e8BitCoder interface {
	Encode(m *e8Model, bit uint32)
}

// e8Enc codes bits with a range coder.
type e8Enc struct{ rangecoder.Encoder }

// Encode codes bit with m and adapts m.
func (e *e8Enc) Encode(m *e8Model, bit uint32) {
	e.EncodeP(m.prob(), bit)
	m.update(bit)
}

// e8Cost counts what an e8Enc would spend.
type e8Cost struct{ rangecoder.Cost }

// Encode counts bit with m and adapts m.
func (c *e8Cost) Encode(m *e8Model, bit uint32) {
	c.EncodeP(m.prob(), bit)
	m.update(bit)
}

// e8Model is the adaptive probability of one binary decision, as
// rangecoder.Model's but with a longer memory: the first decisions move
// it by about 1/(n+1.8) (Krichevsky–Trofimov), later ones by about
// 1/(e8AdaptMax+1.8), so that a tile's stationary statistics are
// estimated closely. p holds P(bit = 1)·2^16 XOR 0x8000 (the zero value is
// one half). Integer arithmetic only: the rule is part of the format.
type e8Model struct{ p, n uint16 }

// e8AdaptMax bounds the count that sets e8Model's adaptation rate
// (rangecoder.Model's: 127; a longer memory codes the stories260K
// matrices at 4 bits with 0.3 % less error at the same rate).
const e8AdaptMax = 1023

// e8Inv[n] = floor(655360 / (10n + 18)): the update weight, scaled by 2^16.
var e8Inv = func() (t [e8AdaptMax + 1]int64) {
	for n := range t {
		t[n] = 655360 / int64(10*n+18)
	}
	return
}()

func (m *e8Model) prob() uint32 { return uint32(m.p ^ 0x8000) }

func (m *e8Model) update(bit uint32) {
	p := int64(m.p ^ 0x8000)
	n := m.n & e8AdaptMax // e8AdaptMax + 1 is a power of two
	p += (int64(bit)<<16 - p) * e8Inv[n] >> 16
	p = min(max(p, 32), 65536-32)
	m.p = uint16(p) ^ 0x8000
	if n < e8AdaptMax {
		m.n = n + 1
	}
}

// decode returns the next bit coded with m and adapts m.
func (m *e8Model) decode(d *rangecoder.Decoder) uint32 {
	bit := d.DecodeP(m.prob())
	m.update(bit)
	return bit
}

// E8Predict is the E8 coder's sampled storage estimate of coding v (rows ×
// cols, row-major) at bits per parameter, in bytes: the header, the
// scales and the tiles' framing as written, the points at the adaptive
// cost of the sample for the step the coder would choose (the coded
// stream is not made). It is what picks the step, so it differs from the
// coded size by the sample's distance from the whole.
func E8Predict(v []float32, rows, cols int, bits float64) (float64, error) {
	if err := check(v, rows, cols); err != nil {
		return 0, err
	}
	if rows == 0 || cols == 0 {
		return float64(len(e8Header(nil, rows, cols, 0, 0))), nil
	}
	g := e8Normalize(v, rows, cols)
	if !g.finite() {
		return 0, errE8Values
	}
	_, size := e8Step(g, bits)
	return size, nil
}

// e8TileFinish is the bytes a tile's range coder adds to its decisions'
// cost (its flush, FinishShort), on average.
const e8TileFinish = 0.5

// e8Step picks the step at which the estimated size of the stream is
// nearest bits per value (of the values of g, unpadded), and returns it
// with that estimate (bytes): the header and the scale codes exactly (they
// do not depend on the step), the points at the cost of a sample of
// vectors (every stride-th) coded with the tile's adaptive models in
// groups of a tile's vectors — the learning a tile's models go through
// included —, scaled to all the vectors, and the tiles' lengths and
// flushes.
func e8Step(g *e8Geometry, bits float64) (float64, float64) {
	vecs := g.rows * g.per / 8
	stride := max(1, vecs/e8Sample)
	var sample []float64
	for i := 0; i < vecs; i += stride {
		sample = append(sample, g.norm[8*i:8*i+8]...)
	}
	tr := e8TileRowsFor(g.cols)
	tileVecs := tr * g.per / 8
	// fixed: the header, the scale codes, the tiles' framing
	fixed := float64(len(e8Header(nil, g.rows, g.cols, 1, 0)))
	tiles := 0
	var scaleBits float64
	for t := 0; t < g.rows; t += tr {
		var c e8Cost
		var m e8Models
		for r := t; r < min(g.rows, t+tr); r++ {
			m.encodeInt(&c, &m.scale, int32(g.q[r]-g.q0))
		}
		scaleBits += c.Bits
		tiles++
	}
	fixed += scaleBits/8 + e8TileFinish*float64(tiles)
	scaleUp := float64(vecs) / float64(len(sample)/8)
	size := func(step float64) float64 {
		pts := e8Points(sample, step)
		var c e8Cost
		var m e8Models
		for i := 0; i < len(pts); i += 8 {
			if i/8%tileVecs == 0 {
				m = e8Models{}
			}
			m.encodeVector(&c, pts[i:i+8])
		}
		body := c.Bits / 8 * scaleUp
		// each tile's length, a uvarint
		perTile := body/float64(tiles) + e8TileFinish
		lenBytes := float64(len(binary.AppendUvarint(nil, uint64(perTile))))
		return fixed + body + lenBytes*float64(tiles)
	}
	target := bits * float64(g.rows*g.cols) / 8
	lo, hi := 1e-4, 64.0 // the size falls as the step grows
	for range 30 {
		mid := math.Sqrt(lo * hi)
		if size(mid) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, size(hi)
}

// e8Points rounds the normalised values (rows padded to whole vectors),
// eight at a time, to step·E8 and returns the points as twice their
// coordinates over step (integers, all even or all odd in a vector).
func e8Points(norm []float64, step float64) []int32 {
	pts := make([]int32, len(norm))
	var x [8]float64
	var p [8]int32
	for i := 0; i+8 <= len(norm); i += 8 {
		for j := range x {
			x[j] = min(max(norm[i+j]/step, -e8MaxX), e8MaxX)
		}
		nearestE8(&x, &p)
		copy(pts[i:i+8], p[:])
	}
	return pts
}

// nearestE8 writes to p twice the coordinates of the point of E8 nearest
// x (Conway and Sloane: the nearer of the nearest points of D8 and of
// D8 + ½).
func nearestE8(x *[8]float64, p *[8]int32) {
	var a, b [8]float64
	nearestD8(x, &a, 0)
	nearestD8(x, &b, 0.5)
	var da, db float64
	for i := range x {
		da += (x[i] - a[i]) * (x[i] - a[i])
		db += (x[i] - b[i]) * (x[i] - b[i])
	}
	src := &a
	if db < da {
		src = &b
	}
	for i := range p {
		p[i] = int32(math.Round(2 * src[i]))
	}
}

// nearestD8 writes to y the point of D8 + off nearest x (D8: integer
// vectors of even sum): round every coordinate; if the sum is odd, round
// the one farthest from its integer the other way.
func nearestD8(x, y *[8]float64, off float64) {
	var sum int64
	worst, worstDist := 0, -1.0
	for i, v := range x {
		r := math.RoundToEven(v - off)
		y[i] = r
		sum += int64(r)
		if d := math.Abs(v - off - r); d > worstDist {
			worst, worstDist = i, d
		}
	}
	if sum%2 != 0 {
		v := x[worst] - off
		if v > y[worst] {
			y[worst]++
		} else {
			y[worst]--
		}
	}
	for i := range y {
		y[i] += off
	}
}

func leadingZeros(x uint32) int {
	n := 0
	for x&0x80000000 == 0 {
		x <<= 1
		n++
	}
	return n
}

// e8Models are the adaptive models of one tile: the coset bit; per
// context (e8Context: the coset, and the first seven coordinates or the
// eighth, whose magnitude is halved) a zero flag and the
// magnitude's unary length (Elias gamma); the magnitude's bits below its
// leading one per length and bit; the signs per coset (and one for the
// eighth coordinate of coset ½); the rows' scale codes.
type e8Models struct {
	coset e8Model
	zero  [e8Contexts]e8Model
	unar  [e8Contexts][24]e8Model
	rest  [24][24]e8Model
	sign  [3]e8Model
	scale e8IntModels
}

// e8IntModels code a signed integer (a scale code's difference): zero
// flag, sign, Elias gamma.
type e8IntModels struct {
	zero, sign e8Model
	unar, rest [24]e8Model
}

// e8Contexts: per coset, the first seven coordinates and the eighth (the
// coordinates of a row normalised to unit RMS are alike: conditioning on
// the one before, as format 1 did, gains nothing and costs learning).
const e8Contexts = 2 * 2

func e8Context(h uint32, pos int) int {
	if pos == 7 {
		return int(h)*2 + 1
	}
	return int(h) * 2
}

func abs32(c int32) int32 {
	if c < 0 {
		return -c
	}
	return c
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// encodeVector codes the point p of E8 (twice its coordinates over the
// step): its coset h, then each of the first seven coordinates as its
// magnitude (|p|−h)/2 and, when not zero, its sign; the eighth's
// magnitude has a known parity (the sum of the integers (p−h)/2 is even),
// so half of it is coded (for coset ½ after its sign, which the parity
// depends on).
func (m *e8Models) encodeVector(e e8BitCoder, p []int32) {
	h := uint32(p[0] & 1)
	e.Encode(&m.coset, h)
	var sum int32
	for i := 0; i < 7; i++ {
		sum += (p[i] - int32(h)) >> 1
		mag := (abs32(p[i]) - int32(h)) >> 1
		m.encodeMag(e, e8Context(h, i), uint32(mag))
		if p[i] != 0 {
			e.Encode(&m.sign[h], b2u(p[i] < 0))
		}
	}
	s := uint32(sum & 1)
	mag := uint32(abs32(p[7])-int32(h)) >> 1
	c := e8Context(h, 7)
	neg := b2u(p[7] < 0)
	if h == 1 {
		e.Encode(&m.sign[2], neg)
		m.encodeMag(e, c, (mag-(s^neg))>>1)
		return
	}
	m.encodeMag(e, c, (mag-s)>>1)
	if p[7] != 0 {
		e.Encode(&m.sign[0], neg)
	}
}

func (m *e8Models) decodeVector(d *rangecoder.Decoder, p []int32) {
	h := m.coset.decode(d)
	hi := int32(h)
	var sum int32
	for i := 0; i < 7; i++ {
		mag := int32(m.decodeMag(d, e8Context(h, i)))
		c := 2*mag + hi
		if c != 0 && m.sign[h].decode(d) == 1 {
			c = -c
		}
		p[i] = c
		sum += (c - hi) >> 1
	}
	s := uint32(sum & 1)
	c := e8Context(h, 7)
	if h == 1 {
		neg := m.sign[2].decode(d)
		mag := int32(2*m.decodeMag(d, c) + (s ^ neg))
		p[7] = 2*mag + 1
		if neg == 1 {
			p[7] = -p[7]
		}
		return
	}
	mag := int32(2*m.decodeMag(d, c) + s)
	p[7] = 2 * mag
	if mag != 0 && m.sign[0].decode(d) == 1 {
		p[7] = -p[7]
	}
}

// encodeMag codes a ≥ 0 (below 2^23) in context c: a zero flag, then a's
// Elias gamma code.
func (m *e8Models) encodeMag(e e8BitCoder, c int, a uint32) {
	e.Encode(&m.zero[c], b2u(a == 0))
	if a != 0 {
		encodeGamma(e, &m.unar[c], &m.rest, a)
	}
}

func (m *e8Models) decodeMag(d *rangecoder.Decoder, c int) uint32 {
	if m.zero[c].decode(d) == 1 {
		return 0
	}
	return decodeGamma(d, &m.unar[c], &m.rest)
}

// encodeInt codes the signed integer c (|c| below 2^23) with im.
func (m *e8Models) encodeInt(e e8BitCoder, im *e8IntModels, c int32) {
	e.Encode(&im.zero, b2u(c == 0))
	if c == 0 {
		return
	}
	e.Encode(&im.sign, b2u(c < 0))
	encodeGammaFlat(e, &im.unar, &im.rest, uint32(abs32(c)))
}

func (m *e8Models) decodeInt(d *rangecoder.Decoder, im *e8IntModels) int32 {
	if im.zero.decode(d) == 1 {
		return 0
	}
	neg := im.sign.decode(d) == 1
	c := int32(decodeGammaFlat(d, &im.unar, &im.rest))
	if neg {
		c = -c
	}
	return c
}

// encodeGamma codes a ≥ 1 (below 2^24) as its length in bits less one
// (unary, with the models unar) and its bits below the leading one (with
// the models of that length, rest[length]).
func encodeGamma(e e8BitCoder, unar *[24]e8Model, rest *[24][24]e8Model, a uint32) {
	nb := 31 - leadingZeros(a) // a has nb+1 bits
	for i := 0; i < nb; i++ {
		e.Encode(&unar[i], 1)
	}
	if nb < 23 {
		e.Encode(&unar[nb], 0)
	}
	for i := nb - 1; i >= 0; i-- {
		e.Encode(&rest[nb][i], a>>uint(i)&1)
	}
}

func decodeGamma(d *rangecoder.Decoder, unar *[24]e8Model, rest *[24][24]e8Model) uint32 {
	nb := 0
	for nb < 23 && unar[nb].decode(d) == 1 {
		nb++
	}
	a := uint32(1)
	for i := nb - 1; i >= 0; i-- {
		a = a<<1 | rest[nb][i].decode(d)
	}
	return a
}

// encodeGammaFlat is encodeGamma with one model per bit below the
// leading one, whatever the length.
func encodeGammaFlat(e e8BitCoder, unar, rest *[24]e8Model, a uint32) {
	nb := 31 - leadingZeros(a)
	for i := 0; i < nb; i++ {
		e.Encode(&unar[i], 1)
	}
	if nb < 23 {
		e.Encode(&unar[nb], 0)
	}
	for i := nb - 1; i >= 0; i-- {
		e.Encode(&rest[i], a>>uint(i)&1)
	}
}

func decodeGammaFlat(d *rangecoder.Decoder, unar, rest *[24]e8Model) uint32 {
	nb := 0
	for nb < 23 && unar[nb].decode(d) == 1 {
		nb++
	}
	a := uint32(1)
	for i := nb - 1; i >= 0; i-- {
		a = a<<1 | rest[i].decode(d)
	}
	return a
}

// e8Decode decodes an e8 stream (format 2) to the values it codes.
func e8Decode(b []byte) ([]float32, error) { return e8DecodeFormat(b, e8Format) }

// e8DecodeFormat decodes an e8 stream of format 1 or 2.
func e8DecodeFormat(b []byte, format int) ([]float32, error) {
	var x e8Index
	if err := x.parse(b, format); err != nil {
		return nil, err
	}
	n := x.rows * x.cols
	out := make([]float32, n)
	s := &valueSink{hi: n, f32: out}
	for t := range x.tiles {
		if err := x.decodeTile(b, t, s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// e8Index is an e8 stream's header and tile index: where each tile's
// range-coded bytes lie, found from their uvarint lengths without
// decoding them.
type e8Index struct {
	format     int      // 1 or 2
	rows, cols int      // as coded (rows shorter than e8MinRowScale: 1 × all)
	step       float64  // format 1
	unit       float32  // format 2: the step times the scale of code 0
	q0         int      // format 2: the reference scale code
	scales     int      // format 1: offset of the rows' float32 scales in the stream
	tileRows   int      // a tile's rows
	tiles      [][2]int // each tile's coded bytes [lo, hi) in the stream
}

// parse reads the header of the e8 stream b (of format 1 or 2) and
// indexes its tiles.
func (x *e8Index) parse(b []byte, format int) error {
	*x = e8Index{format: format}
	if format != 1 && format != 2 {
		return errE8
	}
	rows64, k := binary.Uvarint(b)
	if k <= 0 {
		return errE8
	}
	pos := k
	cols64, k := binary.Uvarint(b[pos:])
	need := 8 // format 1: the step
	if format == 2 {
		need = 4 + 1 // the unit, q0
	}
	if k <= 0 || len(b[pos+k:]) < need || rows64 > 1<<31 || cols64 > 1<<31 || rows64*cols64 > 1<<31 {
		return errE8
	}
	pos += k
	rows, cols := int(rows64), int(cols64)
	x.rows, x.cols = rows, cols
	var ok bool
	if format == 1 {
		x.step = math.Float64frombits(binary.LittleEndian.Uint64(b[pos:]))
		ok = x.step > 0
		pos += 8
	} else {
		x.unit = math.Float32frombits(binary.LittleEndian.Uint32(b[pos:]))
		x.q0 = int(b[pos+4])
		ok = x.unit >= 0 && !math.IsInf(float64(x.unit), 0)
		pos += 5
	}
	if rows == 0 || cols == 0 {
		return nil
	}
	// the adaptive coder spends at least about 1/1400 bit a decision, and
	// a point of zeros is nine: a stream claiming more values than 16 Ki a
	// byte is damaged
	rest := int64(len(b) - pos)
	if !ok || int64(rows)*int64(cols) > rest<<14 {
		return errE8
	}
	if format == 1 {
		if rest < 4*int64(rows) {
			return errE8
		}
		x.scales = pos
		pos += 4 * rows
	}
	x.tileRows = e8TileRows
	if format == 2 {
		x.tileRows = e8TileRowsFor(cols)
	}
	x.tiles = make([][2]int, 0, (rows+x.tileRows-1)/x.tileRows)
	for t := 0; t < rows; t += x.tileRows {
		n, k := binary.Uvarint(b[pos:])
		if k <= 0 || n > uint64(len(b)-pos-k) {
			return errE8
		}
		x.tiles = append(x.tiles, [2]int{pos + k, pos + k + int(n)})
		pos += k + int(n)
	}
	return nil
}

// tileValues is the values of a full tile.
func (x *e8Index) tileValues() int { return x.tileRows * x.cols }

// decodeTile decodes tile t of the stream b (indexed by x) into s, whole:
// a stream that ends before its values do is an error.
func (x *e8Index) decodeTile(b []byte, t int, s *valueSink) error {
	if t < 0 || t >= len(x.tiles) {
		return errE8
	}
	var d rangecoder.Decoder
	src := b[x.tiles[t][0]:x.tiles[t][1]]
	if x.format == 1 {
		if err := d.Reset(src); err != nil {
			return err
		}
		x.decodeTileV1(&d, b, t, s)
	} else {
		d.ResetShort(src)
		if err := x.decodeTileV2(&d, t, s); err != nil {
			return err
		}
	}
	if d.Overrun() {
		return errE8
	}
	return nil
}

// decodeTileV2 decodes tile t of a format 2 stream into s.
func (x *e8Index) decodeTileV2(d *rangecoder.Decoder, t int, s *valueSink) error {
	var m e8Models
	var p [8]int32
	var v [8]float32
	cols := x.cols
	per := (cols + 7) / 8 * 8
	end := min(x.rows, (t+1)*x.tileRows)
	for r := t * x.tileRows; r < end; r++ {
		q := x.q0 + int(m.decodeInt(d, &m.scale))
		if q < 0 || q > e8ZeroRow {
			return errE8
		}
		scale := e8Scale(x.unit, q) // the step times the row's scale
		for j := 0; j < per; j += 8 {
			m.decodeVector(d, p[:])
			k := min(8, cols-j)
			for i, c := range p[:k] {
				v[i] = float32(float64(c) / 2 * scale)
			}
			s.put(r*cols+j, v[:k])
		}
		if d.Overrun() {
			return errE8
		}
	}
	return nil
}

var (
	errE8       = errors.New("lossy: a damaged e8 stream")
	errE8Values = errors.New("lossy: e8 codes finite values only (a NaN or an infinity in the tensor)")
)
