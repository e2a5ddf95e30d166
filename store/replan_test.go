package store

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path"
	"testing"

	"neuralzip/codec"
	"neuralzip/dtype"
)

// addBatchOrder adds the hub's models in the named order of hubOrders to
// s in one batch and returns their bytes by name.
func addBatchOrder(t *testing.T, s *Store, hub string, names []string) map[string][][]byte {
	t.Helper()
	var bms []BatchModel
	want := map[string][][]byte{}
	for _, n := range names {
		ins := inputs(t, path.Join(hub, n))
		bms = append(bms, BatchModel{Name: n, Files: ins})
		want[n] = fileBytes(t, ins)
	}
	if _, _, err := s.AddBatch(bms, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	return want
}

// TestRepackOrders: repack of the hub built in every order (F32 first,
// sorted, 16-bit first; in one batch, and 16-bit first one model at a
// time too) restores every model byte for byte, verifies,
// never grows the payload, and brings the 16-bit-first store within 2 %
// of the F32-first one; a second repack finds nothing to do.
func TestRepackOrders(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	orders := hubOrders()
	after := map[string]int64{}
	for _, o := range []string{"hub", "sorted", "16-bit-first", "16-bit-first one by one"} {
		s, _ := tempStore(t)
		var want map[string][][]byte
		if o == "16-bit-first one by one" {
			want = addFiles(t, s, hub, orders["16-bit-first"])
		} else {
			want = addBatchOrder(t, s, hub, orders[o])
		}
		rs, err := s.Repack()
		if err != nil {
			t.Fatalf("%s: %v", o, err)
		}
		t.Logf("%s: %+v", o, rs)
		if rs.After > rs.Before {
			t.Fatalf("%s: repack grew the payload: %d → %d", o, rs.Before, rs.After)
		}
		for n, w := range want {
			restore(t, s, n, w)
		}
		verifyStore(t, s)
		after[o] = rs.After
		again, err := s.Repack()
		if err != nil {
			t.Fatal(err)
		}
		if again.Changed != 0 || again.After != rs.After {
			t.Fatalf("%s: a second repack changed %d units (%d → %d bytes)", o, again.Changed, again.Before, again.After)
		}
	}
	for _, o := range []string{"sorted", "16-bit-first", "16-bit-first one by one"} {
		if 100*after[o] > 102*after["hub"] {
			t.Fatalf("%s order after repack: %d payload bytes, F32 first %d (over 2 %%)", o, after[o], after["hub"])
		}
	}
}

// tensorInput is a one-tensor model of type t holding raw.
func tensorInput(raw []byte, t dtype.DType) []Input {
	return []Input{{Name: "t.bin", R: bytesReader(raw), Size: int64(len(raw)), Format: "raw",
		Segments: []codec.Segment{{Offset: 0, Length: int64(len(raw)), Name: "t", DType: t, Shape: []int64{int64(len(raw) / t.Size())}}}}}
}

// TestRepackMovesDependants: a BF16 tensor y added before its F32
// original x1 (itself a delta of x0), with a lineage of three BF16
// fine-tunes of y coded as deltas of one another below it: the add of x1
// cannot recast y (its lineage would end 5 deep). Repack makes y the cast
// and codes the lineage's deepest members again (against y or alone), so
// no delta is deeper than maxChain; every model restores, the store
// verifies, the payload shrinks, and every depth is its base's plus one.
func TestRepackMovesDependants(t *testing.T) {
	const n = 1 << 14
	rng := rand.New(rand.NewPCG(3, 4))
	x0 := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(x0[4*i:], math.Float32bits(float32(rng.NormFloat64()*0.02)))
	}
	nudge := func(b []byte, eps float64) []byte {
		out := bytes.Clone(b)
		for i := 0; i < len(out); i += 4 {
			v := math.Float32frombits(binary.LittleEndian.Uint32(out[i:]))
			binary.LittleEndian.PutUint32(out[i:], math.Float32bits(v*float32(1+rng.NormFloat64()*eps)))
		}
		return out
	}
	x1 := nudge(x0, 1e-3)
	models := map[string][]Input{"y": tensorInput(castF32(nil, x1, dtype.BF16), dtype.BF16)}
	order := []string{"y"}
	cur := x1
	for _, z := range []string{"z1", "z2", "z3"} {
		cur = nudge(cur, 2e-2)
		models[z] = tensorInput(castF32(nil, cur, dtype.BF16), dtype.BF16)
		order = append(order, z)
	}
	models["x0"], models["x1"] = tensorInput(x0, dtype.F32), tensorInput(x1, dtype.F32)
	order = append(order, "x0", "x1")
	s, _ := tempStore(t)
	for _, m := range order {
		if _, _, err := s.Add(m, models[m], AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kind := func(name string) unit {
		mf, err := s.Model(name)
		if err != nil {
			t.Fatal(err)
		}
		u, err := s.unitRec(mf.Files[0].Units[0])
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	if u := kind("y"); u.Kind == KindCast {
		t.Fatal("the add recast y: the test does not test repack's moves")
	}
	rs, err := s.Repack()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rs)
	for _, m := range order {
		u := kind(m)
		t.Logf("%s: %s at depth %d, %d bytes", m, KindName(u.Kind), u.Depth, u.Len)
		if u.Kind == KindDelta && u.Depth > maxChain {
			t.Fatalf("%s: a delta at depth %d", m, u.Depth)
		}
	}
	if u := kind("y"); u.Kind != KindCast || rs.Recast != 1 || rs.Moved == 0 || rs.After > rs.Before {
		t.Fatalf("y is %s; %+v", KindName(u.Kind), rs)
	}
	checkDepths(t, s)
	for _, m := range order {
		restore(t, s, m, fileBytes(t, models[m]))
	}
	verifyStore(t, s)
}
