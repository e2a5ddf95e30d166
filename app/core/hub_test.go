package core

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// stTensor is one tensor for writeST: its safetensors type and raw bytes.
type stTensor struct {
	name, dt string
	n        int
	data     []byte
}

// writeST writes a safetensors file of ts to dir/name and opens it.
func writeST(t *testing.T, dir, name string, ts []stTensor) *Model {
	t.Helper()
	var parts []string
	off := 0
	var body []byte
	for _, x := range ts {
		parts = append(parts, fmt.Sprintf(`"%s":{"dtype":"%s","shape":[%d],"data_offsets":[%d,%d]}`, x.name, x.dt, x.n, off, off+len(x.data)))
		off += len(x.data)
		body = append(body, x.data...)
	}
	hdr := "{" + strings.Join(parts, ",") + "}"
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	data := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	data = append(append(data, hdr...), body...)
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := OpenPath(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func f32Bytes(v []float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// bf16RNE rounds x to BF16 by comparing the two neighbours' distances in
// float64 (ties to the even one): a different road from castF32's.
func bf16RNE(x float32) uint16 {
	lo := uint16(math.Float32bits(x) >> 16)
	hi := lo + 1
	d := func(h uint16) float64 { return math.Abs(float64(math.Float32frombits(uint32(h)<<16)) - float64(x)) }
	switch {
	case d(lo) < d(hi):
		return lo
	case d(hi) < d(lo):
		return hi
	case lo&1 == 0:
		return lo
	}
	return hi
}

func bf16Bytes(v []float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint16(b, bf16RNE(x))
	}
	return b
}

func randVals(r *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64()) * scale
	}
	return v
}

// TestHubSynthetic: a model, its BF16 cast, a fine-tune of it (one tensor
// nudged) and an unrelated model.
func TestHubSynthetic(t *testing.T) {
	const n = 8192
	dir := t.TempDir()
	r := rand.New(rand.NewSource(1))
	w1, w2, norm := randVals(r, n, 0.05), randVals(r, n, 0.05), make([]float32, 64)
	for i := range norm {
		norm[i] = 1
	}
	ft := append([]float32(nil), w2...)
	for i := range ft {
		ft[i] += float32(r.NormFloat64()) * 1e-4
	}
	f32 := func(w1, w2, norm []float32) []stTensor {
		return []stTensor{{"w1", "F32", n, f32Bytes(w1)}, {"w2", "F32", n, f32Bytes(w2)}, {"norm", "F32", 64, f32Bytes(norm)}}
	}
	other := randVals(r, 2*n+64, 0.05)
	ms := []*Model{
		writeST(t, dir, "base/model.safetensors", f32(w1, w2, norm)),
		writeST(t, dir, "base-bf16/model.safetensors", []stTensor{{"w1", "BF16", n, bf16Bytes(w1)}, {"w2", "BF16", n, bf16Bytes(w2)}, {"norm", "BF16", 64, bf16Bytes(norm)}}),
		writeST(t, dir, "ft/model.safetensors", f32(w1, ft, norm)),
		writeST(t, dir, "other/model.safetensors", f32(other[:n], other[n:2*n], other[2*n:])),
	}
	h, err := BuildHub(context.Background(), ms)
	if err != nil {
		t.Fatal(err)
	}
	const base, cast, tune, unrel = 0, 1, 2, 3
	want := []string{"base/model.safetensors", "base-bf16/model.safetensors", "ft/model.safetensors", "other/model.safetensors"}
	for i, m := range h.Models {
		if m.Name != want[i] {
			t.Errorf("model %d named %q, want %q", i, m.Name, want[i])
		}
		if m.TensorBytes <= 0 || m.Alone <= 0 || m.Raw != ms[i].Size {
			t.Errorf("%s: tensor bytes %d, alone %d, raw %d (file %d)", m.Name, m.TensorBytes, m.Alone, m.Raw, ms[i].Size)
		}
	}
	if got, w := h.Shared[tune][base], int64(4*(n+64)); got != w {
		t.Errorf("fine-tune shares %d bytes with its base, want %d (w1 and norm)", got, w)
	}
	if got, w := h.Shared[base][tune], int64(4*(n+64)); got != w {
		t.Errorf("base shares %d bytes with the fine-tune, want %d", got, w)
	}
	if h.Shared[cast][base] != 0 || h.Near[cast][base] != h.Models[cast].TensorBytes {
		t.Errorf("BF16 cast vs base: shared %d near %d, want 0 and all %d", h.Shared[cast][base], h.Near[cast][base], h.Models[cast].TensorBytes)
	}
	if h.NearFrac(cast, base) != 1 {
		t.Errorf("cast's near fraction %v, want 1", h.NearFrac(cast, base))
	}
	if a := h.Models[cast]; a.Added*10 > a.Alone {
		t.Errorf("the BF16 cast adds %d bytes to the store, its own archive is %d", a.Added, a.Alone)
	}
	for j := range h.Models {
		if j != unrel && (h.Shared[unrel][j] != 0 || h.Near[unrel][j] != 0 || h.Shared[j][unrel] != 0 || h.Near[j][unrel] != 0) {
			t.Errorf("unrelated model vs %s: shared %d/%d near %d/%d, want 0", h.Models[j].Name, h.Shared[unrel][j], h.Shared[j][unrel], h.Near[unrel][j], h.Near[j][unrel])
		}
	}
	if got := fmt.Sprint(h.Families); got != "[[0 1 2] [3]]" {
		t.Errorf("families %s, want [[0 1 2] [3]] (bases: %v %v %v %v)", got, h.Models[0].Bases, h.Models[1].Bases, h.Models[2].Bases, h.Models[3].Bases)
	}
	if h.Models[unrel].Family == h.Models[base].Family {
		t.Errorf("unrelated model in the base's family")
	}
}

// hubStats is the part of ../shared/hub/stats.json the test reads.
type hubStats struct {
	Base struct {
		F32  string `json:"file_f32"`
		BF16 string `json:"file_bf16"`
	} `json:"base"`
	Variants map[string]struct {
		Recipe struct {
			Init string `json:"init"`
		} `json:"recipe"`
		F32     string `json:"file_f32"`
		BF16    string `json:"file_bf16"`
		Tensors map[string]struct {
			Numel  int64 `json:"numel"`
			F32Id  bool  `json:"f32_identical"`
			BF16Id bool  `json:"bf16_identical"`
		} `json:"tensors"`
	} `json:"variants"`
}

// TestHubReal builds the hub of ../shared/hub's stories260K family and
// checks it against what stats.json says of the files.
func TestHubReal(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "hub")
	raw, err := os.ReadFile(filepath.Join(root, "stats.json"))
	if err != nil {
		t.Skipf("real hub data absent (%v): the Hub comparison on real fine-tunes is not checked", err)
	}
	var st hubStats
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "stories260K")
	var vs []string
	for v := range st.Variants {
		vs = append(vs, v)
	}
	sort.Strings(vs)
	// base first (F32, then its BF16 export), then each variant the same way
	files := []string{st.Base.F32, st.Base.BF16}
	for _, v := range vs {
		files = append(files, st.Variants[v].F32, st.Variants[v].BF16)
	}
	var ms []*Model
	for _, f := range files {
		m, err := OpenPath(filepath.Join(dir, f), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ms = append(ms, m)
	}
	h, err := BuildHub(context.Background(), ms)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{}
	for i, m := range h.Models {
		at[m.Name] = i
		t.Logf("%-40s raw %8d alone %8d added %8d bases %v", m.Name, m.Raw, m.Alone, m.Added, m.Bases)
	}
	t.Logf("store %d bytes = %.3f x the %d bytes of the own archives", h.Stored, float64(h.Stored)/float64(h.Alone), h.Alone)
	idx := func(f string) int {
		i, ok := at[f]
		if !ok {
			t.Fatalf("model %s not in the hub (names %v)", f, at)
		}
		return i
	}
	b32, b16 := idx(st.Base.F32), idx(st.Base.BF16)
	for _, v := range vs {
		sv := st.Variants[v]
		v32, v16 := idx(sv.F32), idx(sv.BF16)
		// every BF16 file is torch's RNE cast of its F32 file
		if got := h.Shared[v16][v32] + h.Near[v16][v32]; got != h.Models[v16].TensorBytes {
			t.Errorf("%s: BF16 shared+near with its F32 %d bytes, want all %d", v, got, h.Models[v16].TensorBytes)
		}
		var id32, id16 int64
		for _, ts := range sv.Tensors {
			if ts.F32Id {
				id32 += 4 * ts.Numel
			}
			if ts.BF16Id {
				id16 += 2 * ts.Numel
			}
		}
		if sv.Recipe.Init != "base" {
			continue // stats.json compares with the base; this one starts elsewhere
		}
		if got := h.Shared[v32][b32]; got < id32 || got > h.Models[v32].TensorBytes {
			t.Errorf("%s: F32 shares %d bytes with the base, stats.json has %d bytes of identical tensors", v, got, id32)
		}
		if got := h.Shared[v16][b16]; got < id16 || got > h.Models[v16].TensorBytes {
			t.Errorf("%s: BF16 shares %d bytes with the base, stats.json has %d bytes of identical tensors", v, got, id16)
		}
		t.Logf("%s vs base: F32 shared %.3f near %.3f; BF16 shared %.3f near %.3f", v,
			h.SharedFrac(v32, b32), h.NearFrac(v32, b32), h.SharedFrac(v16, b16), h.NearFrac(v16, b16))
	}
	// families: the recipes' init chains join every variant to the base
	want := map[int]bool{}
	for _, v := range vs {
		init, seen := st.Variants[v].Recipe.Init, map[string]bool{}
		for init != "base" && !seen[init] {
			seen[init] = true
			init = st.Variants[init].Recipe.Init
		}
		if init == "base" {
			want[idx(st.Variants[v].F32)], want[idx(st.Variants[v].BF16)] = true, true
		}
	}
	want[b32], want[b16] = true, true
	for i := range want {
		if h.Models[i].Family != h.Models[b32].Family {
			t.Errorf("%s is not in the base's family (families %v)", h.Models[i].Name, h.Families)
		}
	}
}
