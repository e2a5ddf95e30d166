package infer

import (
	"encoding/json"
	"testing"
)

// TestSampler checks llama2.c's sampler: greedy takes the first maximum,
// a seed reproduces, top-p keeps to the likeliest tokens, and degenerate
// inputs do not panic.
func TestSampler(t *testing.T) {
	logits := []float32{1, 3, 3, -2, 0.5}
	if Argmax(logits) != 1 {
		t.Errorf("argmax %d, want the first maximum 1", Argmax(logits))
	}
	draw := func(temp, topp float32, seed uint64) []int {
		s, err := NewSampler(temp, topp, seed)
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for range 200 {
			out = append(out, s.Sample(logits))
		}
		return out
	}
	a, b := draw(1, 0.9, 7), draw(1, 0.9, 7)
	seen := map[int]int{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("draw %d: %d and %d with the same seed", i, a[i], b[i])
		}
		seen[a[i]]++
	}
	// top-p 0.9: tokens 1 and 2 hold ~0.8 of the mass, token 4 ~0.1 more
	if seen[3] != 0 || seen[1] == 0 || seen[2] == 0 {
		t.Errorf("top-p 0.9 drew %v", seen)
	}
	if c := draw(1, 0.9, 8); equalInts(a, c) {
		t.Error("seeds 7 and 8 drew the same tokens")
	}
	all := map[int]bool{}
	for _, v := range draw(2, 1, 3) {
		all[v] = true
	}
	if len(all) != len(logits) {
		t.Errorf("temperature 2 without top-p drew only %v", all)
	}
	s, _ := NewSampler(1, 0.5, 1)
	if s.Sample([]float32{4}) != 0 {
		t.Error("a vocabulary of one token")
	}
	if _, err := NewSampler(-1, 0.9, 1); err == nil {
		t.Error("negative temperature accepted")
	}
	if _, err := NewSampler(1, 0.9, 0); err == nil {
		t.Error("seed 0 accepted (xorshift's fixed point)")
	}
}

func equalInts(a, b []int) bool {
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

// TestSamplerLlama2c: with the same seed, temperature and top-p, stories260K
// (F32) tells the same stories as llama2.c's run.c (testdata/llama2c-sampled.json,
// made with the unmodified run.c; its header says how).
func TestSamplerLlama2c(t *testing.T) {
	var ref struct {
		Cases []struct {
			Prompt      string  `json:"prompt"`
			Temperature float32 `json:"temperature"`
			TopP        float32 `json:"topp"`
			Seed        uint64  `json:"seed"`
			Steps       int     `json:"steps"`
			Text        string  `json:"text"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(readFile(t, "testdata/llama2c-sampled.json"), &ref); err != nil {
		t.Fatal(err)
	}
	tk := loadTok512(t)
	m := openBytes(t, readFile(t, needFile(t, "models/original/stories260K.f32.safetensors")), Options{})
	for _, c := range ref.Cases {
		s, err := NewSampler(c.Temperature, c.TopP, c.Seed)
		if err != nil {
			t.Fatal(err)
		}
		pt, err := tk.Encode(c.Prompt)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Generate(m, tk, c.Prompt, GenerateOptions{N: c.Steps - len(pt) + 1, Sampler: s})
		if err != nil {
			t.Fatal(err)
		}
		if got := Text(tk, 1, res.Tokens[1:]); got != c.Text {
			t.Errorf("%q seed %d temperature %v top-p %v:\n%q\nllama2.c:\n%q", c.Prompt, c.Seed, c.Temperature, c.TopP, got, c.Text)
		}
	}
}
