// Package storetest makes the synthetic hub of fine-tunes that the store's
// scale test (store/lsh_test.go) and `nzlab store-scale` add: thousands of
// models of one family derived from a few real ones.
//
// Model i of a Hub (made in order, from its seed i alone) is a copy of a
// parent with a few tensors changed:
//
//   - its type: every fourth model (i%4 == 3) is BF16, the others F32,
//     each made from the real files of its type only;
//   - its parent: a real file of its type (for the first model of a type,
//     and one time in three), else an earlier synthetic model of its type:
//     one of the last 8 half the time (a lineage), any of them otherwise;
//   - a mix, one time in four: one tensor is replaced by the same tensor of
//     another real file of its type (a bit-identical tensor: a reference);
//   - a perturbation of 1 to 3 tensors (of at least 256 values), chosen at
//     random: each value gets s·σ·g added, σ the tensor's standard
//     deviation, g about N(0, 1) (a sum of four uniform values, scaled),
//     s one of 0.002, 0.005, 0.01 and 0.02; BF16 values are perturbed in
//     F32 and rounded to nearest even.
//
// So a perturbed tensor is nearest to its parent's (coded as a delta
// against it, or against its chain's root when that chain is 3 deep), and
// models of one lineage are deltas against many different bases.
package storetest

import (
	"encoding/binary"
	"fmt"
	"math"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// File is a real model file: its bytes and its layout.
type File struct {
	Name string
	Data []byte
	Segs []codec.Segment
}

// Model is a synthetic model: one file with its source's layout.
type Model struct {
	Name   string // synth/NNNN/model.{f32,bf16}.safetensors
	Parent string // the real file's or the synthetic model's name
	Data   []byte
	Segs   []codec.Segment
}

// Hub makes the synthetic models of a set of real files.
type Hub struct {
	src    []File
	groups map[dtype.DType][]int // real files by the type of their float tensors
	models []gen
	byType map[dtype.DType][]int // synthetic models by type
}

// gen is a synthetic model: its real file and the tensors that differ.
type gen struct {
	name string
	src  int
	ty   dtype.DType
	over map[int][]byte // segment index → its bytes
}

// NewHub returns the hub of real files src (safetensors of F32 or BF16
// tensors, all of one architecture).
func NewHub(src []File) *Hub {
	h := &Hub{src: src, groups: map[dtype.DType][]int{}, byType: map[dtype.DType][]int{}}
	for i, f := range src {
		for _, s := range f.Segs {
			if s.IsTensor() && (s.DType == dtype.F32 || s.DType == dtype.BF16) {
				h.groups[s.DType] = append(h.groups[s.DType], i)
				break
			}
		}
	}
	return h
}

// rng is splitmix64.
type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// unit is uniform in [0, 1).
func (r *rng) unit() float64 { return float64(r.next()>>11) / (1 << 53) }

// Next makes the next synthetic model.
func (h *Hub) Next() (Model, error) {
	i := len(h.models)
	r := rng(uint64(i)*0x2545f4914f6cdd1d + 1)
	ty := dtype.F32
	if i%4 == 3 && len(h.groups[dtype.BF16]) > 0 {
		ty = dtype.BF16
	}
	reals := h.groups[ty]
	if len(reals) == 0 {
		return Model{}, fmt.Errorf("storetest: no real %s file", ty)
	}
	g := gen{name: fmt.Sprintf("synth/%04d/model.%s.safetensors", i, map[dtype.DType]string{dtype.F32: "f32", dtype.BF16: "bf16"}[ty]), ty: ty, over: map[int][]byte{}}
	parent := ""
	syn := h.byType[ty]
	if len(syn) == 0 || r.intn(3) == 0 {
		g.src = reals[r.intn(len(reals))]
		parent = h.src[g.src].Name
	} else {
		var p gen
		if r.intn(2) == 0 {
			p = h.models[syn[max(0, len(syn)-8)+r.intn(min(8, len(syn)))]]
		} else {
			p = h.models[syn[r.intn(len(syn))]]
		}
		g.src, parent = p.src, p.name
		for k, v := range p.over {
			g.over[k] = v
		}
	}
	f := h.src[g.src]
	var cands []int // tensors that may change
	for k, s := range f.Segs {
		if s.IsTensor() && s.DType == ty && s.Length/int64(ty.Size()) >= 256 {
			cands = append(cands, k)
		}
	}
	if len(cands) == 0 {
		return Model{}, fmt.Errorf("storetest: %s: no tensor to change", f.Name)
	}
	if r.intn(4) == 0 && len(reals) > 1 {
		o := reals[r.intn(len(reals))]
		k := cands[r.intn(len(cands))]
		if s, ok := sameTensor(h.src[o], f.Segs[k]); ok && o != g.src {
			g.over[k] = h.src[o].Data[s.Offset : s.Offset+s.Length]
		}
	}
	for range 1 + r.intn(3) {
		k := cands[r.intn(len(cands))]
		s := f.Segs[k]
		cur, ok := g.over[k]
		if !ok {
			cur = f.Data[s.Offset : s.Offset+s.Length]
		}
		scale := []float64{0.002, 0.005, 0.01, 0.02}[r.intn(4)]
		g.over[k] = perturb(cur, ty, scale, &r)
	}
	h.models = append(h.models, g)
	h.byType[ty] = append(h.byType[ty], i)
	return h.model(g, parent), nil
}

// model is gen g's file.
func (h *Hub) model(g gen, parent string) Model {
	f := h.src[g.src]
	data := append([]byte(nil), f.Data...)
	for k, b := range g.over {
		copy(data[f.Segs[k].Offset:], b)
	}
	return Model{Name: g.name, Parent: parent, Data: data, Segs: f.Segs}
}

// sameTensor is the segment of f with s's name, type and length.
func sameTensor(f File, s codec.Segment) (codec.Segment, bool) {
	for _, t := range f.Segs {
		if t.Name == s.Name && t.DType == s.DType && t.Length == s.Length {
			return t, true
		}
	}
	return codec.Segment{}, false
}

// perturb returns b (values of type ty) with s·σ·g added to each value.
func perturb(b []byte, ty dtype.DType, s float64, r *rng) []byte {
	n := len(b) / ty.Size()
	v := make([]float64, n)
	var sum, sq float64
	for i := range v {
		if ty == dtype.F32 {
			v[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		} else {
			v[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16))
		}
		sum += v[i]
		sq += v[i] * v[i]
	}
	mean := sum / float64(n)
	sigma := math.Sqrt(max(sq/float64(n)-mean*mean, 0))
	out := make([]byte, len(b))
	for i, x := range v {
		g := (r.unit() + r.unit() + r.unit() + r.unit() - 2) * math.Sqrt(3) // variance 4/12·3 = 1
		y := float32(x + s*sigma*g)
		if ty == dtype.F32 {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(y))
		} else {
			binary.LittleEndian.PutUint16(out[2*i:], dtype.F32ToBF16(y))
		}
	}
	return out
}
