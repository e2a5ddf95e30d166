package infer

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

type llamaRef struct {
	DType   string     `json:"dtype"`
	BOS     int        `json:"bos"`
	NGen    int        `json:"n_generate"`
	Entries []refEntry `json:"entries"`
}

func loadLlamaRef(t testing.TB, dt string) *llamaRef {
	p := needFile(t, "models/reference/stories260K."+dt+".greedy.json")
	var r llamaRef
	if err := json.Unmarshal(readFile(t, p), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Entries) == 0 {
		t.Fatalf("%s: no entries", p)
	}
	return &r
}

func loadTok512(t testing.TB) *Llama2cTokenizer {
	tk, err := ParseLlama2cTokenizer(readFile(t, needFile(t, "models/tokenizer/tok512.bin")), 512)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestLlamaOracle runs stories260K (every dtype, safetensors and GGUF)
// greedily on the reference prompts: tokens as llama2.c encodes them, the
// same greedy tokens wherever the reference's top-2 margin exceeds 1e-3,
// the stored logits within 1e-4, and the text run.c prints.
func TestLlamaOracle(t *testing.T) {
	tk := loadTok512(t)
	for _, dt := range []string{"f32", "bf16", "f16"} {
		ref := loadLlamaRef(t, dt)
		for _, ext := range []string{"safetensors", "gguf"} {
			if testing.Short() && (ext == "gguf" || dt == "f16") {
				continue // the same weights as other files
			}
			t.Run(dt+"."+ext, func(t *testing.T) {
				m := openBytes(t, readFile(t, needFile(t, "models/original/stories260K."+dt+"."+ext)), Options{})
				if c := m.Config(); c.Arch != "llama" || c.Dim != 64 || c.Layers != 5 || c.Heads != 8 || c.KVHeads != 4 || c.Hidden != 172 || c.Vocab != 512 || c.SeqLen != 512 {
					t.Fatalf("config %+v", c)
				}
				worst := 0.0
				entries := ref.Entries
				if testing.Short() {
					entries = entries[:1]
				}
				for _, e := range entries {
					pt, err := tk.Encode(e.Prompt)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(pt, e.PromptTokens) {
						t.Fatalf("%q encodes as %v, llama2.c %v", e.Prompt, pt, e.PromptTokens)
					}
					res, err := Generate(m, tk, e.Prompt, GenerateOptions{N: ref.NGen, Logits: func(pos int, l []float32) {
						if pos < len(e.Logits) {
							worst = max(worst, checkLogits(t, fmt.Sprintf("%q position %d", e.Prompt, pos), l, e.logits(t, pos), 1e-4))
						}
					}})
					if err != nil {
						t.Fatal(err)
					}
					// every token must match up to the first position whose
					// reference margin is at most 1e-3 (none in these files)
					n := len(e.Tokens)
					if e.MinMargin <= 1e-3 {
						n = e.MinMarginPos + 1
					}
					if len(res.Tokens) < n || !slices.Equal(res.Tokens[:n], e.Tokens[:n]) {
						t.Fatalf("%q: tokens\n%v\nreference\n%v", e.Prompt, res.Tokens, e.Tokens)
					}
					if res.Text != e.Text {
						t.Errorf("%q: text\n%q\nreference\n%q", e.Prompt, res.Text, e.Text)
					}
				}
				t.Logf("largest logit difference from llama2.c: %.3g", worst)
			})
		}
	}
}
