package infer

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"neuralzip/codec"
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

// TestGPTEveryStep runs every checkpoint of the training run (21 BF16
// steps, 11 F32) from its archive and from the file: the same tokens and
// logits bit for bit, and the model learns (its greedy continuation of the
// prompt changes between the first and the last step).
func TestGPTEveryStep(t *testing.T) {
	conf := gptConfig(t)
	var texts []string
	for step := 0; step <= 1000; step += 50 {
		for _, dt := range []string{"bf16", "f32"} {
			if dt == "f32" && step%100 != 0 {
				continue // F32 is kept every 100 steps
			}
			if testing.Short() && step != 0 && step != 1000 {
				continue
			}
			name := fmt.Sprintf("step_%06d.%s.safetensors", step, dt)
			orig := readFile(t, needFile(t, gptDir+name))
			c := exactCase{file: name, config: conf, tok: ByteTokenizer{}, prompt: "You will be"}
			want := runN(t, openBytes(t, orig, Options{Config: conf}), c, 16)
			got := runN(t, openBytes(t, compress(t, orig, codec.EncodeOptions{}), Options{Config: conf}), c, 16)
			if got.LogitsSHA256 != want.LogitsSHA256 || !slices.Equal(got.Tokens, want.Tokens) {
				t.Errorf("%s: archive %s, file %s", name, got.LogitsSHA256, want.LogitsSHA256)
			}
			if dt == "bf16" {
				texts = append(texts, want.Text)
			}
		}
	}
	if len(texts) >= 2 && texts[0] == texts[len(texts)-1] {
		t.Errorf("step 0 and step 1000 generate the same text %q", texts[0])
	}
}
