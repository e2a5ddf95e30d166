package codec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
)

// TestRefRangeReal: EncodeOptions.Best codes real trajectory steps (bf16, f32 and
// AdamW states) with range-coded difference blocks where they are smaller,
// bit-exact, with the same archive at any thread count, and smaller than
// the default coding.
func TestRefRangeReal(t *testing.T) {
	dir := trajDir(t)
	read := func(step int, kind string) []byte { return readStep(t, dir, step, kind) }
	for _, c := range []struct {
		kind     string
		from, to int
	}{{"bf16", 950, 1000}, {"bf16", 0, 50}, {"bf16", 450, 500}, {"f32", 900, 1000}, {"optim", 500, 1000}} {
		prev, cur := read(c.from, c.kind), read(c.to, c.kind)
		ref := refOf(t, "prev.safetensors", prev)
		def := encodeRef(t, cur, ref, EncodeOptions{Threads: 2})
		best1 := encodeRef(t, cur, ref, EncodeOptions{Threads: 1, Best: true})
		best3 := encodeRef(t, cur, ref, EncodeOptions{Threads: 3, Best: true})
		if !bytes.Equal(best1, best3) {
			t.Fatalf("%s %d->%d: Best archive differs between 1 and 3 threads", c.kind, c.from, c.to)
		}
		out, err := DecompressBytes(context.Background(), best1, DecodeOptions{Ref: ref})
		if err != nil {
			t.Fatalf("%s %d->%d: %v", c.kind, c.from, c.to, err)
		}
		if sha256.Sum256(out) != sha256.Sum256(cur) {
			t.Fatalf("%s %d->%d: roundtrip differs", c.kind, c.from, c.to)
		}
		n2 := countRefMethod(t, best1, ref, refMethodRange)
		if len(best1) > len(def) {
			t.Fatalf("%s %d->%d: Best %d bytes, default %d", c.kind, c.from, c.to, len(best1), len(def))
		}
		if c.kind == "bf16" && n2 == 0 {
			t.Fatalf("%s %d->%d: no block chose the range coder", c.kind, c.from, c.to)
		}
		t.Logf("%s %d->%d: default %d, best %d (%.2f %% smaller), %d range-coded blocks", c.kind, c.from, c.to, len(def), len(best1), 100*(1-float64(len(best1))/float64(len(def))), n2)
	}
}

// countRefMethod counts the difference blocks of archive arc coded with
// method m.
func countRefMethod(t testing.TB, arc []byte, ref *Reference, m byte) int {
	t.Helper()
	rd, err := NewReader(Bytes(arc), int64(len(arc)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range rd.idx.files {
		for _, b := range f.blocks {
			if b.kind != kindRef || b.compLen == 0 {
				continue
			}
			if arc[b.compOff] == m {
				n++
			}
		}
	}
	return n
}

// BenchmarkRefRange: one thread decoding (and encoding, with EncodeOptions.Best)
// real bf16 steps coded against the step before, default and Best.
func BenchmarkRefRange(b *testing.B) {
	dir := trajDir(b)
	for _, c := range []struct{ from, to int }{{0, 50}, {950, 1000}} {
		prev, cur := readStep(b, dir, c.from, "bf16"), readStep(b, dir, c.to, "bf16")
		ref := refOf(b, "prev.safetensors", prev)
		for _, best := range []bool{false, true} {
			name := fmt.Sprintf("%d-%d/%s", c.from, c.to, map[bool]string{false: "default", true: "best"}[best])
			arc := encodeRef(b, cur, ref, EncodeOptions{Threads: 1, Best: best})
			b.Run(name+"/decode", func(b *testing.B) {
				b.SetBytes(int64(len(cur)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := DecompressBytes(context.Background(), arc, DecodeOptions{Threads: 1, Ref: ref, SkipHash: true}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/encode", func(b *testing.B) {
				b.SetBytes(int64(len(cur)))
				b.ReportAllocs()
				for b.Loop() {
					encodeRef(b, cur, ref, EncodeOptions{Threads: 1, Best: best})
				}
			})
		}
	}
}
