package gpu

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"neuralzip/codec"
)

// FuzzPlan feeds arbitrary archive bytes to the plan builder and the
// kernels' twin: an error or an exact file, never a panic or a hang.
func FuzzPlan(f *testing.F) {
	rng := rand.New(rand.NewPCG(15, 16))
	src, segs := edgeFile(rng)
	for _, chunk := range []int{1000, 65536} {
		var buf bytes.Buffer
		if _, err := codec.Encode(context.Background(), &buf, []codec.Input{{Name: "f", R: bytes.NewReader(src[:40000]), Size: 40000, Segments: clip(segs, 40000)}}, codec.EncodeOptions{ChunkValues: chunk}); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	// sparse blocks (mask decoded by the planner, values scattered by merge)
	var sp []byte
	var spSegs []codec.Segment
	for _, s := range segs {
		if strings.Contains(s.Name, ".sparse.") && len(sp)+int(s.Length) <= 40000 {
			t := s
			t.Offset = int64(len(sp))
			spSegs = append(spSegs, t)
			sp = append(sp, src[s.Offset:s.Offset+s.Length]...)
		}
	}
	var buf bytes.Buffer
	if _, err := codec.Encode(context.Background(), &buf, []codec.Input{{Name: "f", R: bytes.NewReader(sp), Size: int64(len(sp)), Segments: spSegs}}, codec.EncodeOptions{ChunkValues: 4096}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	goldens, _ := filepath.Glob("../codec/testdata/golden-v*.nzip")
	for _, g := range goldens {
		if b, err := os.ReadFile(g); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rd, err := codec.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		// At most 64 KiB + 8 bytes per input byte of output in all: a
		// few bytes of index can describe megabytes of zeros, and decoding
		// them slowed the fuzzer to a crawl (issue 28). Larger files are
		// only planned: their blocks' payloads parsed, nothing decoded.
		budget := 64<<10 + 8*int64(len(data))
		for fi, fl := range rd.Files() {
			if fl.Size > budget {
				_, _ = NewPlan(rd, bytes.NewReader(data), fi)
				continue
			}
			budget -= fl.Size
			out, res, err := DecodeFile(context.Background(), rd, bytes.NewReader(data), fi, CPU(1), Options{Hist: true})
			if err == nil && (!res.Exact || int64(len(out)) != fl.Size) {
				t.Fatal("success without an exact file")
			}
		}
	})
}

// clip keeps the segments that end within n bytes and one opaque segment
// for the rest.
func clip(segs []codec.Segment, n int64) []codec.Segment {
	var out []codec.Segment
	var end int64
	for _, s := range segs {
		if s.Offset+s.Length > n {
			break
		}
		out = append(out, s)
		end = s.Offset + s.Length
	}
	if end < n {
		out = append(out, codec.Segment{Offset: end, Length: n - end})
	}
	return out
}
