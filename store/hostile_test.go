//go:build !js

package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hostileStore is a directory store holding three hub models.
func hostileStore(t *testing.T) (string, map[string][][]byte) {
	hub := shared(t, "hub/stories260K")
	dir := t.TempDir()
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := addFiles(t, s, hub, []string{"base/model.f32.safetensors", "ft-fortunes-lora/model.f32.safetensors", "base/model.bf16.safetensors"})
	s.Close()
	return dir, want
}

// TestHostileChunk flips bytes in chunk files: every model that needs a
// flipped byte fails get and verify with its name; none restores to other
// bytes.
func TestHostileChunk(t *testing.T) {
	dir, want := hostileStore(t)
	for _, p := range filesUnder(filepath.Join(dir, "packs")) {
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []int{0, len(orig) / 3, len(orig) - 1} {
			bad := bytes.Clone(orig)
			bad[at] ^= 0x10
			os.Chmod(p, 0o644)
			if err := os.WriteFile(p, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(dir, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			damaged, err := s.Verify()
			if err != nil {
				t.Fatal(err)
			}
			if len(damaged) == 0 {
				t.Fatalf("%s byte %d flipped: verify finds nothing", filepath.Base(p), at)
			}
			for _, e := range damaged {
				if !errors.Is(e, ErrChunkDamaged) || !strings.Contains(e.Error(), "model \"") {
					t.Fatalf("verify: %v: not ErrChunkDamaged naming the model", e)
				}
			}
			for name, w := range want {
				m, err := s.Model(name)
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				err = s.WriteFile(m, 0, &buf)
				if err == nil && !bytes.Equal(buf.Bytes(), w[0]) {
					t.Fatalf("%s restores to other bytes with exit 0", name)
				}
				if err != nil && !strings.Contains(err.Error(), name) {
					t.Fatalf("error does not name the model: %v", err)
				}
			}
			s.Close()
		}
		os.WriteFile(p, orig, 0o644)
	}
}

// TestHostileIndex truncates the index and flips bytes in it: Open,
// Verify or get fail with an error (never a panic) or restore exactly.
func TestHostileIndex(t *testing.T) {
	dir, want := hostileStore(t)
	idx := filepath.Join(dir, indexName)
	orig, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	try := func(what string, b []byte) {
		if err := os.WriteFile(idx, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			if !errors.Is(err, ErrIndexDamaged) {
				t.Fatalf("%s: open: %v is not ErrIndexDamaged", what, err)
			}
			return
		}
		defer s.Close()
		s.Verify()
		for name, w := range want {
			m, err := s.Model(name)
			if err != nil {
				continue
			}
			for fi := range m.Files {
				var buf bytes.Buffer
				if err := s.WriteFile(m, fi, &buf); err == nil && !bytes.Equal(buf.Bytes(), w[fi]) {
					t.Fatalf("%s: %s restores to other bytes without an error", what, name)
				}
			}
		}
	}
	for _, n := range []int{0, 100, 4096, len(orig) / 2, len(orig) - 1} {
		try("truncated to "+itoa(n), orig[:n])
	}
	for at := 0; at < len(orig); at += len(orig)/48 + 1 {
		b := bytes.Clone(orig)
		b[at] ^= 0xff
		try("byte "+itoa(at)+" flipped", b)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
