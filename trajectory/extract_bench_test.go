package trajectory

import (
	"bytes"
	"context"
	"testing"

	"neuralzip/codec"
)

// chain10 packs the first ten steps of the real bf16 trajectory with K =
// 10, each frame coded against the one before (mode RefPrevious) or
// against frame 0 (RefKeyframe), and returns the archive and the tenth
// step (frame 9: a chain of a keyframe and nine frames, or of two).
func chain10(tb testing.TB, mode RefMode) (*Archive, step) {
	steps := realSteps(tb, "bf16")
	if len(steps) < 10 {
		tb.Skip("fewer than 10 steps")
	}
	f := pack(tb, steps[:10], 10, mode, 0)
	a, err := Open(f, int64(len(f.b)))
	if err != nil {
		tb.Fatal(err)
	}
	return a, steps[9]
}

// BenchmarkExtract extracts the last frame of the first K = 10 group of the
// real bf16 trajectory (a chain of a keyframe and nine frames, each coded
// against the one before); .../independent decodes that step's own archive.
func BenchmarkExtract(b *testing.B) {
	a, last := chain10(b, RefPrevious)
	want := last.data
	b.Run("chain10", func(b *testing.B) {
		b.SetBytes(int64(len(want)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			got, err := a.Extract(context.Background(), 9, codec.DecodeOptions{})
			if err != nil || !bytes.Equal(got.Data, want) {
				b.Fatal("extract", err)
			}
		}
	})
	// the same frame through Stream (bounded memory: what nzip trajectory
	// extract writes), into a buffer of the frame's size
	out := bytes.NewBuffer(make([]byte, 0, len(want)))
	b.Run("stream10", func(b *testing.B) {
		b.SetBytes(int64(len(want)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			out.Reset()
			s, err := a.Stream(9)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.WriteFile(context.Background(), out, 0, codec.DecodeOptions{}); err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
		if !bytes.Equal(out.Bytes(), want) {
			b.Fatal("stream")
		}
	})
	ind, _ := codec.CompressBytes(context.Background(), want, last.segs, codec.EncodeOptions{})
	b.Run("independent", func(b *testing.B) {
		b.SetBytes(int64(len(want)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := codec.DecompressBytes(context.Background(), ind, codec.DecodeOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
