//go:build !js

package store

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestList: List gives every model in name order as Names and Model do,
// with its units' lengths as UnitLens gives them where asked for (and
// only there), in one transaction; a missing unit record is that model's
// Err, not the listing's.
func TestList(t *testing.T) {
	s, _ := tempStore(t)
	for i := range 5 {
		ins := randomModel(uint64(i), 3000+i*1000)
		if i == 4 { // two files
			ins = append(ins, randomModel(9, 5000)[0])
			ins[1].Name = "b.bin"
		}
		if _, _, err := s.Add(fmt.Sprintf("m%d", 4-i), ins, AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	names, err := s.Names()
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.List(nil)
	if err != nil {
		t.Fatal(err)
	}
	some, err := s.List(func(m *Manifest) bool { return m.Name != "m2" })
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(names) || len(some) != len(names) {
		t.Fatalf("%d and %d models listed, want %d", len(all), len(some), len(names))
	}
	for i, l := range all {
		m, err := s.Model(names[i])
		if err != nil {
			t.Fatal(err)
		}
		if l.Name != names[i] || len(l.Files) != len(m.Files) || l.Err != nil || len(l.Lens) != len(m.Files) {
			t.Fatalf("model %d: %q, %d files, %v; want %q, %d", i, l.Name, len(l.Files), l.Err, names[i], len(m.Files))
		}
		for fi, f := range m.Files {
			want, err := s.UnitLens(f.Units)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(l.Lens[fi], want) || !slices.Equal(l.Files[fi].Units, f.Units) {
				t.Errorf("%s file %d: lens %v, want %v", l.Name, fi, l.Lens[fi], want)
			}
		}
		if got := some[i].Lens != nil; got != (l.Name != "m2") {
			t.Errorf("%s: lens read %v", l.Name, got)
		}
	}

	// a unit record gone: that model's Err
	h := all[0].Files[0].Units[0]
	if err := s.kv.update(func(t tx) error { return t.del(bUnits, h[:]) }); err != nil {
		t.Fatal(err)
	}
	all, err = s.List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(all[0].Err, ErrIndexDamaged) || all[0].Lens != nil || all[1].Err != nil {
		t.Errorf("a missing unit: %v, %v", all[0].Err, all[1].Err)
	}
}
