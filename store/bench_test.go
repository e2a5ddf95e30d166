//go:build !js

package store

import (
	"io"
	"os"
	"path"
	"testing"
)

// BenchmarkAddHub adds the hub's twelve files to a fresh directory store.
func BenchmarkAddHub(b *testing.B) { benchAddHub(b, false) }

// BenchmarkAddHubBatch adds the hub's twelve files in one AddBatch, as
// nzip store add does.
func BenchmarkAddHubBatch(b *testing.B) { benchAddHub(b, true) }

func benchAddHub(b *testing.B, batch bool) {
	hub := shared(b, "hub/stories260K")
	var bms []BatchModel
	var raw int64
	for _, f := range hubFiles {
		in := inputs(b, path.Join(hub, f))
		bms = append(bms, BatchModel{Name: f, Files: in})
		for _, x := range in {
			raw += x.Size
		}
	}
	b.SetBytes(raw)
	for b.Loop() {
		b.StopTimer()
		s, _ := freshStore(b)
		b.StartTimer()
		if batch {
			if _, _, err := s.AddBatch(bms, AddOptions{}); err != nil {
				b.Fatal(err)
			}
		} else {
			for _, bm := range bms {
				if _, _, err := s.Add(bm.Name, bm.Files, AddOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		}
		s.Close()
	}
}

// hubStore is a directory store holding the hub's twelve files, opened
// read-only (two threads), and their bytes in all.
func hubStore(b *testing.B) (*Store, int64) {
	hub := shared(b, "hub/stories260K")
	s, dir := freshStore(b)
	var err error
	var raw int64
	for _, f := range hubFiles {
		m, _, err := s.Add(f, inputs(b, path.Join(hub, f)), AddOptions{})
		if err != nil {
			b.Fatal(err)
		}
		raw += m.Raw
	}
	s.Close()
	if s, err = Open(dir, Options{Threads: 2, ReadOnly: true}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, raw
}

// BenchmarkGetHub restores the hub's twelve files from a directory store.
func BenchmarkGetHub(b *testing.B) {
	s, raw := hubStore(b)
	b.SetBytes(raw)
	for b.Loop() {
		for _, f := range hubFiles {
			m, err := s.Model(f)
			if err != nil {
				b.Fatal(err)
			}
			for fi := range m.Files {
				if err := s.WriteFile(m, fi, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// BenchmarkVerifyHub verifies a directory store holding the hub's twelve
// files (every model restored and checked, bases included).
func BenchmarkVerifyHub(b *testing.B) {
	s, raw := hubStore(b)
	b.SetBytes(raw)
	for b.Loop() {
		if bad, err := s.Verify(); err != nil || len(bad) > 0 {
			b.Fatal(err, bad)
		}
	}
	b.ReportMetric(float64(s.BytesDecoded())/float64(raw)/float64(b.N), "decoded/restored")
}

// BenchmarkAddLarge adds the model file named by $NZIP_BENCH_FILE (skipped
// without it) to a fresh directory store, as nzip store add does (one
// batch, two threads): docs/store.md's large-model rows in process.
func BenchmarkAddLarge(b *testing.B) {
	in := largeInput(b)
	b.SetBytes(in[0].Size)
	for b.Loop() {
		b.StopTimer()
		s, _ := freshStore(b)
		b.StartTimer()
		if _, _, err := s.AddBatch([]BatchModel{{Name: "m", Files: in}}, AddOptions{}); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkGetLarge restores the model file named by $NZIP_BENCH_FILE
// from a directory store (two threads).
func BenchmarkGetLarge(b *testing.B) {
	in := largeInput(b)
	s, dir := freshStore(b)
	var err error
	if _, _, err := s.AddBatch([]BatchModel{{Name: "m", Files: in}}, AddOptions{}); err != nil {
		b.Fatal(err)
	}
	s.Close()
	if s, err = Open(dir, Options{Threads: 2, ReadOnly: true}); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	m, err := s.Model("m")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(in[0].Size)
	for b.Loop() {
		if err := s.WriteFile(m, 0, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// largeInput is the file named by $NZIP_BENCH_FILE as nzip store add
// hands it to the store: the open file, its layout's segments.
func largeInput(b *testing.B) []Input {
	name := os.Getenv("NZIP_BENCH_FILE")
	if name == "" {
		b.Skip("NZIP_BENCH_FILE not set")
	}
	in := inputs(b, name)
	if len(in) != 1 {
		b.Fatalf("%s: %d files, want one", name, len(in))
	}
	f, err := os.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	in[0].R = f
	return in
}

// freshStore makes an empty directory store and opens it (two threads);
// the caller closes it.
func freshStore(b *testing.B) (*Store, string) {
	dir := b.TempDir()
	if err := Init(dir); err != nil {
		b.Fatal(err)
	}
	s, err := Open(dir, Options{Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	return s, dir
}
