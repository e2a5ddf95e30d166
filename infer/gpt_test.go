package infer

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

const gptDir = "trajectories/tinygpt-fortunes/"

type gptRef struct {
	NGen     int `json:"n_generate"`
	Variants map[string]struct {
		Weights string     `json:"weights"`
		Entries []refEntry `json:"entries"`
	} `json:"variants"`
}

// gptConfig is the run's config.json (the number of heads is not in the
// safetensors files).
func gptConfig(t testing.TB) []byte { return readFile(t, needFile(t, gptDir+"config.json")) }

// TestGPTOracle runs the byte-level GPT of step 1000 (f32 and bf16) on
// the reference prompts: the same greedy bytes wherever the reference's
// top-2 margin exceeds 1e-3, the stored logits within 1e-4.
func TestGPTOracle(t *testing.T) {
	var ref gptRef
	if err := json.Unmarshal(readFile(t, needFile(t, gptDir+"reference.greedy.json")), &ref); err != nil {
		t.Fatal(err)
	}
	for _, dt := range []string{"f32", "bf16"} {
		v, ok := ref.Variants[dt]
		if !ok || len(v.Entries) == 0 {
			t.Fatalf("reference has no %s variant", dt)
		}
		t.Run(dt, func(t *testing.T) {
			m := openBytes(t, readFile(t, needFile(t, gptDir+v.Weights)), Options{Config: gptConfig(t)})
			if c := m.Config(); c.Arch != "gpt" || c.Dim != 128 || c.Layers != 4 || c.Heads != 4 || c.SeqLen != 128 || c.Vocab != 256 || c.Hidden != 512 {
				t.Fatalf("config %+v", c)
			}
			worst := 0.0
			entries := v.Entries
			if testing.Short() {
				entries = entries[:1]
			}
			for _, e := range entries {
				res, err := Generate(m, ByteTokenizer{}, e.Prompt, GenerateOptions{N: ref.NGen, Logits: func(pos int, l []float32) {
					if pos < len(e.Logits) {
						worst = max(worst, checkLogits(t, fmt.Sprintf("%q position %d", e.Prompt, pos), l, e.logits(t, pos), 1e-4))
					}
				}})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(res.PromptTokens, e.PromptTokens) {
					t.Fatalf("%q: prompt tokens %v, reference %v", e.Prompt, res.PromptTokens, e.PromptTokens)
				}
				n := len(e.Tokens)
				if e.MinMargin <= 1e-3 {
					n = e.MinMarginPos + 1
				}
				if len(res.Tokens) < n || !slices.Equal(res.Tokens[:n], e.Tokens[:n]) {
					t.Fatalf("%q: tokens\n%v\nreference\n%v", e.Prompt, res.Tokens, e.Tokens)
				}
				if res.Text != e.Text {
					t.Errorf("%q: text %q, reference %q", e.Prompt, res.Text, e.Text)
				}
			}
			t.Logf("largest logit difference from the numpy oracle: %.3g", worst)
		})
	}
}
