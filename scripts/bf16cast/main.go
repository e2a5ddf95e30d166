// Command bf16cast writes one BF16 safetensors file holding every F32 and
// F16 tensor of the given models, cast to BF16 with round-to-nearest-even
// (as torch's .to(torch.bfloat16)), named "<model file>/<tensor>". It makes
// the unseen-models corpus of docs/setups.md (scripts/bench-setup.sh):
// BF16 weights of architectures that the bench corpus does not hold.
// With -f32 it keeps the F32 tensors as they are (F16 ones widened): the
// same tensors as one large F32 file (the large-model rows of
// docs/store.md). With -e4m3 it writes FP8 weights as FP8 checkpoints hold
// them: every F32 or F16 tensor of 4 KiB or more as F8_E4M3 of its values
// divided by one scale (its largest magnitude / 448, round to nearest even,
// saturating), the scale beside it as an F32 scalar "<tensor>.scale"; smaller
// tensors stay F32 (docs/benchmarks.md, FP8 fields).
//
//	go run ./scripts/bf16cast [-f32|-e4m3] OUT.safetensors MODEL...
package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"neuralzip/checkpoint"
	"neuralzip/dtype"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "-f32" {
		keepF32, args = true, args[1:]
	} else if len(args) > 0 && args[0] == "-e4m3" {
		toE4M3, args = true, args[1:]
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bf16cast [-f32|-e4m3] OUT.safetensors MODEL...")
		os.Exit(2)
	}
	if err := run(args[0], args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bf16cast:", err)
		os.Exit(1)
	}
}

// keepF32: write F32 tensors as they are and widen F16 ones (-f32);
// toE4M3: write them as scaled FP8 E4M3 (-e4m3).
var keepF32, toE4M3 bool

type ent struct {
	name  string
	dt    string
	shape []int64
	data  []byte
}

// e4m3 are the non-negative finite values of FP8 E4M3 (codes 0..126; 127 is
// NaN), increasing.
var e4m3 = func() []float64 {
	v := make([]float64, 127)
	for c := range v {
		e, m := c>>3, float64(c&7)/8
		if e == 0 {
			v[c] = m * math.Ldexp(1, -6)
		} else {
			v[c] = (1 + m) * math.Ldexp(1, e-7)
		}
	}
	return v
}()

// castE4M3 codes vals/scale as E4M3 (nearest, ties to the even code,
// saturating at ±448), scale = the largest magnitude / 448 (1 when all are
// zero), and returns the codes and the scale.
func castE4M3(vals []float32) ([]byte, float32) {
	var amax float64
	for _, x := range vals {
		amax = max(amax, math.Abs(float64(x)))
	}
	scale := float32(amax / 448)
	if scale == 0 || math.IsInf(float64(scale), 0) || math.IsNaN(float64(scale)) {
		scale = 1
	}
	out := make([]byte, len(vals))
	for i, x := range vals {
		y := float64(x) / float64(scale)
		s := byte(0)
		if y < 0 || y == 0 && math.Signbit(y) {
			s, y = 0x80, -y
		}
		j := sort.SearchFloat64s(e4m3, y)
		var c int
		switch {
		case j >= len(e4m3):
			c = len(e4m3) - 1
		case j == 0:
			c = 0
		case e4m3[j]-y < y-e4m3[j-1]:
			c = j
		case y-e4m3[j-1] < e4m3[j]-y:
			c = j - 1
		case j%2 == 0:
			c = j
		default:
			c = j - 1
		}
		out[i] = s | byte(c)
	}
	return out, scale
}

func run(out string, models []string) error {
	var ents []ent
	for _, p := range models {
		m, err := checkpoint.OpenPath(p)
		if err != nil {
			return err
		}
		for _, f := range m.Files {
			raw, err := os.ReadFile(f.Path)
			if err != nil {
				return err
			}
			for _, s := range f.Layout.Segments {
				if !s.IsTensor() || s.Length < 2 {
					continue
				}
				b := raw[s.Offset:s.End()]
				var d []byte
				switch {
				case toE4M3 && (s.DType == dtype.F32 || s.DType == dtype.F16):
					vals := make([]float32, s.Length/int64(s.DType.Size()))
					for i := range vals {
						if s.DType == dtype.F32 {
							vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
						} else {
							vals[i] = dtype.F16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
						}
					}
					name := filepath.Base(p) + "/" + s.Name
					if len(vals)*4 < 4096 {
						d = make([]byte, 4*len(vals))
						for i, v := range vals {
							binary.LittleEndian.PutUint32(d[4*i:], math.Float32bits(v))
						}
						ents = append(ents, ent{name, "F32", s.Shape, d})
						continue
					}
					codes, scale := castE4M3(vals)
					ents = append(ents, ent{name, "F8_E4M3", s.Shape, codes},
						ent{name + ".scale", "F32", []int64{}, binary.LittleEndian.AppendUint32(nil, math.Float32bits(scale))})
					continue
				case keepF32 && s.DType == dtype.F32:
					d = append([]byte(nil), b...)
				case keepF32 && s.DType == dtype.F16:
					d = make([]byte, 2*len(b))
					for i := 0; i < len(b)/2; i++ {
						binary.LittleEndian.PutUint32(d[4*i:], math.Float32bits(dtype.F16ToF32(binary.LittleEndian.Uint16(b[2*i:]))))
					}
				case s.DType == dtype.F32:
					d = make([]byte, len(b)/2)
					for i := 0; i < len(b)/4; i++ {
						binary.LittleEndian.PutUint16(d[2*i:], dtype.F32ToBF16(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))))
					}
				case s.DType == dtype.F16:
					d = make([]byte, len(b))
					for i := 0; i < len(b)/2; i++ {
						binary.LittleEndian.PutUint16(d[2*i:], dtype.F32ToBF16(dtype.F16ToF32(binary.LittleEndian.Uint16(b[2*i:]))))
					}
				default:
					continue
				}
				dt := "BF16"
				if keepF32 {
					dt = "F32"
				}
				ents = append(ents, ent{filepath.Base(p) + "/" + s.Name, dt, s.Shape, d})
			}
		}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].name < ents[j].name })
	note := "BF16 casts (RNE) of models not in real-bf16"
	if keepF32 {
		note = "F32 tensors of models not in the bench corpus"
	} else if toE4M3 {
		note = "FP8 E4M3 (one scale per tensor) of F32/F16 weights"
	}
	hdr := map[string]any{"__metadata__": map[string]string{"note": note}}
	var off int64
	seen := map[string]bool{}
	for i := range ents {
		for seen[ents[i].name] {
			ents[i].name += "_"
		}
		seen[ents[i].name] = true
		e := ents[i]
		shape := e.shape
		if shape == nil {
			shape = []int64{}
		}
		hdr[e.name] = map[string]any{"dtype": e.dt, "shape": shape, "data_offsets": []int64{off, off + int64(len(e.data))}}
		off += int64(len(e.data))
	}
	j, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	for len(j)%8 != 0 {
		j = append(j, ' ')
	}
	buf := binary.LittleEndian.AppendUint64(nil, uint64(len(j)))
	buf = append(buf, j...)
	for _, e := range ents {
		buf = append(buf, e.data...)
	}
	if err := os.WriteFile(out, buf, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %d tensors, %d data bytes\n", out, len(ents), off)
	return nil
}
