package checkpoint

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"neuralzip/dtype"
)

// realCase describes one file of the shared corpus and what its README says
// about it. Counts of -1 are not checked.
type realCase struct {
	path       string // relative to the shared directory
	format     string
	tensors    int
	dtype      dtype.DType // every tensor has this type
	zeroElems  int         // tensors with zero elements
	scalars    int         // 0-d tensors
	dataBytes  int64       // size of the data section, -1 if not stated
	contiguous bool        // no opaque bytes after the header (and GGUF alignment padding)
	meta       map[string]string
	nonFinite  map[string]int // tensor name → number of non-finite values it holds
}

func realCases() []realCase {
	cs := []realCase{
		{path: "models/original/stories260K.f32.safetensors", format: "safetensors", tensors: 47, dtype: dtype.F32, dataBytes: 260032 * 4, contiguous: true,
			meta: map[string]string{"dim": "64", "n_layers": "5", "vocab_size": "512"}},
		{path: "models/original/stories260K.f16.safetensors", format: "safetensors", tensors: 47, dtype: dtype.F16, dataBytes: 260032 * 2, contiguous: true,
			meta: map[string]string{"hidden_dim": "172"}},
		{path: "models/original/stories260K.bf16.safetensors", format: "safetensors", tensors: 47, dtype: dtype.BF16, dataBytes: 260032 * 2, contiguous: true,
			meta: map[string]string{"n_kv_heads": "4"}},
		{path: "models/original/silero_vad_16k.safetensors", format: "safetensors", tensors: 15, dtype: dtype.F32, dataBytes: 309633 * 4, contiguous: true},
		{path: "models/original/stories260K.f32.gguf", format: "gguf", tensors: 47, dtype: dtype.F32, dataBytes: -1, contiguous: true,
			meta: map[string]string{"general.architecture": "llama", "general.alignment": "32", "llama.block_count": "5"}},
		{path: "models/original/stories260K.f16.gguf", format: "gguf", tensors: 47, dtype: dtype.F16, dataBytes: -1, contiguous: true,
			meta: map[string]string{"general.architecture": "llama"}},
		{path: "models/original/stories260K.bf16.gguf", format: "gguf", tensors: 47, dtype: dtype.BF16, dataBytes: -1, contiguous: true,
			meta: map[string]string{"general.architecture": "llama"}},
		{path: "models/bench/real-f32.safetensors", format: "safetensors", tensors: 1574, dtype: dtype.F32, zeroElems: 6, scalars: 176, dataBytes: 20263416, contiguous: true},
		{path: "models/bench/real-bf16.safetensors", format: "safetensors", tensors: 1574, dtype: dtype.BF16, zeroElems: 6, scalars: 176, dataBytes: 10131708, contiguous: true},
		{path: "models/bench/real-f16.safetensors", format: "safetensors", tensors: 1574, dtype: dtype.F16, zeroElems: 6, scalars: 176, dataBytes: 10131708, contiguous: true,
			nonFinite: map[string]int{"ch_PP-OCRv4_det_infer/batch_norm_0.w_2": 24}},
		{path: "models/bench/real-f16-native.safetensors", format: "safetensors", tensors: 720, dtype: dtype.F16, scalars: 22, dataBytes: 6169960, contiguous: true},
	}
	for _, step := range []string{"000000", "000050", "000100", "000500", "000950", "001000"} {
		cs = append(cs, realCase{path: "trajectories/tinygpt-fortunes/step_" + step + ".bf16.safetensors", format: "safetensors",
			tensors: 53, dtype: dtype.BF16, dataBytes: 875264 * 2, contiguous: true,
			meta: map[string]string{"step": trimZeros(step), "params": "875264"}})
	}
	for _, step := range []string{"000000", "000500", "001000"} {
		cs = append(cs, realCase{path: "trajectories/tinygpt-fortunes/step_" + step + ".f32.safetensors", format: "safetensors",
			tensors: 53, dtype: dtype.F32, dataBytes: 875264 * 4, contiguous: true})
	}
	for _, step := range []string{"000500", "001000"} {
		cs = append(cs, realCase{path: "trajectories/tinygpt-fortunes/step_" + step + ".optim.safetensors", format: "safetensors",
			tensors: 106, dtype: dtype.F32, dataBytes: 2 * 875264 * 4, contiguous: true})
	}
	return cs
}

func TestRealFiles(t *testing.T) {
	dir := sharedDir(t)
	for _, c := range realCases() {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, c.path))
			if err != nil {
				t.Skipf("corpus file missing: %v", err)
			}
			l := openBytes(t, b)
			if l.Format != c.format {
				t.Fatalf("format %q, want %q", l.Format, c.format)
			}
			ts := l.Tensors()
			if len(ts) != c.tensors {
				t.Fatalf("%d tensors, want %d", len(ts), c.tensors)
			}
			var zero, scalars int
			for _, s := range ts {
				if s.DType != c.dtype || s.Type != c.dtype.String() {
					t.Fatalf("tensor %q is %v (%s), want %v", s.Name, s.DType, s.Type, c.dtype)
				}
				if s.Length == 0 {
					zero++
				}
				if len(s.Shape) == 0 {
					scalars++
				}
			}
			if zero != c.zeroElems || scalars != c.scalars {
				t.Errorf("%d zero-element and %d 0-d tensors, want %d and %d", zero, scalars, c.zeroElems, c.scalars)
			}
			header := l.Segments[0]
			if header.IsTensor() || header.Offset != 0 {
				t.Fatalf("segment 0 is %+v, want the opaque header", header)
			}
			if c.format == "safetensors" {
				if n := int64(binary.LittleEndian.Uint64(b)); header.Length != 8+n {
					t.Errorf("header segment is %d bytes, want 8+%d", header.Length, n)
				}
				if c.dataBytes >= 0 && l.Size-header.Length != c.dataBytes {
					t.Errorf("data section is %d bytes, want %d", l.Size-header.Length, c.dataBytes)
				}
			}
			if c.contiguous {
				for i, s := range l.Segments[1:] {
					// GGUF: the padding up to the alignment follows the header.
					if !s.IsTensor() && !(c.format == "gguf" && i == 0 && s.Length < 32) {
						t.Errorf("unexpected opaque segment %+v", s)
					}
				}
			}
			for k, v := range c.meta {
				if l.Metadata[k] != v {
					t.Errorf("metadata %q = %q, want %q", k, l.Metadata[k], v)
				}
			}
			checkFloats(t, b, ts, c.nonFinite)
		})
	}
}

// checkFloats decodes every tensor (the first few in -short mode) and checks
// that the values are finite, except for the counts listed in nonFinite.
func checkFloats(t *testing.T, file []byte, ts []Segment, nonFinite map[string]int) {
	t.Helper()
	if testing.Short() && len(ts) > 4 {
		ts = ts[:4]
	}
	var values int
	for _, s := range ts {
		vals := decodeFloats(t, s.DType, file[s.Offset:s.End()])
		n, _ := s.NumElements()
		if int64(len(vals)) != n {
			t.Fatalf("tensor %q: decoded %d values, shape %v has %d", s.Name, len(vals), s.Shape, n)
		}
		bad := 0
		for _, v := range vals {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				bad++
			}
		}
		if bad != nonFinite[s.Name] {
			t.Errorf("tensor %q has %d non-finite values, want %d", s.Name, bad, nonFinite[s.Name])
		}
		values += len(vals)
	}
	if values == 0 {
		t.Error("no values decoded")
	}
}

// trimZeros turns "000050" into "50" and "000000" into "0".
func trimZeros(s string) string {
	n, _ := strconv.Atoi(s)
	return strconv.Itoa(n)
}

// TestRealGGUFMatchesSafetensors checks that the GGUF and safetensors
// conversions of stories260K agree: GGUF shapes, reported in row-major
// order, equal the safetensors shapes, and the token embedding and final
// norm bytes are identical.
func TestRealGGUFMatchesSafetensors(t *testing.T) {
	dir := sharedDir(t)
	pairs := map[string]string{"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight"}
	for _, kind := range []string{"f32", "f16", "bf16"} {
		gb, err1 := os.ReadFile(filepath.Join(dir, "models/original/stories260K."+kind+".gguf"))
		sb, err2 := os.ReadFile(filepath.Join(dir, "models/original/stories260K."+kind+".safetensors"))
		if err1 != nil || err2 != nil {
			t.Skipf("corpus files missing: %v %v", err1, err2)
		}
		g, s := byName(openBytes(t, gb)), byName(openBytes(t, sb))
		for gn, sn := range pairs {
			gt, ok1 := g[gn]
			st, ok2 := s[sn]
			if !ok1 || !ok2 {
				t.Fatalf("%s: missing %s or %s", kind, gn, sn)
			}
			if !equalShape(gt.Shape, st.Shape) || gt.DType != st.DType {
				t.Errorf("%s: %s %v %v vs %s %v %v", kind, gn, gt.Shape, gt.DType, sn, st.Shape, st.DType)
			}
			if string(gb[gt.Offset:gt.End()]) != string(sb[st.Offset:st.End()]) {
				t.Errorf("%s: bytes of %s and %s differ", kind, gn, sn)
			}
		}
		// Every GGUF tensor has a safetensors tensor of the same shape
		// (attention weights may be permuted, so only shapes are compared).
		var gs, ss []string
		for _, x := range g {
			gs = append(gs, fmt.Sprint(x.Shape))
		}
		for _, x := range s {
			ss = append(ss, fmt.Sprint(x.Shape))
		}
		if !sameMultiset(gs, ss) {
			t.Errorf("%s: GGUF and safetensors shapes differ", kind)
		}
	}
}

func byName(l *Layout) map[string]Segment {
	m := make(map[string]Segment)
	for _, s := range l.Tensors() {
		m[s.Name] = s
	}
	return m
}

func equalShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sameMultiset(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := make(map[string]int)
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}
