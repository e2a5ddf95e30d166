package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/dtype"
)

// The corpus table: every file under ../shared/models/original with what a
// loader must find in it (like Netron's test/models.json). Counts come from
// ../shared/models/README.md; "values" are stored values per dtype over the
// whole model (all files of a multi-file model).
type corpusEntry struct {
	path    string // relative to ../shared/models/original; the file nzip is given
	format  string // Layout.Format of the first file
	files   int    // files in the model (with companions)
	tensors map[dtype.DType][2]int64
	// tensors[d] = {tensor segments, values} for every dtype that must be
	// there; dtypes not listed are not checked
}

var corpus = []corpusEntry{
	{"stories260K.f32.safetensors", "safetensors", 1, map[dtype.DType][2]int64{dtype.F32: {47, 260032}}},
	{"stories260K.f16.safetensors", "safetensors", 1, map[dtype.DType][2]int64{dtype.F16: {47, 260032}}},
	{"stories260K.bf16.safetensors", "safetensors", 1, map[dtype.DType][2]int64{dtype.BF16: {47, 260032}}},
	{"stories260K.f32.gguf", "gguf", 1, map[dtype.DType][2]int64{dtype.F32: {47, 260032}}},
	{"stories260K.f16.gguf", "gguf", 1, map[dtype.DType][2]int64{dtype.F16: {47, 260032}}},
	{"stories260K.bf16.gguf", "gguf", 1, map[dtype.DType][2]int64{dtype.BF16: {47, 260032}}},
	{"silero_vad_16k.safetensors", "safetensors", 1, map[dtype.DType][2]int64{dtype.F32: {15, 309633}}},
	{"tiny-rwkv-4v0-660K-FP32.bin", "rwkv", 1, map[dtype.DType][2]int64{dtype.F32: {78, 661504}}},
	{"tiny-rwkv-4v0-660K-FP16.bin", "rwkv", 1, map[dtype.DType][2]int64{dtype.F16: {-1, 655360}, dtype.F32: {-1, 6144}}},
	{"faceres-deep/faceres-deep.json", "tfjs", 2, map[dtype.DType][2]int64{dtype.F32: {127, 3489403}, dtype.I32: {1, -1}}},
	{"movenet-thunder/movenet-thunder.json", "tfjs", 2, map[dtype.DType][2]int64{dtype.F16: {149, 6238344}, dtype.I32: {31, -1}}},
	{"handtrack/handtrack.json", "tfjs", 2, map[dtype.DType][2]int64{dtype.U8: {272, 2960393}, dtype.I32: {347, -1}}},
	// ONNX: integer constants coded as varint int64_data are not raw bytes
	// and stay in the opaque protobuf (silero: 1 of 313 values; DTLN: all 64).
	{"silero_vad.onnx", "onnx", 1, map[dtype.DType][2]int64{dtype.F32: {36, 545288}, dtype.I64: {308, 312}}},
	{"ch_PP-OCRv4_rec_infer.onnx", "onnx", 1, map[dtype.DType][2]int64{dtype.F32: {309, 2690296}, dtype.I32: {15, -1}, dtype.I64: {1, -1}}},
	{"model_1.onnx", "onnx", 1, map[dtype.DType][2]int64{dtype.F32: {8, 363393}}},
	{"pose_landmark_full.tflite", "tflite", 1, map[dtype.DType][2]int64{dtype.F16: {192, 3169489}, dtype.I32: {10, -1}}},
	{"pose_landmark_lite.tflite", "tflite", 1, map[dtype.DType][2]int64{dtype.F16: {176, 1363089}, dtype.I32: {10, -1}}},
	{"step_001000.pt", "pytorch", 1, map[dtype.DType][2]int64{dtype.F32: {53, 875264}}},
	// TorchScript: 32 storages (2,181,128 bytes = 545,282 values) plus an
	// empty constants.0 tensor
	{"silero_vad.jit", "pytorch", 1, map[dtype.DType][2]int64{dtype.F32: {33, 545282}}},
}

func sharedOriginal(t *testing.T) string {
	d := filepath.Join("..", "..", "..", "shared", "models", "original")
	if _, err := os.Stat(d); err != nil {
		t.Skipf("corpus not found at %s: skipping the real-file table test", d)
	}
	return d
}

func TestCorpusTable(t *testing.T) {
	dir := sharedOriginal(t)
	listed := map[string]bool{}
	for _, c := range corpus {
		c := c
		t.Run(c.path, func(t *testing.T) {
			p := filepath.Join(dir, c.path)
			m, err := checkpoint.OpenPath(p)
			if err != nil {
				t.Fatal(err)
			}
			if m.Format != c.format || len(m.Files) != c.files {
				t.Fatalf("format %q with %d files, want %q with %d", m.Format, len(m.Files), c.format, c.files)
			}
			got := map[dtype.DType][2]int64{}
			for _, f := range m.Files {
				listed[filepath.Clean(filepath.Join(filepath.Dir(c.path), f.Name))] = true
				if err := f.Layout.Validate(); err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
				for _, s := range f.Layout.Tensors() {
					n, _ := s.NumElements()
					g := got[s.DType]
					got[s.DType] = [2]int64{g[0] + 1, g[1] + n}
				}
			}
			for d, want := range c.tensors {
				g := got[d]
				if (want[0] >= 0 && g[0] != want[0]) || (want[1] >= 0 && g[1] != want[1]) {
					t.Errorf("%v: %d tensors with %d values, want %d with %d (all: %s)", d, g[0], g[1], want[0], want[1], describe(got))
				}
			}
			roundTripCLI(t, p, m)
		})
	}
	// every file of the corpus is covered by the table
	var missing []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			if !listed[rel] {
				missing = append(missing, rel)
			}
		}
		return nil
	})
	if len(missing) > 0 {
		t.Errorf("files of the corpus without an entry in the table: %v", missing)
	}
}

func describe(m map[dtype.DType][2]int64) string {
	var parts []string
	for d, v := range m {
		parts = append(parts, fmt.Sprintf("%v:%d/%d", d, v[0], v[1]))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// roundTripCLI compresses the model with the CLI into a temp dir and
// restores it, comparing every file's bytes.
func roundTripCLI(t *testing.T, path string, m *checkpoint.Model) {
	t.Helper()
	work := t.TempDir()
	arc := filepath.Join(work, "model.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-o", arc, path); code != 0 {
		t.Fatalf("compress: %s", errs)
	}
	out := filepath.Join(work, "out")
	os.MkdirAll(out, 0o755)
	target := out
	if len(m.Files) == 1 {
		target = filepath.Join(out, m.Files[0].Name)
	}
	if code, _, errs := nzip(t, "decompress", "-q", "-o", target, arc); code != 0 {
		t.Fatalf("decompress: %s", errs)
	}
	for _, f := range m.Files {
		want, _ := os.ReadFile(f.Path)
		got, err := os.ReadFile(filepath.Join(out, f.Name))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s not restored bit-exact: %v", f.Name, err)
		}
	}
}
