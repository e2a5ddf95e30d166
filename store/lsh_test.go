package store

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"neuralzip/dtype"
	"neuralzip/store/storetest"
)

// TestWalkBolt: bbolt's walks meet the keys the in-memory index's do.
func TestWalkBolt(t *testing.T) {
	needDir(t)
	s, _ := tempStore(t)
	m := newMemKV()
	rng := rand.New(rand.NewPCG(5, 6))
	for range 14 {
		k := []byte(fmt.Sprintf("%c%c", 'a'+rng.IntN(4), 'a'+rng.IntN(4)))
		v := []byte{byte(rng.IntN(256))}
		for _, kv := range []kv{s.kv, m} {
			if err := kv.update(func(t tx) error { return t.put(bFP, k, v) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	// the directory store's own meta key, in both
	m.update(func(t tx) error { return t.put(bFP, lshMeta, []byte{lshVersion}) })
	m.update(setFormat(latestVersion))
	var got, want string
	s.kv.view(func(t tx) error { got = walks(t); return nil })
	m.view(func(t tx) error { want = walks(t); return nil })
	if got != want {
		t.Fatalf("bbolt\n%s\nmemory\n%s", got, want)
	}
}

// lshEntries checks that the fingerprint index of s holds exactly the
// entries of its fingerprints and returns how many there are.
func lshEntries(t *testing.T, s *Store) int {
	t.Helper()
	want := map[string]bool{}
	got := map[string]bool{}
	err := s.kv.view(func(tx tx) error {
		if !hasLSH(tx) {
			return fmt.Errorf("no index")
		}
		return tx.scan(bFP, nil, func(k, v []byte) error {
			if bytes.Equal(k, formatKey) {
				return nil
			}
			if k[0] == 0 {
				if !bytes.Equal(k, lshMeta) {
					got[string(k)] = true
				}
				return nil
			}
			fp, err := parseFingerprint(v)
			if err != nil {
				return err
			}
			fam := k[:len(k)-32]
			for i, c := range lshCodes(fp) {
				want[string(lshKey(fam, i, c, Hash(k[len(k)-32:])))] = true
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d index entries, want %d", len(got), len(want))
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("index entry %x missing", k)
		}
	}
	return len(got)
}

// TestLSHIndex: the fingerprint index follows the fingerprints through
// adds, rm and gc; a store without it (made before it) opens to read,
// restores its models and plans exhaustively, and gets the same index
// when opened for writing.
func TestLSHIndex(t *testing.T) {
	needDir(t)
	hub := shared(t, "hub/stories260K")
	s, dir := tempStore(t)
	names := hubNames()
	want := addFiles(t, s, hub, names)
	n := lshEntries(t, s)
	if n == 0 {
		t.Fatal("no index entries")
	}
	var kept []string
	for _, name := range names {
		if name == "ft-continued/model.f32.safetensors" || name == "ft-continued/model.bf16.safetensors" {
			if err := s.Remove(name); err != nil {
				t.Fatal(err)
			}
		} else {
			kept = append(kept, name)
		}
	}
	names = kept
	if _, err := s.GC(); err != nil {
		t.Fatal(err)
	}
	if m := lshEntries(t, s); m >= n {
		t.Fatalf("%d index entries after rm and gc, %d before", m, n)
	}
	before := dumpIndex(t, s)
	// as a store made before the index
	if err := s.kv.update(func(t tx) error {
		var ks [][]byte
		t.scan(bFP, []byte{0}, func(k, _ []byte) error { ks = append(ks, bytes.Clone(k)); return nil })
		for _, k := range ks {
			if err := t.del(bFP, k); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	r.kv.view(func(t2 tx) error {
		if hasLSH(t2) {
			t.Error("index still there")
		}
		cs, err := r.candidates(t2)(fpTypeOf(t, r), 4096, nil)
		if err != nil || len(cs) == 0 {
			t.Errorf("exhaustive search of a store without the index: %d candidates, %v", len(cs), err)
		}
		return nil
	})
	for _, name := range names {
		restore(t, r, name, want[name])
	}
	r.Close()
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if after := dumpIndex(t, w); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatal("the index built on opening differs from the one the adds kept")
	}
	if bad, err := w.Verify(); err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
}

// fpTypeOf is the type of the stored units of 4096 values (the hub's
// attention matrices).
func fpTypeOf(t *testing.T, s *Store) (ty dtype.DType) {
	s.kv.view(func(tx tx) error {
		return tx.scan(bUnits, nil, func(_, v []byte) error {
			if u, err := parseUnit(v); err == nil && fingerprintable(u.DType) && u.RawLen == 4096*int64(u.DType.Size()) {
				ty = u.DType
			}
			return nil
		})
	})
	return ty
}

// scaleHub is the real F32 and BF16 safetensors files of the hub and
// storetest's hub of them.
func scaleHub(t testing.TB) ([]string, [][]Input, *storetest.Hub) {
	hub := shared(t, "hub/stories260K")
	var names []string
	var models [][]Input
	var src []storetest.File
	for _, ty := range []string{"f32", "bf16"} {
		for _, d := range []string{"base", "ft-fortunes-full", "ft-fortunes-lora", "ft-frozen-embed", "ft-continued"} {
			name := d + "/model." + ty + ".safetensors"
			ins := inputs(t, filepath.Join(hub, name))
			names = append(names, name)
			models = append(models, ins)
			src = append(src, storetest.File{Name: name, Data: fileBytes(t, ins)[0], Segs: ins[0].Segments})
		}
	}
	return names, models, storetest.NewHub(src)
}

// TestScaleHubBytes: on a hub of the 10 real files and 60 synthetic
// fine-tunes (storetest), the bases the index finds give a store within
// 1 % of the one the exhaustive search gives (`nzlab store-scale` adds
// 1,000 and times it), and every model restores.
func TestScaleHubBytes(t *testing.T) {
	names, models, h := scaleHub(t)
	n := 60
	if testing.Short() {
		n = 24
	}
	for range n {
		m, err := h.Next()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m.Name)
		models = append(models, []Input{{Name: "model.safetensors", R: bytes.NewReader(m.Data), Size: int64(len(m.Data)), Format: "safetensors", Segments: m.Segs}})
	}
	var stored [2]int64
	var deltas [2]int
	for i, exh := range []bool{false, true} {
		s := NewMem(Options{Threads: 2, Exhaustive: exh})
		for k, name := range names {
			_, st, err := s.Add(name, models[k], AddOptions{})
			if err != nil {
				t.Fatal(err)
			}
			deltas[i] += st.Deltas
		}
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		stored[i] = st.Stored
		if !exh {
			lshEntries(t, s)
			for k, name := range names[len(names)-5:] {
				restore(t, s, name, fileBytes(t, models[len(names)-5+k]))
			}
		}
	}
	ratio := float64(stored[0]) / float64(stored[1])
	t.Logf("%d models: indexed %d bytes (%d deltas), exhaustive %d (%d deltas): %.4f×", len(names), stored[0], deltas[0], stored[1], deltas[1], ratio)
	if ratio > 1.01 || ratio < 0.99 {
		t.Fatalf("indexed search %.4f× the exhaustive one's bytes", ratio)
	}
}

// TestLSHCodesTwin: lshCodes (signs as ±1 products, no branch) gives the
// codes of the branching sum the index's keys were made with, bit for bit.
func TestLSHCodesTwin(t *testing.T) {
	ref := func(fp fingerprint) (out [lshTrees]uint64) {
		var norm float64
		for _, x := range fp {
			norm += float64(float64(x) * float64(x))
		}
		norm = math.Sqrt(norm)
		for tr := range out {
			var q [lshDims]uint64
			for d := range q {
				w := &lshVecs[tr*lshDims+d]
				var p float64
				for i, x := range fp {
					if w[i>>6]>>(i&63)&1 != 0 {
						p += float64(x)
					} else {
						p -= float64(x)
					}
				}
				if norm > 0 {
					p /= norm
				}
				f := math.Floor((p + 8) * (1 << lshScale))
				q[d] = uint64(min(max(f, 0), 1<<16-1))
			}
			var z uint64
			for b := 15; b >= 0; b-- {
				for d := range q {
					z = z<<1 | q[d]>>b&1
				}
			}
			out[tr] = z
		}
		return out
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for n := range 2000 {
		fp := make(fingerprint, []int{fpSamples, 1, 7, 100, fpSamples}[n%5])
		for i := range fp {
			fp[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)-6)))
			if n%7 == 0 {
				fp[i] = float32(int(fp[i]*4)) / 4 // ties and zeros
			}
		}
		if lshCodes(fp) != ref(fp) {
			t.Fatalf("fingerprint %d: codes differ", n)
		}
	}
}

// TestZOrder: zorder gives the codes of the loop that appends the four
// values' bits one at a time, highest first.
func TestZOrder(t *testing.T) {
	loop := func(q [lshDims]uint64) (z uint64) {
		for b := 15; b >= 0; b-- {
			for d := range q {
				z = z<<1 | q[d]>>b&1
			}
		}
		return z
	}
	r := rand.New(rand.NewPCG(5, 6))
	qs := [][lshDims]uint64{{}, {0xffff, 0xffff, 0xffff, 0xffff}, {1, 0, 0, 0}, {0, 0, 0, 0x8000}}
	for range 10000 {
		qs = append(qs, [lshDims]uint64{r.Uint64N(1 << 16), r.Uint64N(1 << 16), r.Uint64N(1 << 16), r.Uint64N(1 << 16)})
	}
	for _, q := range qs {
		if got, want := zorder(q), loop(q); got != want {
			t.Fatalf("zorder(%x) = %x, want %x", q, got, want)
		}
	}
}

// TestLSHCodesSums: lshCodes, whose projections are summed side by side,
// gives the codes of the sums taken one projection at a time (the codes
// are in the index: other bits would be a stale index without a new
// lshVersion).
func TestLSHCodesSums(t *testing.T) {
	one := func(fp fingerprint) (out [lshTrees]uint64) {
		var norm float64
		for _, x := range fp {
			norm += float64(float64(x) * float64(x))
		}
		norm = math.Sqrt(norm)
		for tr := range out {
			var q [lshDims]uint64
			for d := range q {
				w := &lshSigns[tr*lshDims+d]
				var p float64
				for i, x := range fp {
					p += w[i] * float64(x)
				}
				if norm > 0 {
					p /= norm
				}
				f := math.Floor((p + 8) * (1 << lshScale))
				q[d] = uint64(min(max(f, 0), 1<<16-1))
			}
			var z uint64
			for b := 15; b >= 0; b-- {
				for d := range q {
					z = z<<1 | q[d]>>b&1
				}
			}
			out[tr] = z
		}
		return out
	}
	r := rand.New(rand.NewPCG(3, 4))
	for k := range 500 {
		fp := make(fingerprint, []int{fpSamples, 1, 17, 0}[k%4])
		scale := math.Pow(10, float64(r.IntN(40)-20))
		for i := range fp {
			fp[i] = float32(r.NormFloat64() * scale)
		}
		if got, want := lshCodes(fp), one(fp); got != want {
			t.Fatalf("fingerprint %d (%d samples): codes %x, one sum at a time %x", k, len(fp), got, want)
		}
	}
}
