package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/codec"
)

// Every setup × every real model, bit-exact: setups built from different
// sources (one dtype or several, one table, small chunks) code every file
// of the corpus (all loaders: safetensors, GGUF, PyTorch, ONNX, TFLite,
// TF.js, rwkv) and the bench corpora, with the setup embedded, external, and
// forced on every block (so that blocks whose exponents the setup never saw
// go through the escape path), and every file comes back byte for byte.
func TestSetupMatrix(t *testing.T) {
	orig := sharedOriginal(t)
	shared := filepath.Dir(filepath.Dir(orig))
	bench := filepath.Join(shared, "models", "bench")
	traj := filepath.Join(shared, "trajectories", "tinygpt-fortunes")
	dir := t.TempDir()

	type setupCase struct {
		name  string
		build []string // setup build arguments (flags then files)
	}
	setups := []setupCase{
		{"bf16-bench", []string{filepath.Join(bench, "real-bf16.safetensors")}},
		{"mixed", []string{filepath.Join(orig, "stories260K.f32.safetensors"), filepath.Join(orig, "movenet-thunder", "movenet-thunder.json"), filepath.Join(traj, "step_000000.bf16.safetensors")}},
		{"f16-one-table", []string{"-k", "1", "-max-k", "1", filepath.Join(bench, "real-f16.safetensors")}},
		{"f32-4ki", []string{"-chunk", "4096", filepath.Join(bench, "real-f32.safetensors")}},
	}
	var models []string
	for _, c := range corpus {
		models = append(models, filepath.Join(orig, c.path))
	}
	for _, n := range []string{"real-bf16", "real-f16", "real-f16-native", "real-f32"} {
		models = append(models, filepath.Join(bench, n+".safetensors"))
	}
	models = append(models, filepath.Join(traj, "step_001000.bf16.safetensors"))
	for _, p := range models {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("corpus file missing (%v): skipping the setup matrix", err)
		}
	}

	for _, sc := range setups {
		sp := filepath.Join(dir, sc.name+".nzsetup")
		buildSetup(t, sp, sc.build...)
		modes := [][]string{
			{"-setup", sp},
			{"-setup", sp, "-setup-external"},
			{"-setup", sp, "-setup-threshold", "1e9"},
		}
		for mi, mode := range modes {
			// every mode on the small models, one mode each (rotating) on
			// the large bench files to bound the test's time
			for i, p := range models {
				if strings.Contains(p, string(filepath.Separator)+"bench"+string(filepath.Separator)) && i%len(modes) != mi {
					continue
				}
				name := sc.name + "/" + []string{"embedded", "external", "forced"}[mi] + "/" + filepath.Base(p)
				t.Run(name, func(t *testing.T) {
					c, small := roundTripSetup(t, p, mode, sp)
					// the "mixed" setup has BF16, F16 and F32 sections, so
					// forced, only blocks too short for a shared table
					// (codec.minSharedSymbols) may build their own, and
					// sparse blocks (mostly zeros) code their nonzero values
					// with their own tables where that is smaller, and blocks
					// whose values repeat may be byte planes through zstd
					if sc.name == "mixed" && mi == 2 && (c.OwnTables > small || c.SharedTables < c.FloatBlocks-small-c.Sparse-c.ZstdPlanes) {
						t.Fatalf("forced setup: %+v, %d blocks of fewer than 64 values", c, small)
					}
				})
			}
		}
	}
}

// roundTripSetup compresses path with the given compress flags, decompresses
// with the setup, and compares every file of the model by bytes and SHA-256.
// It returns the archive's block census and how many float blocks hold
// fewer than 64 values.
func roundTripSetup(t *testing.T, path string, compressArgs []string, setup string) (codec.Census, int) {
	t.Helper()
	m, err := checkpoint.OpenPath(path)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	arc := filepath.Join(work, "model.nzip")
	args := append(append([]string{"compress", "-q"}, compressArgs...), "-o", arc, path)
	if code, _, errs := nzip(t, args...); code != 0 {
		t.Fatalf("compress %v: %s", compressArgs, errs)
	}
	out := filepath.Join(work, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	target := out
	if len(m.Files) == 1 {
		target = filepath.Join(out, m.Files[0].Name)
	}
	if code, _, errs := nzip(t, "decompress", "-q", "-setup", setup, "-o", target, arc); code != 0 {
		t.Fatalf("decompress: %s", errs)
	}
	for _, f := range m.Files {
		want, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(out, f.Name))
		if err != nil || !bytes.Equal(got, want) || sha256.Sum256(got) != sha256.Sum256(want) {
			t.Fatalf("%s not restored bit-exact: %v", f.Name, err)
		}
	}
	code, js, errs := nzip(t, "inspect", "-json", "-setup", setup, arc)
	if code != 0 {
		t.Fatalf("inspect: %s", errs)
	}
	var rep inspectReport
	if err := json.Unmarshal([]byte(js), &rep); err != nil || rep.Blocks == nil {
		t.Fatalf("inspect -json: %v", err)
	}
	rd, f, err := openArchive(arc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	defer rd.Close()
	small := 0
	for _, fi := range rd.Files() {
		for _, b := range fi.Blocks() {
			if b.Kind == codec.KindFloat && b.Length < 64*int64(b.DType.Size()) {
				small++
			}
		}
	}
	return *rep.Blocks, small
}
