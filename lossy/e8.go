package lossy

import (
	"encoding/binary"
	"errors"
	"math"

	"neuralzip/codec/rangecoder"
)

// e8 is lattice coding in the manner of EntroPack: each row is scaled to
// unit RMS (the scale kept as float32; a tensor of rows shorter than
// e8MinRowScale has one scale), its values are taken eight at a
// time and rounded to the nearest point of the lattice step·E8, and the
// points' coordinates are entropy coded — a binary range coder with
// adaptive models conditioned on the coordinate's position in its vector
// and on the magnitude of the coordinate before it — in tiles of
// e8TileRows rows, each decodable alone. The step for a target rate is
// chosen from a sample of the vectors (the empirical entropy of their
// coordinates, searched by bisection), so the stream is coded once. The
// decoder (e8Decode) reads the bytes back; the reconstruction is what it
// returns.
type e8 struct{}

func (e8) Name() string { return "e8" }
func (e8) Rated() bool  { return true }

// e8TileRows is the rows of a tile; e8Sample the vectors the rate
// estimate reads.
const (
	e8TileRows = 64
	e8Sample   = 4096
	e8MaxMag   = 1 << 20 // |2·coordinate| coded at most (larger saturates)
	// e8MinRowScale: rows shorter than this share one scale
	e8MinRowScale = 64
)

func (e8) Code(v []float32, rows, cols int, bits float64) ([]byte, []float32, error) {
	if err := check(v, rows, cols); err != nil {
		return nil, nil, err
	}
	if rows == 0 || cols == 0 {
		return e8Header(nil, rows, cols, 0), []float32{}, nil
	}
	norm, scales, rows, cols, per := e8Normalize(v, rows, cols)
	step, _ := e8Step(norm, e8ValueBits(bits, cols))
	coded := e8Header(nil, rows, cols, step)
	for _, s := range scales {
		coded = appendF32(coded, s)
	}
	pts := e8Points(norm, step)
	var enc rangecoder.Encoder
	for t := 0; t < rows; t += e8TileRows {
		enc.Reset(nil)
		var m e8Models
		end := min(rows, t+e8TileRows)
		for i := t * per; i < end*per; i += 8 {
			m.encodeVector(&enc, pts[i:i+8])
		}
		tile := enc.Finish()
		coded = binary.AppendUvarint(coded, uint64(len(tile)))
		coded = append(coded, tile...)
	}
	recon, err := e8Decode(coded)
	if err != nil {
		return nil, nil, err
	}
	return coded, recon, nil
}

// e8Header is rows, cols and the step.
func e8Header(dst []byte, rows, cols int, step float64) []byte {
	dst = binary.AppendUvarint(dst, uint64(rows))
	dst = binary.AppendUvarint(dst, uint64(cols))
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(step))
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
			x[j] = norm[i+j] / step
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

// e8Normalize scales each row of v to unit RMS (rows shorter than
// e8MinRowScale: the tensor as one row), padded with zeros to whole
// vectors; it returns the values, the scales and the shape it coded.
func e8Normalize(v []float32, rows, cols int) ([]float64, []float32, int, int, int) {
	if cols < e8MinRowScale {
		// short rows: one scale for the tensor (a row's scale would cost
		// more than half a bit a value)
		rows, cols = 1, rows*cols
	}
	per := (cols + 7) / 8 * 8 // a row padded with zeros to whole vectors
	norm := make([]float64, rows*per)
	scales := make([]float32, rows)
	for r := 0; r < rows; r++ {
		row := v[r*cols : (r+1)*cols]
		var ss float64
		for _, x := range row {
			ss += float64(x) * float64(x)
		}
		s := float32(math.Sqrt(ss / float64(cols)))
		scales[r] = s
		for i, x := range row {
			if s > 0 {
				norm[r*per+i] = float64(x) / float64(s)
			}
		}
	}
	return norm, scales, rows, cols, per
}

// e8ValueBits is the rate the coordinates get of a target rate bits per
// parameter: the row scales take 32 bits a row (of cols values).
func e8ValueBits(bits float64, cols int) float64 {
	return max(bits-32/float64(cols), bits/2)
}

// E8Predict is the E8 coder's sampled storage estimate of coding v (rows ×
// cols, row-major) at bits per parameter, in bytes: the header and the
// scales as written, the coordinates at the rate the sample predicts for
// the step the coder would choose (the coded stream is not made). It is
// what picks the step, so it differs from the coded size by the adaptive
// coder's distance from the sample's entropy and the tiles' lengths.
func E8Predict(v []float32, rows, cols int, bits float64) (float64, error) {
	if err := check(v, rows, cols); err != nil {
		return 0, err
	}
	if rows == 0 || cols == 0 {
		return float64(len(e8Header(nil, rows, cols, 0))), nil
	}
	norm, _, rows, cols, _ := e8Normalize(v, rows, cols)
	_, rate := e8Step(norm, e8ValueBits(bits, cols))
	return float64(len(e8Header(nil, rows, cols, 0))+4*rows) + rate*float64(len(norm))/8, nil
}

// e8Step picks the step whose coded rate, estimated from the empirical
// entropy of the coordinates of a sample of vectors (as the adaptive coder
// reaches it within a few percent), is nearest bits per value; it returns
// the step and that estimate (bits per value).
func e8Step(norm []float64, bits float64) (float64, float64) {
	n := len(norm) / 8
	stride := max(1, n/e8Sample)
	var sample []float64
	for i := 0; i < n; i += stride {
		sample = append(sample, norm[8*i:8*i+8]...)
	}
	rate := func(step float64) float64 {
		counts := map[[2]int32]int{}
		pts := e8Points(sample, step)
		var sym [9]int32
		for i := 0; i+8 <= len(pts); i += 8 {
			e8Symbols(pts[i:i+8], &sym)
			for j, c := range sym {
				counts[[2]int32{int32(j), c}]++
			}
		}
		vecs := float64(len(pts) / 8)
		var h float64
		for _, c := range counts {
			h -= float64(c) * math.Log2(float64(c)/vecs)
		}
		return h / float64(len(pts))
	}
	lo, hi := 1e-4, 64.0 // rate falls as the step grows
	for range 40 {
		mid := math.Sqrt(lo * hi)
		if rate(mid) > bits {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, rate(hi)
}

// e8Symbols is what codes a point of E8 (p: twice its coordinates over
// the step): sym[8] is the coset (0: D8, 1: D8 + ½), sym[0..6] the
// integers k_i = (p_i − coset)/2 of the first seven coordinates, and
// sym[7] the last one's k_7 halved, its parity being that which makes
// Σk_i even (D8).
func e8Symbols(p []int32, sym *[9]int32) {
	h := p[0] & 1
	var sum int32
	for i := 0; i < 7; i++ {
		sym[i] = (p[i] - h) >> 1
		sum += sym[i]
	}
	k7 := (p[7] - h) >> 1
	sym[7] = (k7 - sum&1) >> 1
	sym[8] = h
}

// e8Point is e8Symbols' inverse.
func e8Point(sym *[9]int32, p []int32) {
	h := sym[8]
	var sum int32
	for i := 0; i < 7; i++ {
		p[i] = 2*sym[i] + h
		sum += sym[i]
	}
	p[7] = 2*(2*sym[7]+sum&1) + h
}

// e8Models are the adaptive models of one tile: the coset bit, and per
// position in the vector and magnitude class of the integer before it, a
// zero flag, a sign, and the magnitude's bits (Elias-gamma: unary length,
// then the bits).
type e8Models struct {
	coset rangecoder.Model
	zero  [8][4]rangecoder.Model
	sign  [8]rangecoder.Model
	unar  [8][4][24]rangecoder.Model
	rest  [24]rangecoder.Model
}

func magClass(c int32) int {
	switch a := abs32(c); {
	case a == 0:
		return 0
	case a <= 1:
		return 1
	case a <= 3:
		return 2
	}
	return 3
}

func abs32(c int32) int32 {
	if c < 0 {
		return -c
	}
	return c
}

func (m *e8Models) encodeVector(e *rangecoder.Encoder, p []int32) {
	var sym [9]int32
	e8Symbols(p, &sym)
	e.Encode(&m.coset, uint32(sym[8]))
	prev := int32(0)
	for i := 0; i < 8; i++ {
		m.encode(e, i, magClass(prev), sym[i])
		prev = sym[i]
	}
}

func (m *e8Models) decodeVector(d *rangecoder.Decoder, p []int32) {
	var sym [9]int32
	sym[8] = int32(d.Decode(&m.coset))
	prev := int32(0)
	for i := 0; i < 8; i++ {
		sym[i] = m.decode(d, i, magClass(prev))
		prev = sym[i]
	}
	e8Point(&sym, p)
}

func (m *e8Models) encode(e *rangecoder.Encoder, pos, k int, c int32) {
	if c == 0 {
		e.Encode(&m.zero[pos][k], 1)
		return
	}
	e.Encode(&m.zero[pos][k], 0)
	s := uint32(0)
	if c < 0 {
		s = 1
	}
	e.Encode(&m.sign[pos], s)
	a := uint32(min(abs32(c), e8MaxMag)) // ≥ 1
	nb := 31 - leadingZeros(a)           // a has nb+1 bits
	for i := 0; i < nb; i++ {
		e.Encode(&m.unar[pos][k][i], 1)
	}
	if nb < 23 {
		e.Encode(&m.unar[pos][k][nb], 0)
	}
	for i := nb - 1; i >= 0; i-- {
		e.Encode(&m.rest[i], a>>uint(i)&1)
	}
}

func (m *e8Models) decode(d *rangecoder.Decoder, pos, k int) int32 {
	if d.Decode(&m.zero[pos][k]) == 1 {
		return 0
	}
	neg := d.Decode(&m.sign[pos]) == 1
	nb := 0
	for nb < 23 && d.Decode(&m.unar[pos][k][nb]) == 1 {
		nb++
	}
	a := uint32(1)
	for i := nb - 1; i >= 0; i-- {
		a = a<<1 | d.Decode(&m.rest[i])
	}
	c := int32(a)
	if neg {
		c = -c
	}
	return c
}

func leadingZeros(x uint32) int {
	n := 0
	for x&0x80000000 == 0 {
		x <<= 1
		n++
	}
	return n
}

// e8Decode decodes an e8 stream to the values it codes.
func e8Decode(b []byte) ([]float32, error) {
	var x e8Index
	if err := x.parse(b); err != nil {
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
	rows, cols int // as coded (rows shorter than e8MinRowScale: 1 × all)
	step       float64
	scales     int      // offset of the rows' float32 scales in the stream
	tiles      [][2]int // each tile's coded bytes [lo, hi) in the stream
}

// parse reads the header of the e8 stream b and indexes its tiles; it
// refuses what e8Decode refused before tiles were decoded alone.
func (x *e8Index) parse(b []byte) error {
	*x = e8Index{}
	rows64, k := binary.Uvarint(b)
	if k <= 0 {
		return errE8
	}
	pos := k
	cols64, k := binary.Uvarint(b[pos:])
	if k <= 0 || len(b[pos+k:]) < 8 || rows64 > 1<<31 || cols64 > 1<<31 || rows64*cols64 > 1<<31 {
		return errE8
	}
	pos += k
	rows, cols := int(rows64), int(cols64)
	step := math.Float64frombits(binary.LittleEndian.Uint64(b[pos:]))
	pos += 8
	x.rows, x.cols, x.step = rows, cols, step
	if rows == 0 || cols == 0 {
		return nil
	}
	// the adaptive coder spends at least about 1/2000 bit a zero: a stream
	// claiming more values than 16 Ki a byte is damaged
	rest := int64(len(b) - pos)
	if rest < 4*int64(rows) || !(step > 0) || int64(rows)*int64(cols) > rest<<14 {
		return errE8
	}
	x.scales = pos
	pos += 4 * rows
	x.tiles = make([][2]int, 0, (rows+e8TileRows-1)/e8TileRows)
	for t := 0; t < rows; t += e8TileRows {
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
func (x *e8Index) tileValues() int { return e8TileRows * x.cols }

// decodeTile decodes tile t of the stream b (indexed by x) into s, whole:
// a stream that ends before its values do is an error.
func (x *e8Index) decodeTile(b []byte, t int, s *valueSink) error {
	if t < 0 || t >= len(x.tiles) {
		return errE8
	}
	var d rangecoder.Decoder
	if err := d.Reset(b[x.tiles[t][0]:x.tiles[t][1]]); err != nil {
		return err
	}
	var m e8Models
	var p [8]int32
	var v [8]float32
	cols, step := x.cols, x.step
	per := (cols + 7) / 8 * 8
	end := min(x.rows, (t+1)*e8TileRows)
	for r := t * e8TileRows; r < end; r++ {
		scale := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[x.scales+4*r:])))
		for j := 0; j < per; j += 8 {
			m.decodeVector(&d, p[:])
			k := min(8, cols-j)
			for i, c := range p[:k] {
				v[i] = float32(float64(c) / 2 * step * scale)
			}
			s.put(r*cols+j, v[:k])
		}
	}
	if d.Overrun() {
		return errE8
	}
	return nil
}

var errE8 = errors.New("lossy: a damaged e8 stream")
