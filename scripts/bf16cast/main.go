// Command bf16cast writes one BF16 safetensors file holding every F32 and
// F16 tensor of the given models, cast to BF16 with round-to-nearest-even
// (as torch's .to(torch.bfloat16)), named "<model file>/<tensor>". It makes
// the unseen-models corpus of docs/setups.md (scripts/bench-setup.sh):
// BF16 weights of architectures that the bench corpus does not hold.
// With -f32 it keeps the F32 tensors as they are (F16 ones widened): the
// same tensors as one large F32 file (the large-model rows of
// docs/store.md).
//
//	go run ./scripts/bf16cast [-f32] OUT.safetensors MODEL...
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

type ent struct {
	name  string
	shape []int64
	data  []byte
}

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "-f32" {
		keepF32, args = true, args[1:]
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bf16cast [-f32] OUT.safetensors MODEL...")
		os.Exit(2)
	}
	if err := run(args[0], args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bf16cast:", err)
		os.Exit(1)
	}
}

// keepF32: write F32 tensors as they are and widen F16 ones (-f32).
var keepF32 bool

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
				ents = append(ents, ent{filepath.Base(p) + "/" + s.Name, s.Shape, d})
			}
		}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].name < ents[j].name })
	note := "BF16 casts (RNE) of models not in real-bf16"
	if keepF32 {
		note = "F32 tensors of models not in the bench corpus"
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
		dt := "BF16"
		if keepF32 {
			dt = "F32"
		}
		hdr[e.name] = map[string]any{"dtype": dt, "shape": shape, "data_offsets": []int64{off, off + int64(len(e.data))}}
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
