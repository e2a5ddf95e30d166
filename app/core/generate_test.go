package core

import (
	"context"
	"strings"
	"testing"
)

// TestDemoGenerator runs the embedded stories260K from its archive: the
// greedy story llama2.c tells, tokens streamed, less memory than the
// weights, logits identical to the original weights'.
func TestDemoGenerator(t *testing.T) {
	g, err := DemoGenerator()
	if err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	res, err := g.Generate(context.Background(), GenerateRequest{Prompt: "Once upon a time", N: 24, Check: true}, func(p string) { streamed.WriteString(p) })
	if err != nil {
		t.Fatal(err)
	}
	// llama2.c's greedy continuation (../shared/models/reference/stories260K.bf16.greedy.json)
	const want = ", there was a little girl named Lily. She loved to play outside in the park."
	if !strings.HasPrefix(want, res.Text) || len(res.Text) < 40 || streamed.String() != res.Text {
		t.Errorf("text %q (streamed %q), want a prefix of %q", res.Text, streamed.String(), want)
	}
	if !res.Checked || !res.Identical {
		t.Errorf("checked %v identical %v", res.Checked, res.Identical)
	}
	w, a := g.Sizes()
	if res.Memory.Weights != w || res.Memory.Compressed != a || res.Memory.Peak > w*8/10 {
		t.Errorf("memory %+v, weights %d, archive %d", res.Memory, w, a)
	}
	// sampling reproduces with a seed
	r1, err := g.Generate(context.Background(), GenerateRequest{Prompt: "Lily", N: 16, Temperature: 1, TopP: 0.9, Seed: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := g.Generate(context.Background(), GenerateRequest{Prompt: "Lily", N: 16, Temperature: 1, TopP: 0.9, Seed: 5}, nil)
	if err != nil || r1.Text != r2.Text || r1.LogitsSHA256 != r2.LogitsSHA256 {
		t.Errorf("seed 5: %q vs %q (%v)", r1.Text, r2.Text, err)
	}
	// cancelled: an error, not a hang
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Generate(ctx, GenerateRequest{Prompt: "Tom", N: 16}, nil); err == nil {
		t.Error("a cancelled generation reported no error")
	}
}
