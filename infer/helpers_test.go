package infer

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// sharedDir locates ../shared (the corpus), or "" when absent.
func sharedDir() string {
	for _, d := range []string{"../../shared", "../shared", "../../../shared"} {
		if st, err := os.Stat(filepath.Join(d, "models")); err == nil && st.IsDir() {
			return d
		}
	}
	return ""
}

// needFile returns the path of a corpus file, skipping without it.
func needFile(t testing.TB, rel string) string {
	t.Helper()
	d := sharedDir()
	if d == "" {
		t.Skip("../shared (real-weights corpus) not present; skipping")
	}
	p := filepath.Join(d, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not present; skipping", rel)
	}
	return p
}

func readFile(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openBytes opens a model held in memory (an archive or an original file).
func openBytes(t testing.TB, b []byte, opt Options) *Model {
	t.Helper()
	m, err := Open(bytes.NewReader(b), int64(len(b)), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// refEntry is one prompt of a greedy reference file.
type refEntry struct {
	Prompt       string          `json:"prompt"`
	PromptTokens []int           `json:"prompt_tokens"`
	Tokens       []int           `json:"tokens"`
	Text         string          `json:"text"`
	FullText     string          `json:"full_text"`
	Logits       [][]json.Number `json:"logits"`
	MinMargin    float64         `json:"min_margin"`
	MinMarginPos int             `json:"min_margin_pos"`
}

// logits parses a row of %.9g numbers as float32 (exact).
func (e *refEntry) logits(t testing.TB, i int) []float32 {
	out := make([]float32, len(e.Logits[i]))
	for j, s := range e.Logits[i] {
		v, err := strconv.ParseFloat(string(s), 32)
		if err != nil {
			t.Fatal(err)
		}
		out[j] = float32(v)
	}
	return out
}

// checkLogits compares a position's logits with the reference's.
func checkLogits(t testing.TB, what string, got, want []float32, tol float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d logits, reference %d", what, len(got), len(want))
	}
	worst := 0.0
	for j := range got {
		d := math.Abs(float64(got[j]) - float64(want[j]))
		worst = max(worst, d)
	}
	if worst > tol {
		t.Errorf("%s: logits differ by up to %.3g from the reference (tolerance %g)", what, worst, tol)
	}
	return worst
}
