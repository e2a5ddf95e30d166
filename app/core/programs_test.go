package core

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"neuralzip/codec"
)

// sharedModel opens a model of ../shared/models, or skips.
func sharedModel(t *testing.T, rel string) *Model {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", "models", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s absent (%v): programs of real tensors are not checked", rel, err)
	}
	m, err := OpenPath(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// checkSums checks that every node with parts has their bytes.
func checkSums(t *testing.T, what string, n *ProgramNode) {
	t.Helper()
	if len(n.Nodes) == 0 {
		return
	}
	var sum int64
	for i := range n.Nodes {
		sum += n.Nodes[i].Bytes
		checkSums(t, what, &n.Nodes[i])
	}
	if sum != n.Bytes {
		t.Errorf("%s: node %q has %d bytes, its parts %d", what, n.Label(), n.Bytes, sum)
	}
}

// tensorsOf picks up to k tensors of m of at least minBytes, of distinct
// dtypes first.
func tensorsOf(m *Model, k int, minBytes int64) []int {
	var out []int
	seen := map[string]bool{}
	for pass := 0; pass < 2 && len(out) < k; pass++ {
		for i := range m.Tensors {
			t := &m.Tensors[i]
			if len(out) == k || t.Bytes < minBytes || (pass == 0) == seen[t.DTypeName()] {
				continue
			}
			if pass == 1 && containsInt(out, i) {
				continue
			}
			seen[t.DTypeName()] = true
			out = append(out, i)
		}
	}
	return out
}

func containsInt(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// A tensor's program tree: every node's bytes are its parts', and the
// root's are the coded bytes of the tensor's blocks in its archive.
func TestTensorProgramReal(t *testing.T) {
	files := []string{"original/stories260K.bf16.safetensors"}
	if !testing.Short() {
		files = append(files, "quantized/real-f32.Q4_K.gguf", "original/silero_vad_16k.safetensors", "bench/real-bf16.safetensors")
	}
	for _, f := range files {
		m := sharedModel(t, f)
		for _, i := range tensorsOf(m, 3, 1024) {
			tn := &m.Tensors[i]
			root, err := m.TensorProgram(context.Background(), i, ProgramSettings{})
			if err != nil {
				t.Fatalf("%s %s: %v", f, tn.Name, err)
			}
			checkSums(t, tn.Name, root)
			src, _ := m.tensorBytes(i)
			a, err := codec.CompressBytes(nil, src, []codec.Segment{m.segment(i)}, codec.EncodeOptions{Threads: 1})
			if err != nil {
				t.Fatal(err)
			}
			rd, err := codec.NewReader(bytes.NewReader(a), int64(len(a)))
			if err != nil {
				t.Fatal(err)
			}
			var coded int64
			for _, b := range rd.Files()[0].Blocks() {
				coded += b.Compressed
			}
			rd.Close()
			if root.Bytes != coded || root.Values == 0 {
				t.Errorf("%s %s: tree of %d bytes (%d values), blocks %d", f, tn.Name, root.Bytes, root.Values, coded)
			}
			t.Logf("%s %s %s: %d bytes, %.3f bits/value, %s", f, tn.Name, tn.DTypeName(), root.Bytes, root.BitsPerValue(), root.Nodes[0].Label())
		}
	}
}

// Every alternative round-trips bit for bit, and the one the settings
// choose is marked.
func TestAlternativesReal(t *testing.T) {
	files := []string{"original/stories260K.bf16.safetensors"}
	if !testing.Short() {
		files = append(files, "quantized/real-f32.Q4_K.gguf", "original/silero_vad_16k.safetensors")
	}
	for _, f := range files {
		m := sharedModel(t, f)
		for _, i := range tensorsOf(m, 2, 4096) {
			tn := &m.Tensors[i]
			for _, s := range []ProgramSettings{{}, {Setup: codec.GaussianSetup(), Programs: map[string]codec.Program{tn.Name: codec.ProgramPlanes}}} {
				var calls int
				alts, err := m.Alternatives(context.Background(), i, s, func(done, total int) { calls++ })
				if err != nil {
					t.Fatal(err)
				}
				if len(alts) < 4 || calls != len(alts) || alts[0].Program != codec.ProgramAuto {
					t.Fatalf("%s %s: %d alternatives, %d progress calls", f, tn.Name, len(alts), calls)
				}
				chosen := 0
				for _, a := range alts {
					if a.Err != nil || !a.RoundTrip || a.Bytes <= 0 || a.Tree == nil || a.CompressMBs <= 0 || a.DecompressMBs <= 0 {
						t.Errorf("%s %s %v: %+v", f, tn.Name, a.Program, a)
						continue
					}
					checkSums(t, tn.Name+" "+a.Program.String(), a.Tree)
					if a.Chosen {
						chosen++
						if want := s.Chosen(tn.Name); a.Program != want && want.Applies(m.segment(i), s.Setup) {
							t.Errorf("%s: %v marked chosen, settings choose %v", tn.Name, a.Program, want)
						}
					}
					t.Logf("%s %s %v: %d bytes, %.3f bits/value, %.0f / %.0f MB/s, %s", f, tn.Name, a.Program, a.Bytes, a.BitsPerValue, a.CompressMBs, a.DecompressMBs, a.Tree.Nodes[0].Label())
				}
				if chosen != 1 {
					t.Errorf("%s %s: %d alternatives marked chosen", f, tn.Name, chosen)
				}
			}
		}
	}
}

// progOps is what a block root of program p starts with.
func progOps(p codec.Program) []string {
	switch p {
	case codec.ProgramFields, codec.ProgramFieldsOwn:
		return []string{"float fields"}
	case codec.ProgramSparse:
		return []string{"sparse"}
	case codec.ProgramPlanes, codec.ProgramZstdPlanes:
		return []string{"float byte planes"}
	case codec.ProgramZstd:
		return []string{"zstd"}
	case codec.ProgramRaw:
		return []string{"stored"}
	case codec.ProgramCM:
		return []string{"cm"}
	case codec.ProgramRecords:
		return []string{"records"}
	}
	return nil
}

// The setup saved with a choice for a tensor's cluster reproduces it:
// compressing the whole model with it codes every tensor of the cluster
// with the chosen program, and the archive decodes to the model.
func TestProgramSetupReal(t *testing.T) {
	m := sharedModel(t, "original/stories260K.bf16.safetensors")
	i := -1
	for j := range m.Tensors {
		if m.Tensors[j].Bytes >= 8192 && len(m.ProgramCluster(j)) > 1 {
			i = j
			break
		}
	}
	if i < 0 {
		t.Fatal("no tensor with a cluster")
	}
	cluster := m.ProgramCluster(i)
	for _, p := range []codec.Program{codec.ProgramPlanes, codec.ProgramSparse, codec.ProgramZstd} {
		chosen := map[string]codec.Program{}
		for _, j := range cluster {
			chosen[m.Tensors[j].Name] = p
		}
		s, err := ProgramSetup(nil, 0, chosen)
		if err != nil {
			t.Fatal(err)
		}
		s, err = codec.ParseSetup(s.Bytes()) // as saved and loaded
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := codec.Encode(context.Background(), &buf, m.Inputs(nil), codec.EncodeOptions{Setup: s}); err != nil {
			t.Fatal(err)
		}
		rd, err := codec.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range cluster {
			tree, err := ArchiveTensorProgram(rd, m.Tensors[j].File, m.Tensors[j].Name)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range tree.Nodes {
				if !strings.HasPrefix(b.Op, progOps(p)[0]) {
					t.Errorf("%v: %s has a block %q", p, m.Tensors[j].Name, b.Op)
				}
			}
		}
		var out bytes.Buffer
		if err := rd.WriteFile(context.Background(), &out, 0, codec.DecodeOptions{}); err != nil {
			t.Fatal(err)
		}
		orig, _, _, _ := m.ReadAll()
		if !bytes.Equal(out.Bytes(), orig) {
			t.Fatalf("%v: the archive does not decode to the model", p)
		}
		rd.Close()
		t.Logf("%v for %d tensors (%s…): archive %d bytes", p, len(cluster), m.Tensors[i].Name, buf.Len())
	}
}

func TestRoleOf(t *testing.T) {
	for in, want := range map[string]string{
		"model.layers.3.mlp.up.weight": "model.layers.*.mlp.up.weight",
		"blk.12.attn_q.weight":         "blk.*.attn_q.weight",
		"conv1.weight":                 "conv1.weight",
		"layer_0/dense_1:0":            "layer_*/dense_*:*",
	} {
		if got := roleOf(in); got != want {
			t.Errorf("roleOf(%q) = %q, want %q", in, got, want)
		}
	}
}
