package infer

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"neuralzip/codec"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the committed fuzz seeds (testdata/fuzz)")

// stTensor is a tensor for tinySafetensors.
type stTensor struct {
	name  string
	shape []int
}

// tinySafetensors writes a safetensors file of BF16 tensors of
// weight-like values (deterministic) with the given metadata.
func tinySafetensors(meta map[string]string, ts []stTensor) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	hdr := map[string]any{}
	if meta != nil {
		hdr["__metadata__"] = meta
	}
	var data []byte
	for _, t := range ts {
		n := 1
		for _, d := range t.shape {
			n *= d
		}
		start := len(data)
		for range n {
			v := float32(rng.NormFloat64() * 0.3)
			data = binary.LittleEndian.AppendUint16(data, uint16(math.Float32bits(v)>>16))
		}
		hdr[t.name] = map[string]any{"dtype": "BF16", "shape": t.shape, "data_offsets": []int{start, len(data)}}
	}
	h, _ := json.Marshal(hdr)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

// tinyLlama is a 1-layer Llama (dim 8, 2 heads, 1 key/value head).
func tinyLlama() []byte {
	ts := []stTensor{{"model.embed_tokens.weight", []int{16, 8}}}
	for _, p := range []struct {
		n string
		s []int
	}{{"input_layernorm.weight", []int{8}}, {"self_attn.q_proj.weight", []int{8, 8}}, {"self_attn.k_proj.weight", []int{4, 8}},
		{"self_attn.v_proj.weight", []int{4, 8}}, {"self_attn.o_proj.weight", []int{8, 8}}, {"post_attention_layernorm.weight", []int{8}},
		{"mlp.gate_proj.weight", []int{12, 8}}, {"mlp.down_proj.weight", []int{8, 12}}, {"mlp.up_proj.weight", []int{12, 8}}} {
		ts = append(ts, stTensor{"model.layers.0." + p.n, p.s})
	}
	ts = append(ts, stTensor{"model.norm.weight", []int{8}})
	return tinySafetensors(map[string]string{"n_heads": "2", "seq_len": "8"}, ts)
}

// tinyGPT is a 1-block byte-level GPT (dim 8, context 8; heads from the
// config).
func tinyGPT() []byte {
	ts := []stTensor{{"tok.weight", []int{256, 8}}, {"pos.weight", []int{8, 8}}}
	shapes := [12][]int{{8}, {8}, {24, 8}, {24}, {8, 8}, {8}, {8}, {8}, {32, 8}, {32}, {8, 32}, {8}}
	for k, p := range gptParts {
		ts = append(ts, stTensor{"blocks.0." + p, shapes[k]})
	}
	ts = append(ts, stTensor{"lnf.weight", []int{8}}, stTensor{"lnf.bias", []int{8}}, stTensor{"head.weight", []int{256, 8}})
	return tinySafetensors(nil, ts)
}

// tinyTokenizer is a llama2.c tokenizer of the 3 specials, 256 bytes and
// a few merges.
func tinyTokenizer() ([]byte, int) {
	var toks []string
	toks = append(toks, "<unk>", "\n<s>\n", "\n</s>\n")
	for b := range 256 {
		toks = append(toks, fmt.Sprintf("<0x%02X>", b))
	}
	toks = append(toks, " ", "e", "t", " t", "th", " th", "he", " the")
	out := binary.LittleEndian.AppendUint32(nil, 8)
	for i, s := range toks {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(-i)))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(s)))
		out = append(out, s...)
	}
	return out, len(toks)
}

// fuzzBudget is the most weight bytes a fuzz input may describe: an
// archive of zero blocks can claim far more than it holds.
func fuzzBudget(n int) int64 { return 64<<10 + 8*int64(n) }

// FuzzOpen opens arbitrary bytes as a model (archive or checkpoint) and
// runs a few positions: errors, never a panic or a huge allocation; the
// same positions run together (Prefill) give the same logits.
func FuzzOpen(f *testing.F) {
	conf := []byte(`{"heads": 2}`)
	for _, b := range [][]byte{tinyLlama(), tinyGPT()} {
		f.Add(b, conf)
		a, err := codec.CompressBytes(context.Background(), b, nil, codec.EncodeOptions{})
		if err == nil {
			f.Add(a, conf)
		}
	}
	f.Fuzz(func(t *testing.T, data, conf []byte) {
		if len(data) >= 8 && bytes.Equal(data[:8], codec.Magic[:]) {
			rd, err := codec.NewMemReader(data)
			if err != nil {
				return
			}
			var total int64
			for _, fi := range rd.Files() {
				total += fi.Size
			}
			if total > fuzzBudget(len(data)) {
				return
			}
		}
		m, err := Open(bytes.NewReader(data), int64(len(data)), Options{Config: conf})
		if err != nil {
			return
		}
		defer m.Close()
		c := m.Config()
		var toks []int
		var want []float32
		for pos := range min(3, c.SeqLen) {
			toks = append(toks, (pos*7)%c.Vocab)
			l, err := m.Forward(toks[pos], pos)
			if err != nil {
				return
			}
			if len(l) != c.Vocab {
				t.Fatalf("%d logits, vocabulary %d", len(l), c.Vocab)
			}
			want = append(want, l...)
		}
		// the same tokens together give the same logits, bit for bit
		m2, err := Open(bytes.NewReader(data), int64(len(data)), Options{Config: conf})
		if err != nil {
			t.Fatalf("opened once, not twice: %v", err)
		}
		defer m2.Close()
		got, err := m2.Prefill(toks, 0)
		if err != nil {
			t.Fatalf("one at a time ran, together: %v", err)
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("position %d logit %d: together %v, one at a time %v", i/c.Vocab, i%c.Vocab, got[i], want[i])
			}
		}
	})
}

// FuzzTokenizer parses arbitrary tokenizer files and encodes prompts:
// every token inside the vocabulary, its pieces printable.
func FuzzTokenizer(f *testing.F) {
	tk, n := tinyTokenizer()
	f.Add(tk, uint16(n), "the theme")
	f.Add(tk, uint16(n), "héllo \x01")
	if d := sharedDir(); d != "" {
		if b, err := os.ReadFile(filepath.Join(d, "models/tokenizer/tok512.bin")); err == nil {
			f.Add(b, uint16(512), "Once upon a time")
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, vocab uint16, prompt string) {
		tok, err := ParseLlama2cTokenizer(data, int(vocab))
		if err != nil {
			return
		}
		ids, err := tok.Encode(prompt)
		if err != nil {
			return
		}
		for i, id := range ids {
			if id < 0 || id >= tok.Vocab() {
				t.Fatalf("token %d = %d outside the vocabulary of %d", i, id, tok.Vocab())
			}
			_ = tok.Piece(ids[max(i-1, 0)], id)
		}
	})
}

// TestFuzzSeeds keeps the committed seeds in step with the generators
// (go test -run TestFuzzSeeds -update-seeds rewrites them) and checks that
// the tiny models run and their archives give the same logits.
func TestFuzzSeeds(t *testing.T) {
	conf := []byte(`{"heads": 2}`)
	tk, n := tinyTokenizer()
	seeds := map[string]string{
		"FuzzOpen/llama":     fuzzFile(tinyLlama(), conf),
		"FuzzOpen/gpt":       fuzzFile(tinyGPT(), conf),
		"FuzzTokenizer/tiny": fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint16(%d)\nstring(%q)\n", tk, n, "the theme"),
	}
	var names []string
	for k := range seeds {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join("testdata", "fuzz", name)
		if *updateSeeds {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(seeds[name]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != seeds[name] {
			t.Errorf("%s is not what the generator writes (go test -run TestFuzzSeeds -update-seeds): %v", p, err)
		}
	}
	for _, b := range [][]byte{tinyLlama(), tinyGPT()} {
		m := openBytes(t, b, Options{Config: conf})
		a, err := codec.CompressBytes(context.Background(), b, nil, codec.EncodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ma := openBytes(t, a, Options{Config: conf})
		for pos := range 5 {
			l1, err := m.Forward(pos, pos)
			if err != nil {
				t.Fatal(err)
			}
			want := append([]float32(nil), l1...)
			l2, err := ma.Forward(pos, pos)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if math.Float32bits(want[i]) != math.Float32bits(l2[i]) || math.IsNaN(float64(want[i])) {
					t.Fatalf("%s position %d logit %d: %v from the file, %v from the archive", m.Config().Arch, pos, i, want[i], l2[i])
				}
			}
		}
	}
}

func fuzzFile(model, conf []byte) string {
	return fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\n", model, conf)
}
