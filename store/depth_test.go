package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"path"
	"testing"

	"neuralzip/dtype"
)

// TestChainDepthLimit: a lineage of 20 fine-tunes of the hub's base (each
// the previous one with its F32 weights nudged by 0.1 % noise, so each
// finds its parent nearest) makes deltas of deltas until a chain holds
// maxChain deltas; the next generation's tensors, whose nearest base ends
// such a chain, are coded against the chain's root (at depth 1 again), so
// no delta is deeper than maxChain. Add and the ingest steps agree on it,
// and every model restores.
func TestChainDepthLimit(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	base := inputs(t, path.Join(hub, "base/model.f32.safetensors"))[0]
	raw := fileBytes(t, []Input{base})[0]
	rng := rand.New(rand.NewPCG(1, 2))
	const gens = 20
	var names []string
	var models [][]Input
	cur := raw
	for g := range gens {
		next := append([]byte(nil), cur...)
		for _, s := range base.Segments {
			if s.DType != dtype.F32 {
				continue
			}
			for o := s.Offset; o+4 <= s.Offset+s.Length; o += 4 {
				v := math.Float32frombits(binary.LittleEndian.Uint32(next[o:]))
				v *= 1 + float32(rng.NormFloat64())*1e-3
				binary.LittleEndian.PutUint32(next[o:], math.Float32bits(v))
			}
		}
		names = append(names, fmt.Sprintf("gen%02d", g))
		models = append(models, []Input{{Name: base.Name, R: bytesReader(next), Size: int64(len(next)), Format: base.Format, Segments: base.Segments}})
		cur = next
	}
	a, b := NewMem(Options{Threads: 2}), NewMem(Options{Threads: 2})
	for i, n := range names {
		if _, _, err := a.Add(n, models[i], AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ingestSteps(t, b, names, models, 4)
	for _, s := range []*Store{a, b} {
		deepest, deltas := 0, 0
		rooted := 0 // deltas of a generation past the limit against gen00
		if err := s.kv.view(func(tx tx) error {
			return tx.scan(bUnits, nil, func(k, v []byte) error {
				u, err := parseUnit(v)
				if err != nil {
					return err
				}
				if u.Kind == KindDelta {
					deltas++
					deepest = max(deepest, int(u.Depth))
					if b, err := parseUnit(tx.get(bUnits, u.Base[:])); err == nil && u.Owner == names[maxChain+1] && b.Owner == names[0] {
						rooted++
					}
				}
				return nil
			})
		}); err != nil {
			t.Fatal(err)
		}
		if deepest != maxChain {
			t.Fatalf("deepest delta chain %d (%d deltas), want %d: the limit was not reached or not kept", deepest, deltas, maxChain)
		}
		if rooted == 0 {
			t.Fatalf("no delta of %s is coded against the root of its chain (%s)", names[maxChain+1], names[0])
		}
		checkDepths(t, s)
		for i, n := range names {
			restore(t, s, n, fileBytes(t, models[i]))
		}
	}
	da, db := dumpIndex(t, a), dumpIndex(t, b)
	if fmt.Sprint(da) != fmt.Sprint(db) {
		t.Fatal("Add and the ingest steps made different indexes for the lineage")
	}
}
