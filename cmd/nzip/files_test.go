package main

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dirFiles maps the names in dir (temporary and backup files included)
// to their contents.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}

// failRenameAt makes the n-th call of renameFile (from 1) fail, for the
// rest of the test.
func failRenameAt(t *testing.T, n int) {
	calls := 0
	renameFile = func(from, to string) error {
		calls++
		if calls == n {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: errors.New("injected failure")}
		}
		return os.Rename(from, to)
	}
	t.Cleanup(func() { renameFile = os.Rename })
}

// commitAll renames every file into place, or, when a rename fails
// part-way, leaves the directory as it was: files it would have replaced
// whole under their names, no new file, no temporary or backup file;
// also where the file system has no hard links (the old files are then
// renamed away and back).
func TestCommitAll(t *testing.T) {
	old := map[string]string{"a.bin": "old a", "b.bin": "old b"}
	names := []string{"a.bin", "b.bin", "c.bin"}
	write := func(t *testing.T, dir string) []*atomicFile {
		var outs []*atomicFile
		for _, n := range names {
			w, err := createOutput(filepath.Join(dir, n), true, nil, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			w.WriteString("new " + n)
			if err := w.finish(); err != nil {
				t.Fatal(err)
			}
			outs = append(outs, w)
		}
		return outs
	}
	for _, links := range []bool{true, false} {
		for fail := 0; fail <= len(names); fail++ {
			t.Run("", func(t *testing.T) {
				if !links {
					linkFile = func(string, string) error { return errors.New("no links here") }
					t.Cleanup(func() { linkFile = os.Link })
				}
				dir := t.TempDir()
				for n, c := range old {
					os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644)
				}
				if fail > 0 {
					failRenameAt(t, fail)
				}
				outs := write(t, dir)
				err := commitAll(outs)
				got := dirFiles(t, dir)
				want := old
				if fail == 0 {
					if err != nil {
						t.Fatal(err)
					}
					want = map[string]string{}
					for _, n := range names {
						want[n] = "new " + n
					}
				} else if err == nil || !strings.Contains(err.Error(), "injected failure") {
					t.Fatalf("links %v, rename %d failing: err %v", links, fail, err)
				}
				if len(got) != len(want) {
					t.Fatalf("links %v, rename %d failing: directory holds %v, want %v", links, fail, got, want)
				}
				for n, c := range want {
					if got[n] != c {
						t.Fatalf("links %v, rename %d failing: %s holds %q, want %q", links, fail, n, got[n], c)
					}
				}
				for _, w := range outs {
					if !w.done {
						t.Fatalf("%s not done", w.Name())
					}
					w.Abort() // a no-op now: must not remove what was renamed
				}
				if g := dirFiles(t, dir); len(g) != len(got) {
					t.Fatalf("Abort after commitAll removed files: %v", g)
				}
			})
		}
	}
}

// A multi-file archive decompresses all or none: with -f over an earlier
// restore, a damaged archive or a failed rename leaves the files there as
// they were; a whole one replaces them all.
func TestDecompressMultiFileAllOrNone(t *testing.T) {
	dir := t.TempDir()
	s1 := writeSafetensors(t, filepath.Join(dir, "model-00001-of-00002.safetensors"), 3000)
	s2 := writeSafetensors(t, filepath.Join(dir, "model-00002-of-00002.safetensors"), 5000)
	idx := `{"metadata":{"total_size":1},"weight_map":{"a.weight":"model-00001-of-00002.safetensors","b.weight":"model-00002-of-00002.safetensors"}}`
	ip := filepath.Join(dir, "model.safetensors.index.json")
	os.WriteFile(ip, []byte(idx), 0o644)
	if code, _, errs := nzip(t, "compress", "-q", ip); code != 0 {
		t.Fatalf("compress: %s", errs)
	}
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	names := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json"}
	before := map[string]string{}
	for _, n := range names[:2] {
		before[n] = "an earlier " + n
		os.WriteFile(filepath.Join(out, n), []byte(before[n]), 0o644)
	}
	check := func(want map[string]string) {
		t.Helper()
		got := dirFiles(t, out)
		if len(got) != len(want) {
			t.Fatalf("output holds %v, want %d files", slices.Sorted(maps.Keys(got)), len(want))
		}
		for n, c := range want {
			if got[n] != c {
				t.Fatalf("%s: %d bytes, not the %d expected", n, len(got[n]), len(c))
			}
		}
	}
	// without -f: refused before anything is written
	if code, _, errs := nzip(t, "decompress", "-q", "-o", out, ip+".nzip"); code != 1 || !strings.Contains(errs, "already exists") {
		t.Fatalf("decompress over existing files without -f: %d %s", code, errs)
	}
	check(before)
	// the archive damaged inside its second shard's data
	b, _ := os.ReadFile(ip + ".nzip")
	bad := append([]byte(nil), b...)
	for i := len(bad) / 2; i < len(bad)/2+64; i++ {
		bad[i] ^= 0x55
	}
	badPath := filepath.Join(dir, "bad.nzip")
	os.WriteFile(badPath, bad, 0o644)
	if code, _, errs := nzip(t, "decompress", "-q", "-f", "-o", out, badPath); code != 1 || !strings.Contains(errs, "model-00002") {
		t.Fatalf("decompress of a damaged archive (the second shard): %d %s", code, errs)
	}
	check(before)
	// the last rename fails: the two already renamed are put back
	failRenameAt(t, 3)
	if code, _, errs := nzip(t, "decompress", "-q", "-f", "-o", out, ip+".nzip"); code != 1 || !strings.Contains(errs, "injected failure") {
		t.Fatalf("decompress with a failing rename: %d %s", code, errs)
	}
	check(before)
	renameFile = os.Rename
	if code, _, errs := nzip(t, "decompress", "-q", "-f", "-o", out, ip+".nzip"); code != 0 {
		t.Fatalf("decompress -f: %d %s", code, errs)
	}
	check(map[string]string{names[0]: string(s1), names[1]: string(s2), names[2]: idx})
}
