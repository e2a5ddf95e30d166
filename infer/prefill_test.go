package infer

import (
	"math"
	"testing"

	"neuralzip/codec"
)

// TestPrefillExact: running tokens together (Model.Prefill, as Generate
// runs the prompt) gives the logits of running them one at a time, bit
// for bit, from the original file and from an archive (where the batch
// decodes the weights once).
func TestPrefillExact(t *testing.T) {
	cases := exactCases(t)
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			orig := readFile(t, needFile(t, c.file))
			// a sequence of 24 tokens: the prompt and what follows it
			res := runN(t, openBytes(t, orig, Options{Config: c.config}), c, 24)
			toks := res.Tokens
			vocab := 0
			for _, src := range []struct {
				name string
				data []byte
			}{{"original", orig}, {"archive", compress(t, orig, codec.EncodeOptions{})}} {
				one := openBytes(t, src.data, Options{Config: c.config})
				vocab = one.Config().Vocab
				var want []float32
				var first int64 // decoded by the first token
				for pos, tok := range toks {
					l, err := one.Forward(tok, pos)
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, l...)
					if pos == 0 {
						first = one.Memory().Decoded
					}
				}
				// all at once, and in three uneven batches
				for _, cuts := range [][]int{{0, len(toks)}, {0, 1, 7, len(toks)}} {
					m := openBytes(t, src.data, Options{Config: c.config})
					var got []float32
					var decoded []int64
					for i := 0; i+1 < len(cuts); i++ {
						before := m.Memory().Decoded
						l, err := m.Prefill(toks[cuts[i]:cuts[i+1]], cuts[i])
						if err != nil {
							t.Fatal(err)
						}
						got = append(got, l...)
						decoded = append(decoded, m.Memory().Decoded-before)
					}
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s, batches %v: position %d logit %d is %v, one at a time %v", src.name, cuts, i/vocab, i%vocab, got[i], want[i])
						}
					}
					if m.FromArchive() {
						// each batch decodes no more than one token does
						for i, d := range decoded {
							if d > first {
								t.Errorf("batch %d of %v decoded %d bytes, the first token alone %d", i, cuts, d, first)
							}
						}
					}
				}
			}
		})
	}
}

// Prefill checks its input like Forward.
func TestPrefillErrors(t *testing.T) {
	m := openBytes(t, tinyLlama(), Options{})
	cfg := m.Config()
	for _, c := range []struct {
		tokens []int
		pos    int
	}{{nil, 0}, {[]int{1, cfg.Vocab}, 0}, {[]int{-1}, 0}, {[]int{1, 2}, cfg.SeqLen - 1}, {[]int{1}, -1}} {
		if _, err := m.Prefill(c.tokens, c.pos); err == nil {
			t.Errorf("Prefill(%v, %d) gave no error", c.tokens, c.pos)
		}
	}
	if _, err := m.Prefill([]int{1, 2}, cfg.SeqLen-2); err != nil {
		t.Errorf("the last two positions: %v", err)
	}
}

// From an archive, a token decodes its tensors straight into the arena:
// after the first tokens nothing is allocated per tensor (what remains is
// the key/value cache and attention buffers growing, amortized).
func TestArchiveAllocs(t *testing.T) {
	if raceOn {
		t.Skip("the race detector's sync.Pool drops items at random: allocation counts say nothing")
	}
	atLeastTwoProcs(t)
	orig := readFile(t, needFile(t, "models/original/stories260K.bf16.safetensors"))
	a := compress(t, orig, codec.EncodeOptions{})
	for _, prefetch := range []bool{false, true} {
		m := openBytes(t, a, Options{Prefetch: prefetch})
		pos := 0
		for ; pos < 4; pos++ {
			if _, err := m.Forward(1, pos); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(40, func() {
			if _, err := m.Forward(1, pos); err != nil {
				t.Fatal(err)
			}
			pos++
		})
		// 47 tensors per token: one allocation per tensor would be ≥ 47
		if allocs > 2 {
			t.Errorf("prefetch=%v: %.0f allocations per token", prefetch, allocs)
		}
	}
}
