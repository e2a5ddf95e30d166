package store

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"testing"
)

// ingestSteps adds models (in order) through the ingest steps, run here
// one after another, as cmd/nzip-beam runs them on a pipeline's workers.
func ingestSteps(t *testing.T, s *Store, names []string, models [][]Input, batch int) {
	t.Helper()
	srcs := map[string]Input{}
	var units []UnitInfo
	files := make([][]FileEntry, len(models))
	for mi, ins := range models {
		for fi, in := range ins {
			src := fmt.Sprintf("%d/%d", mi, fi)
			srcs[src] = in
			fe := FileEntry{Name: in.Name, Size: in.Size, Format: in.Format}
			fh := sha256.New()
			for ui, sp := range Spans(in.Size, in.Segments) {
				raw := make([]byte, sp.N)
				if _, err := in.R.ReadAt(raw, sp.Off); err != nil {
					t.Fatal(err)
				}
				fh.Write(raw)
				h, fp, casts := Describe(raw, sp.DType)
				units = append(units, UnitInfo{Model: mi, File: fi, Index: ui, Src: src, Span: sp, Hash: h, FP: fp, Casts: casts})
				fe.Units = append(fe.Units, h)
			}
			copy(fe.SHA256[:], fh.Sum(nil))
			files[mi] = append(files[mi], fe)
		}
	}
	read := func(u UnitInfo) []byte {
		b := make([]byte, u.N)
		if _, err := srcs[u.Src].R.ReadAt(b, u.Off); err != nil {
			t.Fatal(err)
		}
		return b
	}
	// the first of each hash, unless stored
	first := map[Hash]UnitInfo{}
	for _, u := range units {
		if f, ok := first[u.Hash]; !ok || u.Before(f) {
			first[u.Hash] = u
		}
	}
	families := map[string][]UnitInfo{}
	var plans []Plan
	for _, u := range first {
		if ok, err := s.Has(u.Hash); err != nil {
			t.Fatal(err)
		} else if ok {
			continue
		}
		if f := u.Family(); f != "" {
			families[f] = append(families[f], u)
		} else {
			plans = append(plans, Plan{Unit: u, Kind: KindNzip})
		}
	}
	for _, us := range families {
		ps, err := s.PlanFamily(us)
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, ps...)
	}
	sort.Slice(plans, func(i, j int) bool { return plans[i].Unit.Before(plans[j].Unit) })
	news := make([][]NewUnit, len(models))
	payloads := make([][][]byte, len(models))
	for _, p := range plans {
		var base []byte
		if p.Kind == KindDelta {
			if p.BaseAt != nil {
				base = read(*p.BaseAt)
			} else {
				var err error
				if base, err = s.UnitBytes(p.Base); err != nil {
					t.Fatal(err)
				}
			}
		}
		nu, payload, err := Code(p, read(p.Unit), base)
		if err != nil {
			t.Fatal(err)
		}
		mi := p.Unit.Model
		news[mi] = append(news[mi], nu)
		payloads[mi] = append(payloads[mi], payload)
	}
	var commits []ModelCommit
	for mi := range models {
		if pack := Pack(news[mi], payloads[mi]); len(pack) > 0 {
			id, err := s.PutPack(pack)
			if err != nil {
				t.Fatal(err)
			}
			for i := range news[mi] {
				if news[mi][i].Kind != KindCast {
					news[mi][i].Pack = id
				}
			}
		}
		commits = append(commits, ModelCommit{Name: names[mi], Files: files[mi], New: news[mi]})
	}
	for len(commits) > 0 {
		n := min(batch, len(commits))
		if skipped, err := s.CommitModels(commits[:n]); err != nil || len(skipped) > 0 {
			t.Fatalf("commit: %v (skipped %v)", err, skipped)
		}
		commits = commits[n:]
	}
}

// sameIndex fails t unless stores a (Add) and b (made by how) hold the
// same index records.
func sameIndex(t *testing.T, a, b *Store, how string) {
	t.Helper()
	da, db := dumpIndex(t, a), dumpIndex(t, b)
	if len(da) != len(db) {
		t.Errorf("index records: Add %d, %s %d", len(da), how, len(db))
	}
	for k, v := range da {
		if db[k] != v {
			t.Errorf("record %s: Add %s, %s %s", k, v, how, db[k])
		}
	}
}

// dumpIndex is every record of the index, for comparing two stores.
func dumpIndex(t *testing.T, s *Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := s.kv.view(func(tx tx) error {
		for _, b := range []string{bModels, bUnits, bFP, bCasts} {
			if err := tx.scan(b, nil, func(k, v []byte) error {
				out[fmt.Sprintf("%s/%x", b, k)] = fmt.Sprintf("%x", v)
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIngestMatchesAdd: the hub's models (every dtype of five fine-tunes of
// one base) added through the ingest steps make the store that Add makes
// adding them one by one: the same index records (units, kinds, bases,
// depths, owners, packs, manifests), the same chunk files; starting from a
// store that holds some of them already (so stored bases, stored casts and
// stored duplicates are met) and committing one model or all at a time;
// in the hub's order and with 16-bit files first (hubOrders: every cast is
// then a recast, made by a later model of the ingest).
func TestIngestMatchesAdd(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	orders := hubOrders()
	for _, tc := range []struct {
		order  string
		pre    int // models added by Add first
		batch  int
		maxDec float64 // the store's decode bound (maxdecode.go)
	}{{"hub", 0, 1, 0}, {"hub", 2, 100, 0}, {"hub", 5, 3, 0}, {"sorted", 0, 100, 0}, {"sorted", 3, 1, 0}, {"16-bit-first", 2, 4, 0},
		{"16-bit-first", 0, 100, 3}, {"sorted", 2, 3, 2}} {
		names := orders[tc.order]
		var models [][]Input
		for _, n := range names {
			models = append(models, inputs(t, path.Join(hub, n)))
		}
		t.Run(fmt.Sprintf("%s-pre%d-batch%d-max%g", tc.order, tc.pre, tc.batch, tc.maxDec), func(t *testing.T) {
			o := InitOptions{MaxDecode: tc.maxDec}
			a, b := newMemWith(Options{Threads: 2}, latestVersion, o), newMemWith(Options{Threads: 2}, latestVersion, o)
			for i, n := range names {
				if _, _, err := a.Add(n, models[i], AddOptions{}); err != nil {
					t.Fatal(err)
				}
				if i < tc.pre {
					if _, _, err := b.Add(n, models[i], AddOptions{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			ingestSteps(t, b, names[tc.pre:], models[tc.pre:], tc.batch)
			sameIndex(t, a, b, "ingest")
			sa, err := a.Stats()
			if err != nil {
				t.Fatal(err)
			}
			sb, err := b.Stats()
			if err != nil {
				t.Fatal(err)
			}
			ja, _ := json.Marshal(sa)
			jb, _ := json.Marshal(sb)
			if string(ja) != string(jb) {
				t.Errorf("stats differ:\nAdd    %s\ningest %s", ja, jb)
			}
			if sa.Units["delta"] == 0 || (sa.Units["cast"] == 0 && tc.maxDec == 0) {
				t.Fatalf("the hub gave no deltas or casts: %v", sa.Units)
			}
			unitsWithin(t, b, tc.maxDec)
			for i, n := range names {
				restore(t, b, n, fileBytes(t, models[i]))
			}
			if bad, err := b.Verify(); err != nil || len(bad) > 0 {
				t.Fatalf("verify: %v %v", bad, err)
			}
			// a second try of the same commits changes nothing
			before := dumpIndex(t, b)
			ms := make([]ModelCommit, 0, len(names))
			for _, n := range names[tc.pre:] {
				m, err := b.Model(n)
				if err != nil {
					t.Fatal(err)
				}
				ms = append(ms, ModelCommit{Name: n, Files: m.Files})
			}
			skipped, err := b.CommitModels(ms)
			if err != nil || !slices.Equal(skipped, names[tc.pre:]) {
				t.Fatalf("second commit: %v, skipped %v", err, skipped)
			}
			if after := dumpIndex(t, b); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatal("a repeated commit changed the index")
			}
		})
	}
}
