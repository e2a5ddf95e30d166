package core

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"

	"neuralzip/dtype"
	"neuralzip/store"
)

// HubModel is one model's line on the Hub screen.
type HubModel struct {
	Name        string   // as shown: the model's path without the prefix common to all
	Raw         int64    // bytes of its files
	TensorBytes int64    // bytes of its tensors (read from a store: of its distinct units)
	Alone       int64    // its files' own nzip archives
	Added       int64    // payload its add stored in the hub's store
	Bases       []string // the models the store coded its deltas and casts against
	Family      int      // index into Hub.Families
	Depth       int      // its deepest unit's base chain (0: every unit decodes alone)
}

// Hub is what the Hub screen shows for a set of models added, in order, to
// an in-memory store.
type Hub struct {
	Models []HubModel
	// Shared[i][j] is the bytes of model i's tensors bit-identical to a
	// tensor of model j (i != j; the diagonal is 0).
	Shared [][]int64
	// Near[i][j] is the bytes of model i's tensors, not bit-identical to
	// any tensor of j, that are the round-to-nearest-even BF16/F16 cast of
	// an F32 tensor of j, or (when the store lists j among i's bases) have
	// a tensor of j of the same type and length to be coded against.
	Near [][]int64
	// Families are the groups of models joined by the store's base
	// relations (not by names), each sorted by add order; a model with no
	// relation is a family of its own.
	Families [][]int
	Raw      int64 // Σ model bytes
	Alone    int64 // Σ own nzip archives
	Stored   int64 // the store's payload bytes
	// Source is the store's location when the hub was read from one
	// (OpenHubStore; "" for the open models in an in-memory store).
	// Shared and Near are nil when it holds more than HubMatrixMax models.
	Source string
}

// SharedFrac and NearFrac are Shared[i][j] and Near[i][j] as fractions of
// model i's tensor bytes.
// (0 where the matrix was not computed).
func (h *Hub) SharedFrac(i, j int) float64 {
	if h.Shared == nil {
		return 0
	}
	return hubFrac(h.Shared[i][j], h.Models[i].TensorBytes)
}

// NearFrac: see SharedFrac.
func (h *Hub) NearFrac(i, j int) float64 {
	if h.Near == nil {
		return 0
	}
	return hubFrac(h.Near[i][j], h.Models[i].TensorBytes)
}

func hubFrac(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// hubTensor is one tensor of a model as the hub compares them.
type hubTensor struct {
	hash  [32]byte
	dt    dtype.DType
	bytes int64
}

// BuildHub adds models, in order, to a fresh in-memory store (each with
// its own nzip archive measured) and compares their tensors. It reads every
// tensor's bytes once more to hash them; ctx cancels between models.
func BuildHub(ctx context.Context, models []*Model) (*Hub, error) {
	if len(models) == 0 {
		return nil, fmt.Errorf("hub: no models")
	}
	s := store.NewMem(store.Options{})
	defer s.Close()
	names := hubNames(models)
	h := &Hub{}
	tensors := make([][]hubTensor, len(models))
	casts := make([]map[[32]byte]bool, len(models)) // hashes of the BF16/F16 casts of model j's F32 tensors
	idx := map[string]int{}
	for i, m := range models {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ins := make([]store.Input, len(m.Files))
		for k, f := range m.Files {
			ins[k] = store.Input{Name: f.Name, R: f.R, Size: f.Size, Format: f.Format, Segments: f.Segments}
		}
		man, _, err := s.Add(names[i], ins, store.AddOptions{Compare: true})
		if err != nil {
			return nil, err
		}
		idx[names[i]] = i
		ts, cs, err := hashTensors(m)
		if err != nil {
			return nil, fmt.Errorf("hub: %s: %w", names[i], err)
		}
		tensors[i], casts[i] = ts, cs
		hm := HubModel{Name: names[i], Raw: man.Raw, Alone: man.Alone, Added: man.Added, Bases: man.Bases}
		for _, t := range ts {
			hm.TensorBytes += t.bytes
		}
		h.Models = append(h.Models, hm)
		h.Raw += man.Raw
		h.Alone += man.Alone
	}
	st, err := s.Stats()
	if err != nil {
		return nil, err
	}
	h.Stored = st.Stored

	n := len(models)
	h.Shared, h.Near = square(n), square(n)
	sets := make([]map[[32]byte]bool, n)
	kinds := make([]map[[2]int64]bool, n) // (dtype, length) of model j's tensors
	for j, ts := range tensors {
		sets[j], kinds[j] = map[[32]byte]bool{}, map[[2]int64]bool{}
		for _, t := range ts {
			sets[j][t.hash] = true
			kinds[j][[2]int64{int64(t.dt), t.bytes}] = true
		}
	}
	for i := range n {
		bases := map[int]bool{}
		for _, b := range h.Models[i].Bases {
			if j, ok := idx[b]; ok {
				bases[j] = true
			}
		}
		for j := range n {
			if i == j {
				continue
			}
			for _, t := range tensors[i] {
				switch {
				case sets[j][t.hash]:
					h.Shared[i][j] += t.bytes
				case casts[j][t.hash], bases[j] && kinds[j][[2]int64{int64(t.dt), t.bytes}]:
					h.Near[i][j] += t.bytes
				}
			}
		}
	}
	h.Families = families(h.Models, idx)
	return h, nil
}

func square(n int) [][]int64 {
	m := make([][]int64, n)
	for i := range m {
		m[i] = make([]int64, n)
	}
	return m
}

// hubNames are the models' store names: their paths (or names), made
// unique, without the directory prefix they all share.
func hubNames(models []*Model) []string {
	names := make([]string, len(models))
	for i, m := range models {
		names[i] = m.Path
		if names[i] == "" {
			names[i] = m.Name
		}
		names[i] = strings.ReplaceAll(names[i], "\\", "/")
	}
	if len(names) > 1 {
		p := names[0]
		for _, s := range names[1:] {
			for !strings.HasPrefix(s, p) {
				p = p[:len(p)-1]
			}
		}
		p = p[:strings.LastIndexByte(p, '/')+1]
		for i := range names {
			names[i] = strings.TrimPrefix(names[i], p)
		}
	}
	seen := map[string]int{}
	for i, s := range names {
		if s == "" {
			s = fmt.Sprintf("model %d", i+1)
		}
		seen[s]++
		if seen[s] > 1 {
			s = fmt.Sprintf("%s #%d", s, seen[s])
		}
		names[i] = s
	}
	return names
}

// hashTensors hashes each tensor of m and, for its F32 tensors, their
// round-to-nearest-even BF16 and F16 casts.
func hashTensors(m *Model) ([]hubTensor, map[[32]byte]bool, error) {
	var ts []hubTensor
	casts := map[[32]byte]bool{}
	var buf, cb []byte
	for _, t := range m.Tensors {
		if t.Bytes < 0 || t.File < 0 || t.File >= len(m.Files) || t.Offset < 0 || t.Bytes > m.Files[t.File].Size-t.Offset {
			return nil, nil, fmt.Errorf("tensor %q lies outside its file", t.Name)
		}
		if int64(cap(buf)) < t.Bytes {
			buf = make([]byte, t.Bytes)
		}
		b := buf[:t.Bytes]
		if _, err := m.Files[t.File].R.ReadAt(b, t.Offset); err != nil && err != io.EOF {
			return nil, nil, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		ts = append(ts, hubTensor{hash: sha256.Sum256(b), dt: t.DType, bytes: t.Bytes})
		if t.DType == dtype.F32 && len(b)%4 == 0 {
			for _, to := range []dtype.DType{dtype.BF16, dtype.F16} {
				cb = store.CastF32(cb[:0], b, to)
				casts[sha256.Sum256(cb)] = true
			}
		}
	}
	return ts, casts, nil
}

// families joins models along the store's base relations (union-find) and
// lists each group in add order, the groups in the order of their first model.
func families(ms []HubModel, idx map[string]int) [][]int {
	parent := make([]int, len(ms))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for i, m := range ms {
		for _, b := range m.Bases {
			if j, ok := idx[b]; ok {
				a, c := find(i), find(j)
				if a < c {
					a, c = c, a
				}
				parent[a] = c
			}
		}
	}
	group := map[int]int{}
	var fams [][]int
	for i := range ms {
		r := find(i)
		g, ok := group[r]
		if !ok {
			g = len(fams)
			group[r] = g
			fams = append(fams, nil)
		}
		fams[g] = append(fams[g], i)
		ms[i].Family = g
	}
	return fams
}
