package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"neuralzip/lossy"
)

// sharedFile returns the path of a corpus file, skipping without it.
func sharedFile(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not present: skipping", p)
	}
	return p
}

type genJSON struct {
	PromptTokens      []int   `json:"prompt_tokens"`
	Tokens            []int   `json:"tokens"`
	Text              string  `json:"text"`
	LogitsSHA256      string  `json:"logits_sha256"`
	WeightsBytes      int64   `json:"weights_bytes"`
	ResidentPeakBytes int64   `json:"resident_peak_bytes"`
	TokensPerS        float64 `json:"tokens_per_s"`
}

func generateJSON(t *testing.T, args ...string) genJSON {
	t.Helper()
	code, out, errs := nzip(t, append([]string{"generate", "-json"}, args...)...)
	if code != 0 {
		t.Fatalf("generate %v: exit %d: %s", args, code, errs)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &fields); err != nil {
		t.Fatalf("generate -json: %v\n%s", err, out)
	}
	var keys []string
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"logits_sha256", "prompt_tokens", "resident_peak_bytes", "text", "tokens", "tokens_per_s", "weights_bytes"}; !slices.Equal(keys, want) {
		t.Fatalf("generate -json fields %v, want %v", keys, want)
	}
	var g genJSON
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGenerate runs nzip generate on stories260K BF16 and on its archive:
// llama2.c's greedy tokens, identical logits, less resident memory from
// the archive; sampling reproduces with a seed.
func TestGenerate(t *testing.T) {
	orig := sharedFile(t, "models/original/stories260K.bf16.safetensors")
	tok := sharedFile(t, "models/tokenizer/tok512.bin")
	refPath := sharedFile(t, "models/reference/stories260K.bf16.greedy.json")
	var ref struct {
		Entries []struct {
			Prompt string `json:"prompt"`
			Tokens []int  `json:"tokens"`
		} `json:"entries"`
	}
	b, err := os.ReadFile(refPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	arch := filepath.Join(dir, "m.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-o", arch, orig); code != 0 {
		t.Fatal(errs)
	}
	e := ref.Entries[0]
	g1 := generateJSON(t, "-temp", "0", "-n", "20", "-tokenizer", tok, orig, e.Prompt)
	g2 := generateJSON(t, "-temp", "0", "-n", "20", "-tokenizer", tok, arch, e.Prompt)
	if !slices.Equal(g1.Tokens, e.Tokens[:len(g1.Tokens)]) || len(g1.Tokens) != len(g1.PromptTokens)+20 {
		t.Errorf("tokens %v, llama2.c %v", g1.Tokens, e.Tokens)
	}
	if g1.LogitsSHA256 != g2.LogitsSHA256 || !slices.Equal(g1.Tokens, g2.Tokens) || g1.Text != g2.Text {
		t.Errorf("archive: %+v\noriginal: %+v", g2, g1)
	}
	if g1.WeightsBytes != g2.WeightsBytes || g2.ResidentPeakBytes >= g1.ResidentPeakBytes {
		t.Errorf("memory: archive %d of %d, original %d of %d", g2.ResidentPeakBytes, g2.WeightsBytes, g1.ResidentPeakBytes, g1.WeightsBytes)
	}
	s1 := generateJSON(t, "-seed", "7", "-n", "20", "-tokenizer", tok, arch, "Lily")
	s2 := generateJSON(t, "-seed", "7", "-n", "20", "-prefetch", "-tokenizer", tok, orig, "Lily")
	if !slices.Equal(s1.Tokens, s2.Tokens) || s1.LogitsSHA256 != s2.LogitsSHA256 {
		t.Errorf("seed 7: %v vs %v", s1.Tokens, s2.Tokens)
	}
	// the text output: the prompt, then the story
	code, out, errs := nzip(t, "generate", "-temp", "0", "-n", "8", "-tokenizer", tok, arch, e.Prompt)
	if code != 0 || !strings.HasPrefix(out, e.Prompt) || !strings.Contains(errs, "resident peak") {
		t.Errorf("generate: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// an archive without a setup gets the hint; one made for running
	// (the same logits) gets it only without -prefetch on a machine
	// that could prefetch; the original file never
	const hint = "-setup gaussian -chunk 8192"
	if !strings.Contains(errs, hint) {
		t.Errorf("no hint for an archive without a setup: %q", errs)
	}
	gauss := filepath.Join(dir, "g.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-setup", "gaussian", "-chunk", "8192", "-o", gauss, orig); code != 0 {
		t.Fatal(errs)
	}
	if g3 := generateJSON(t, "-temp", "0", "-n", "20", "-prefetch", "-tokenizer", tok, gauss, e.Prompt); g3.LogitsSHA256 != g1.LogitsSHA256 {
		t.Errorf("archive made for running: logits %s, original %s", g3.LogitsSHA256, g1.LogitsSHA256)
	}
	for _, c := range []struct {
		args []string
		hint bool
	}{
		{[]string{"-prefetch", gauss}, false},
		{[]string{gauss}, runtime.GOMAXPROCS(0) >= 2},
		{[]string{orig}, false},
		{[]string{"-prefetch", orig}, false},
	} {
		args := append([]string{"generate", "-temp", "0", "-n", "4", "-tokenizer", tok}, c.args...)
		if code, _, errs := nzip(t, append(args, e.Prompt)...); code != 0 || strings.Contains(errs, hint) != c.hint {
			t.Errorf("generate %v: exit %d, stderr %q (want the hint: %v)", c.args, code, errs, c.hint)
		}
	}
}

// TestGenerateErrors: usage errors exit 2; models it cannot run, a
// missing tokenizer or hyper-parameter exit 1 with a message that says so.
func TestGenerateErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"x"}, {"-temp", "-1", "x", "y"}, {"-topp", "2", "x", "y"}, {"-n", "-3", "x", "y"}} {
		if code, _, _ := nzip(t, append([]string{"generate"}, args...)...); code != 2 {
			t.Errorf("generate %v: exit %d, want 2", args, code)
		}
	}
	vad := sharedFile(t, "models/original/silero_vad_16k.safetensors")
	gptDir := t.TempDir() // no config.json beside it
	gpt := filepath.Join(gptDir, "step.safetensors")
	b, err := os.ReadFile(sharedFile(t, "trajectories/tinygpt-fortunes/step_001000.bf16.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gpt, b, 0o644); err != nil {
		t.Fatal(err)
	}
	stories := sharedFile(t, "models/original/stories260K.f32.gguf")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{vad, "hi"}, "unknown architecture"},
		{[]string{gpt, "hi"}, "heads"},
		{[]string{stories, "hi"}, "-tokenizer"},
		{[]string{"-tokenizer", vad, stories, "hi"}, "bad tokenizer"},
		{[]string{filepath.Join(gptDir, "missing"), "hi"}, "missing"},
	} {
		code, _, errs := nzip(t, append([]string{"generate"}, c.args...)...)
		if code != 1 || !strings.Contains(errs, c.msg) || !strings.HasPrefix(errs, "nzip:") {
			t.Errorf("generate %v: exit %d, stderr %q, want 1 and %q", c.args, code, errs, c.msg)
		}
	}
	// an archive coded against a reference is refused with a reason
	ref := filepath.Join(gptDir, "ref.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-ref", sharedFile(t, "trajectories/tinygpt-fortunes/step_000900.bf16.safetensors"), "-o", ref, gpt); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := nzip(t, "generate", "-config", sharedFile(t, "trajectories/tinygpt-fortunes/config.json"), ref, "hi"); code != 1 || !strings.Contains(errs, "reference model") {
		t.Errorf("generate on a -ref archive: exit %d, %q", code, errs)
	}
	// with the run's config.json beside it, the GPT runs
	conf, err := os.ReadFile(sharedFile(t, "trajectories/tinygpt-fortunes/config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gptDir, "config.json"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	g := generateJSON(t, "-temp", "0", "-n", "16", gpt, "A fool and his money")
	if g.Text != " the with the wa" { // the reference's first 16 bytes
		t.Errorf("GPT text %q", g.Text)
	}
}

// TestGenerateLossyTiles: nzip generate runs a lossy archive tile by tile
// (nf4 and e8 at 4 bits; stories260K and the GPT), with and without
// -prefetch: the logits and text of its dequantized model (decompress
// -lossy), the coded archive counted in the resident peak, which stays
// under the dequantized weights'; a damaged tensor is an error naming it.
func TestGenerateLossyTiles(t *testing.T) {
	tok := sharedFile(t, "models/tokenizer/tok512.bin")
	conf := sharedFile(t, "trajectories/tinygpt-fortunes/config.json")
	models := []struct {
		file string
		args []string
	}{
		{sharedFile(t, "models/original/stories260K.bf16.safetensors"), []string{"-tokenizer", tok, "-n", "24"}},
		{sharedFile(t, "trajectories/tinygpt-fortunes/step_001000.bf16.safetensors"), []string{"-config", conf, "-n", "24"}},
	}
	dir := t.TempDir()
	for mi, m := range models {
		methods := []string{"nf4", "e8"}
		if testing.Short() && mi == 1 {
			methods = methods[1:]
		}
		for _, method := range methods {
			ar := filepath.Join(dir, method+strconv.Itoa(mi)+".nzq")
			deq := ar + ".safetensors"
			if code, _, errs := nzip(t, "quantize", "-q", "-method", method, "-bits", "4", "-o", ar, m.file); code != 0 {
				t.Fatal(errs)
			}
			if code, _, errs := nzip(t, "decompress", "-lossy", "-o", deq, ar); code != 0 {
				t.Fatal(errs)
			}
			st, err := os.Stat(ar)
			if err != nil {
				t.Fatal(err)
			}
			args := append([]string{"-temp", "0"}, m.args...)
			d := generateJSON(t, append(args, deq, "Once upon a time")...)
			for _, pf := range []bool{false, true} {
				a := args
				if pf {
					a = append([]string{"-prefetch"}, a...)
				}
				g := generateJSON(t, append(a, ar, "Once upon a time")...)
				if g.LogitsSHA256 != d.LogitsSHA256 || g.Text != d.Text {
					t.Errorf("%s %s, prefetch %v: logits %s %q; the dequantized model's %s %q", filepath.Base(m.file), method, pf, g.LogitsSHA256, g.Text, d.LogitsSHA256, d.Text)
				}
				if g.WeightsBytes != d.WeightsBytes || g.ResidentPeakBytes <= st.Size() || g.ResidentPeakBytes >= d.ResidentPeakBytes {
					t.Errorf("%s %s, prefetch %v: resident peak %d (archive %d bytes) of %d; the dequantized model %d", filepath.Base(m.file), method, pf, g.ResidentPeakBytes, st.Size(), g.WeightsBytes, d.ResidentPeakBytes)
				}
			}
		}
	}
	// a flipped byte in a coded tensor: generate fails naming it
	ar := filepath.Join(dir, "e80.nzq")
	b, err := os.ReadFile(ar)
	if err != nil {
		t.Fatal(err)
	}
	a, err := lossy.OpenArchive(b)
	if err != nil {
		t.Fatal(err)
	}
	pos := int64(8+2+4+4) + int64(binary.LittleEndian.Uint32(b[10:]))
	name := ""
	for _, p := range a.Header.Parts {
		if p.IsTensor() && strings.Contains(p.Name, "layers.1.") {
			b[pos+p.Stored/2] ^= 0x08
			name = p.Name
			break
		}
		pos += p.Stored
	}
	bad := filepath.Join(dir, "bad.nzq")
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, pf := range []string{"-prefetch=false", "-prefetch"} {
		code, _, errs := nzip(t, "generate", pf, "-temp", "0", "-n", "4", "-tokenizer", tok, bad, "Once")
		if code != 1 || !strings.Contains(errs, strconv.Quote(name)) || !strings.Contains(errs, "CRC") {
			t.Errorf("generate %s of a damaged archive: exit %d, %q (want the tensor %q named)", pf, code, errs, name)
		}
	}
}
