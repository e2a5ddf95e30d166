package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkNode checks that every node with parts has their bytes and
// the bits per value of its bytes and values, and returns whether a
// block root under it holds other tensors too.
func checkNode(t *testing.T, p *programNode, path string) (shared bool) {
	t.Helper()
	path += "/" + p.Op
	var sum int64
	for i := range p.Nodes {
		c := &p.Nodes[i]
		if checkNode(t, c, path) {
			shared = true
		}
		sum += c.Bytes
	}
	if len(p.Nodes) > 0 && sum != p.Bytes {
		t.Fatalf("%s: %d bytes, its parts %d", path, p.Bytes, sum)
	}
	if p.Values > 0 && math.Abs(p.Bits-8*float64(p.Bytes)/float64(p.Values)) > 1e-9 {
		t.Fatalf("%s: %g bits per value for %d bytes of %d values", path, p.Bits, p.Bytes, p.Values)
	}
	return shared || len(p.Also) > 0
}

// inspectPrograms compresses in, runs inspect -programs -json on the
// archive and checks the programs: every node's parts add up to it, a
// tensor whose blocks are its own has a program of exactly its coded
// bytes (the ARCHIVE column), and the programs of a file add up to its
// coded bytes. It returns the text output.
func inspectPrograms(t *testing.T, in string, compress ...string) string {
	t.Helper()
	arc := filepath.Join(t.TempDir(), filepath.Base(in)+".nzip")
	if code, _, errs := nzip(t, append(append([]string{"compress", "-q", "-o", arc}, compress...), in)...); code != 0 {
		t.Fatalf("compress %s: %s", in, errs)
	}
	code, out, errs := nzip(t, "inspect", "-programs", "-json", arc)
	if code != 0 {
		t.Fatalf("inspect -programs -json: %s", errs)
	}
	var rep inspectReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	for _, f := range rep.Files {
		var total int64
		own := 0
		for _, tn := range f.Tensors {
			p := tn.Program
			if p == nil {
				continue
			}
			total += p.Bytes
			if !checkNode(t, p, tn.Name) && !p.Shared {
				own++
				if float64(p.Bytes) != tn.Compressed {
					t.Fatalf("%s: program of %d bytes, coded in %g", tn.Name, p.Bytes, tn.Compressed)
				}
			}
		}
		if p := f.OtherProgram; p != nil {
			checkNode(t, p, "other")
			total += p.Bytes
		}
		if total != f.Compressed {
			t.Fatalf("%s: programs of %d bytes, the file's coded bytes %d", f.Name, total, f.Compressed)
		}
		if own == 0 && len(f.Tensors) > 0 {
			t.Fatalf("%s: no tensor with blocks of its own", f.Name)
		}
	}
	code, text, errs := nzip(t, "inspect", "-programs", arc)
	if code != 0 || !strings.Contains(text, "BITS/VALUE") || !strings.Contains(text, "  total") {
		t.Fatalf("inspect -programs: %s %s", errs, text)
	}
	return text
}

// TestInspectPrograms: inspect -programs on a small model (always) and
// on real quantised GGUF and BF16 files of the corpus (skipped without
// it); see inspectPrograms for what is checked.
func TestInspectPrograms(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.safetensors")
	writeSafetensors(t, in, 5000)
	text := inspectPrograms(t, in)
	for _, want := range []string{"float fields BF16", "exponent", "mantissa bits"} {
		if !strings.Contains(text, want) {
			t.Fatalf("no %q in %s", want, text)
		}
	}
	if code, _, errs := nzip(t, "inspect", "-programs", in); code == 0 || !strings.Contains(errs, "not an archive") {
		t.Fatalf("inspect -programs of a checkpoint: %d %s", code, errs)
	}
	shared := filepath.Join("..", "..", "..", "shared", "models")
	for _, c := range []struct {
		rel  string
		want []string
		opts []string
	}{
		{"quantized/real-f32.Q4_K.gguf", []string{"records Q4_K", "d.hi", "scales", "mins", "qs"}, nil},
		{"quantized/real-f32.mixed.gguf", []string{"records"}, nil},
		{"quantized/stories260K-base.Q6_K.gguf", []string{"records"}, nil},
		{"quantized/stories260K-base.Q4_0.gguf", []string{"records"}, []string{"-best"}},
		{"bench/real-bf16.safetensors", []string{"float fields BF16", "exponent"}, nil},
	} {
		t.Run(filepath.Base(c.rel)+strings.Join(c.opts, ""), func(t *testing.T) {
			p := filepath.Join(shared, c.rel)
			if _, err := os.Stat(p); err != nil {
				t.Skipf("corpus not here (%v)", err)
			}
			text := inspectPrograms(t, p, c.opts...)
			for _, want := range c.want {
				if !strings.Contains(text, want) {
					t.Fatalf("no %q in the programs", want)
				}
			}
		})
	}
}
