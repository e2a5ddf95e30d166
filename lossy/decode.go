package lossy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// decodeCoded decodes the bytes method wrote for a rows × cols matrix:
// the reconstruction its Code returned, bit for bit (TestDecodeTwins).
func decodeCoded(method string, b []byte, rows, cols int) ([]float32, error) {
	if rows < 0 || cols < 0 {
		return nil, ErrShape
	}
	if want := codedSize(method, int64(rows), int64(cols)); want >= 0 && int64(len(b)) != want {
		return nil, fmt.Errorf("lossy: %s: %d bytes for %d × %d, want %d", method, len(b), rows, cols, want)
	}
	n := rows * cols
	switch method {
	case "nf4":
		nb := (n + nf4Block - 1) / nf4Block
		codes := b[4*nb:]
		out := make([]float32, n)
		for i := range out {
			absmax := f32At(b, 4*(i/nf4Block))
			out[i] = nf4Levels[nibble(codes, i)] * absmax
		}
		return out, nil
	case "int8", "int4":
		codes := b[4*rows:]
		out := make([]float32, n)
		for r := 0; r < rows; r++ {
			scale := f32At(b, 4*r)
			for i := r * cols; i < (r+1)*cols; i++ {
				var k int8
				if method == "int8" {
					k = int8(codes[i])
				} else {
					k = int8(nibble(codes, i)<<4) >> 4
				}
				if k == -128 || method == "int4" && k == -8 {
					return nil, errors.New("lossy: an integer code outside the symmetric range")
				}
				out[i] = float32(k) * scale
			}
		}
		return out, nil
	case "fp8", "fp8row", "fp8h", "fp8hd":
		nScales := rows
		if method == "fp8" {
			nScales = 1
		}
		groups := 0 // fp8hd: second scales per row
		if method == "fp8hd" {
			groups = (cols + dualGroup - 1) / dualGroup
		}
		exps := b[4*nScales:]
		codes := exps[(rows*groups+1)/2:]
		out := make([]float32, n)
		for i, c := range codes {
			if c&127 == 127 {
				return nil, errors.New("lossy: an FP8 NaN code")
			}
			scale := f32At(b, 0)
			if method != "fp8" {
				scale = f32At(b, 4*(i/cols))
			}
			if groups > 0 {
				scale = groupScale(scale, int(nibble(exps, i/cols*groups+i%cols/dualGroup)))
			}
			out[i] = fromE4M3(c) * scale
		}
		if (method == "fp8h" || method == "fp8hd") && cols > 0 {
			h := hadamardBlock(cols)
			for r := 0; r < rows; r++ {
				row := out[r*cols : (r+1)*cols]
				for j := 0; j < cols; j += h {
					fwht(row[j : j+h])
				}
			}
		}
		return out, nil
	case "e8":
		out, err := e8Decode(b)
		if err != nil {
			return nil, err
		}
		if len(out) != n {
			return nil, fmt.Errorf("lossy: e8: %d values for %d × %d", len(out), rows, cols)
		}
		return out, nil
	}
	return nil, fmt.Errorf("lossy: no decoder for %q", method)
}

// nibble is the i-th 4-bit code (the low nibble first).
func nibble(b []byte, i int) byte { return b[i/2] >> (4 * uint(i&1)) & 15 }

func f32At(b []byte, i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[i:])) }
