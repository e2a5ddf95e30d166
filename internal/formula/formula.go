// Package formula makes the structured float tables that real audio and
// vision models hold, from their formulas, for the codec's tests: windowed
// DFT bases (an STFT layer's weights) and DCT bases (MFCCs), as row-major
// little-endian F32 bytes, and those tables rounded to BF16 or F16 (the
// same tensors of a model published in 16 bits).
package formula

import (
	"encoding/binary"
	"math"

	"neuralzip/dtype"
)

// F32Table is the rows × cols table of f(r, c), rounded to F32, row-major.
func F32Table(rows, cols int, f func(r, c int) float64) []byte {
	out := make([]byte, 0, 4*rows*cols)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(f(r, c))))
		}
	}
	return out
}

// WindowedDFT is a windowed DFT basis as an STFT layer holds it: the real
// parts, then the imaginary parts, of the nFFT/2+1 frequencies over nFFT
// samples, times a periodic Hann window of win samples centred in the
// frame (zeros outside it when win < nFFT).
func WindowedDFT(nFFT, win int) []byte {
	pad := (nFFT - win) / 2
	half := nFFT/2 + 1
	return F32Table(2*half, nFFT, func(r, j int) float64 {
		if j < pad || j >= pad+win {
			return 0
		}
		w := 0.5 - 0.5*math.Cos(2*math.Pi*float64(j-pad)/float64(win))
		k := r % half
		a := 2 * math.Pi * float64(k*j) / float64(nFFT)
		if r >= half {
			return -w * math.Sin(a)
		}
		return w * math.Cos(a)
	})
}

// DCTBasis is the orthonormal DCT-II matrix of n outputs over m inputs
// (MFCCs from a mel spectrogram).
func DCTBasis(n, m int) []byte {
	return F32Table(n, m, func(k, j int) float64 {
		s := math.Sqrt(2 / float64(m))
		if k == 0 {
			s = math.Sqrt(1 / float64(m))
		}
		return s * math.Cos(math.Pi*float64(k)*(float64(j)+0.5)/float64(m))
	})
}

// BF16 is the F32 table t rounded to BF16 (to nearest, ties to even), as
// little-endian 16-bit words.
func BF16(t []byte) []byte {
	out := make([]byte, 0, len(t)/2)
	for i := 0; i+4 <= len(t); i += 4 {
		out = binary.LittleEndian.AppendUint16(out, dtype.F32ToBF16(math.Float32frombits(binary.LittleEndian.Uint32(t[i:]))))
	}
	return out
}

// F16 is the F32 table t rounded to F16 (IEEE half precision), as
// little-endian 16-bit words.
func F16(t []byte) []byte {
	out := make([]byte, 0, len(t)/2)
	for i := 0; i+4 <= len(t); i += 4 {
		out = binary.LittleEndian.AppendUint16(out, dtype.F32ToF16(math.Float32frombits(binary.LittleEndian.Uint32(t[i:]))))
	}
	return out
}
