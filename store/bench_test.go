//go:build !js

package store

import (
	"io"
	"path"
	"testing"
)

// BenchmarkAddHub adds the hub's twelve files to a fresh directory store.
func BenchmarkAddHub(b *testing.B) {
	hub := shared(b, "hub/stories260K")
	var ins [][]Input
	var raw int64
	for _, f := range hubFiles {
		in := inputs(b, path.Join(hub, f))
		ins = append(ins, in)
		for _, x := range in {
			raw += x.Size
		}
	}
	b.SetBytes(raw)
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		Init(dir)
		s, err := Open(dir, Options{Threads: 2})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for i, f := range hubFiles {
			if _, _, err := s.Add(f, ins[i], AddOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		s.Close()
	}
}

// BenchmarkGetHub restores the hub's twelve files from a directory store.
func BenchmarkGetHub(b *testing.B) {
	hub := shared(b, "hub/stories260K")
	dir := b.TempDir()
	Init(dir)
	s, err := Open(dir, Options{Threads: 2})
	if err != nil {
		b.Fatal(err)
	}
	var raw int64
	for _, f := range hubFiles {
		m, _, err := s.Add(f, inputs(b, path.Join(hub, f)), AddOptions{})
		if err != nil {
			b.Fatal(err)
		}
		raw += m.Raw
	}
	s.Close()
	s, err = Open(dir, Options{Threads: 2, ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
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
