package lossy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"neuralzip/dtype"
)

// Decoding works in tiles: TileRows rows of a coded matrix, which decode
// without the rows before them. E8 codes its stream in tiles of rows (each
// with its own range coder and models; its tile index, the uvarint
// lengths, is parsed once: e8Index): TileRows of them in format 1, in
// format 2 as many as make 16 Ki values, in multiples of TileRows
// (e8TileRowsFor: 256 rows of 64 values); the other methods' rows (nf4:
// blocks of 64 values) are independent already. An E8 tensor of rows
// shorter than e8MinRowScale is coded as one row, so it is one tile.

// TileRows is the rows of a coded tensor's tile (e8's of format 2: a
// multiple of it, tileRows).
const TileRows = 64

// tileRows is the rows of a tile of a matrix of rows of cols values coded
// by method, in the format of a lossy archive of version format.
func tileRows(method string, cols, format int) int {
	if method == "e8" && format >= 2 {
		return e8TileRowsFor(cols)
	}
	return TileRows
}

// tileCount is the number of tiles of a rows × cols matrix coded by
// method (format: as tileRows).
func tileCount(method string, rows, cols, format int) int {
	if rows == 0 || cols == 0 {
		return 0
	}
	if method == "e8" && cols < e8MinRowScale {
		return 1
	}
	tr := tileRows(method, cols, format)
	return (rows + tr - 1) / tr
}

// tileValues is tile t's values [v0, v1) of a rows × cols matrix,
// row-major.
func tileValues(method string, rows, cols, t, format int) (v0, v1 int) {
	if method == "e8" && cols < e8MinRowScale {
		return 0, rows * cols
	}
	tr := tileRows(method, cols, format)
	return t * tr * cols, min(rows, (t+1)*tr) * cols
}

// tensorCode is the bytes method wrote for a rows × cols matrix, checked
// and (e8) indexed, ready to decode any of its values.
type tensorCode struct {
	method     string
	b          []byte
	rows, cols int
	format     int // a lossy archive's version (e8's stream format)
	e8         e8Index
}

// newTensorCode checks the size of b (exact for the methods of one rate)
// and, for e8, parses its header and tile index (e8 stream format
// format: a lossy archive's version).
func newTensorCode(method string, b []byte, rows, cols, format int) (*tensorCode, error) {
	if rows < 0 || cols < 0 {
		return nil, ErrShape
	}
	if want := codedSize(method, int64(rows), int64(cols)); want >= 0 && int64(len(b)) != want {
		return nil, fmt.Errorf("lossy: %s: %d bytes for %d × %d, want %d", method, len(b), rows, cols, want)
	}
	c := &tensorCode{method: method, b: b, rows: rows, cols: cols, format: format}
	switch method {
	case "nf4", "int8", "int4", "fp8", "fp8row", "fp8e5", "fp8e5row", "fp8h", "fp8hd":
	case "e8":
		if err := c.e8.parse(b, format); err != nil {
			return nil, err
		}
		// the geometry the coder chose for this shape: tileValues relies on it
		wr, wc := rows, cols
		if cols < e8MinRowScale {
			wr, wc = 1, rows*cols
		}
		if rows*cols == 0 {
			wr, wc = c.e8.rows, c.e8.cols
		}
		if c.e8.rows*c.e8.cols != rows*cols || rows*cols > 0 && (c.e8.rows != wr || c.e8.cols != wc) {
			return nil, fmt.Errorf("lossy: e8: a stream of %d × %d for %d × %d", c.e8.rows, c.e8.cols, rows, cols)
		}
	default:
		return nil, fmt.Errorf("lossy: no decoder for %q", method)
	}
	return c, nil
}

// decodeCoded decodes the bytes method wrote for a rows × cols matrix:
// the reconstruction its Code returned, bit for bit (TestDecodeTwins).
func decodeCoded(method string, b []byte, rows, cols int) ([]float32, error) {
	return decodeCodedFormat(method, b, rows, cols, e8Format)
}

// decodeCodedFormat is decodeCoded for the bytes of a lossy archive of
// version format.
func decodeCodedFormat(method string, b []byte, rows, cols, format int) ([]float32, error) {
	c, err := newTensorCode(method, b, rows, cols, format)
	if err != nil {
		return nil, err
	}
	out := make([]float32, rows*cols)
	if err := c.decode(0, len(out), &valueSink{hi: len(out), f32: out}); err != nil {
		return nil, err
	}
	return out, nil
}

// valueSink receives a tensor's decoded values [lo, hi): into f32, or
// stored as dt into b (value lo first).
type valueSink struct {
	lo, hi int
	f32    []float32
	b      []byte
	dt     dtype.DType
}

// put takes values i, i+1, ... (those outside [lo, hi) are dropped).
func (s *valueSink) put(i int, v []float32) {
	if i < s.lo {
		if i+len(v) <= s.lo {
			return
		}
		v, i = v[s.lo-i:], s.lo
	}
	if i+len(v) > s.hi {
		if i >= s.hi {
			return
		}
		v = v[:s.hi-i]
	}
	if s.f32 != nil {
		copy(s.f32[i-s.lo:], v)
		return
	}
	Store(s.dt, s.b[(i-s.lo)*s.dt.Size():], v)
}

// decode decodes values [lo, hi) into s: for e8 the whole tiles that
// cover them (a tile decodes whole or not at all), for fp8h and fp8hd the
// whole rows (rotated back together), else just those values.
func (c *tensorCode) decode(lo, hi int, s *valueSink) error {
	if lo < 0 || hi > c.rows*c.cols || lo > hi {
		return fmt.Errorf("lossy: values [%d, %d) of %d × %d", lo, hi, c.rows, c.cols)
	}
	if lo == hi {
		return nil
	}
	b, rows, cols := c.b, c.rows, c.cols
	var chunk [64]float32
	switch c.method {
	case "nf4":
		nb := (rows*cols + nf4Block - 1) / nf4Block
		codes := b[4*nb:]
		for i := lo; i < hi; {
			blk := i / nf4Block
			e := min(hi, (blk+1)*nf4Block)
			absmax := f32At(b, 4*blk)
			for k := i; k < e; k++ {
				chunk[k-i] = nf4Levels[nibble(codes, k)] * absmax
			}
			s.put(i, chunk[:e-i])
			i = e
		}
	case "int8", "int4":
		codes := b[4*rows:]
		for i := lo; i < hi; {
			r := i / cols
			e := min(hi, (r+1)*cols, i+len(chunk))
			scale := f32At(b, 4*r)
			for k := i; k < e; k++ {
				var q int8
				if c.method == "int8" {
					q = int8(codes[k])
				} else {
					q = int8(nibble(codes, k)<<4) >> 4
				}
				if q == -128 || c.method == "int4" && q == -8 {
					return errors.New("lossy: an integer code outside the symmetric range")
				}
				chunk[k-i] = float32(q) * scale
			}
			s.put(i, chunk[:e-i])
			i = e
		}
	case "fp8", "fp8row", "fp8e5", "fp8e5row":
		nScales, perTensor := rows, c.method == "fp8" || c.method == "fp8e5"
		if perTensor {
			nScales = 1
		}
		f := fp8Of(c.method == "fp8e5" || c.method == "fp8e5row")
		codes := b[4*nScales:]
		for i := lo; i < hi; {
			r := i / cols
			e := min(hi, (r+1)*cols, i+len(chunk))
			scale := f32At(b, 0)
			if !perTensor {
				scale = f32At(b, 4*r)
			}
			for k := i; k < e; k++ {
				if !f.finite(codes[k]) {
					return errors.New("lossy: an FP8 NaN or infinity code")
				}
				chunk[k-i] = f.value(codes[k]) * scale
			}
			s.put(i, chunk[:e-i])
			i = e
		}
	case "fp8h", "fp8hd":
		groups := 0 // fp8hd: second scales per row
		if c.method == "fp8hd" {
			groups = (cols + dualGroup - 1) / dualGroup
		}
		exps := b[4*rows:]
		codes := exps[(rows*groups+1)/2:]
		row := make([]float32, cols)
		h := hadamardBlock(cols)
		for r := lo / cols; r*cols < hi; r++ {
			for j := range row {
				i := r*cols + j
				cd := codes[i]
				if cd&127 == 127 {
					return errors.New("lossy: an FP8 NaN code")
				}
				scale := f32At(b, 4*r)
				if groups > 0 {
					scale = groupScale(scale, int(nibble(exps, r*groups+j/dualGroup)))
				}
				row[j] = fromE4M3(cd) * scale
			}
			for j := 0; j < cols; j += h {
				fwht(row[j : j+h])
			}
			s.put(r*cols, row)
		}
	case "e8":
		per := c.e8.tileValues()
		for t := lo / per; t*per < hi; t++ {
			if err := c.e8.decodeTile(b, t, s); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("lossy: no decoder for %q", c.method)
	}
	return nil
}

// nibble is the i-th 4-bit code (the low nibble first).
func nibble(b []byte, i int) byte { return b[i/2] >> (4 * uint(i&1)) & 15 }

func f32At(b []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[i:])) }
