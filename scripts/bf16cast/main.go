// Command bf16cast writes one BF16 safetensors file holding every F32 and
// F16 tensor of the given models, cast to BF16 with round-to-nearest-even
// (as torch's .to(torch.bfloat16)), named "<model file>/<tensor>". It makes
// the unseen-models corpus of docs/setups.md (scripts/bench-setup.sh):
// BF16 weights of architectures that the bench corpus does not hold.
//
//	go run ./scripts/bf16cast OUT.safetensors MODEL...
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
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: bf16cast OUT.safetensors MODEL...")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "bf16cast:", err)
		os.Exit(1)
	}
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
				if s.Kind != checkpoint.Tensor || s.Length < 2 {
					continue
				}
				b := raw[s.Offset:s.End()]
				var d []byte
				switch s.DType {
				case dtype.F32:
					d = make([]byte, len(b)/2)
					for i := 0; i < len(b)/4; i++ {
						binary.LittleEndian.PutUint16(d[2*i:], dtype.F32ToBF16(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))))
					}
				case dtype.F16:
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
	hdr := map[string]any{"__metadata__": map[string]string{"note": "BF16 casts (RNE) of models not in real-bf16"}}
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
		hdr[e.name] = map[string]any{"dtype": "BF16", "shape": shape, "data_offsets": []int64{off, off + int64(len(e.data))}}
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
