package codec

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/dtype"
)

// tensorCases are the inputs of the TensorCoder tests and benchmarks:
// synthetic sparse tensors of every type, and the real activations when
// ../shared is here.
func tensorCases(tb testing.TB) []struct {
	name string
	d    dtype.DType
	row  int
	src  []byte
} {
	type tc = struct {
		name string
		d    dtype.DType
		row  int
		src  []byte
	}
	var cs []tc
	for _, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32, dtype.F8E4M3, dtype.F8E5M2} {
		cs = append(cs, tc{"synthetic-" + d.String(), d, 512, sparseValues(d, 200000, 85, true, 11)})
	}
	cs = append(cs, tc{"dense-BF16", dtype.BF16, 512, sparseValues(dtype.BF16, 100000, 0, false, 12)})
	return cs
}

// realActivation is layer 0 of a file of ../shared/activations, or nil.
func realActivation(tb testing.TB, file string) []byte {
	d := sharedDir()
	if d == "" {
		return nil
	}
	src, err := os.ReadFile(filepath.Join(d, "activations", file))
	if err != nil {
		return nil
	}
	segs := safetensorsSegments(src)
	if len(segs) < 2 {
		return nil
	}
	return src[segs[1].Offset : segs[1].Offset+segs[1].Length]
}

func TestTensorCoderRoundTrip(t *testing.T) {
	cases := tensorCases(t)
	if a := realActivation(t, "relu2-step800.bf16.safetensors"); a != nil {
		cases = append(cases, struct {
			name string
			d    dtype.DType
			row  int
			src  []byte
		}{"step800-layer0", dtype.BF16, 512, a})
	}
	sizes := map[string]int{} // name/chunk: the fast frame's size
	for _, fast := range []bool{true, false} {
		for _, chunk := range []int{0, 1000} {
			c := &TensorCoder{Best: !fast, ChunkValues: chunk}
			for _, tc := range cases {
				frame, err := c.Encode(nil, tc.src, tc.d, tc.row)
				if err != nil {
					t.Fatal(err)
				}
				// the best mode tries every coding the fast one does
				key := fmt.Sprint(tc.name, "/", chunk)
				if fast {
					sizes[key] = len(frame)
				} else if len(frame) > sizes[key] {
					t.Errorf("%s chunk=%d: the best mode codes %d bytes, the fast mode %d", tc.name, chunk, len(frame), sizes[key])
				}
				if len(frame) > c.MaxEncodedLen(len(tc.src)/tc.d.Size(), tc.d) {
					t.Fatalf("%s: frame of %d bytes, MaxEncodedLen %d", tc.name, len(frame), c.MaxEncodedLen(len(tc.src)/tc.d.Size(), tc.d))
				}
				dst := bytes.Repeat([]byte{0x55}, len(tc.src))
				if err := c.Decode(dst, frame, tc.d); err != nil || !bytes.Equal(dst, tc.src) {
					t.Fatalf("%s fast=%v chunk=%d: %v", tc.name, fast, chunk, err)
				}
				t.Logf("%s fast=%v chunk=%d: %d -> %d bytes (%.2f×)", tc.name, fast, chunk, len(tc.src), len(frame), float64(len(tc.src))/float64(len(frame)))
				// damaged frames: an error, never a panic
				for _, cut := range []int{1, 2, 5, len(frame) / 2, len(frame) - 1} {
					if c.Decode(dst, frame[:cut], tc.d) == nil {
						t.Fatalf("%s: a frame cut at %d decodes", tc.name, cut)
					}
				}
				if c.Decode(dst[:len(dst)-tc.d.Size()], frame, tc.d) == nil {
					t.Fatalf("%s: decodes into a buffer one value short", tc.name)
				}
				if c.Decode(dst, frame, dtype.F64) == nil {
					t.Fatalf("%s: decodes as F64", tc.name)
				}
			}
		}
	}
	if _, err := (&TensorCoder{}).Encode(nil, []byte{1, 2, 3}, dtype.BF16, 0); err == nil {
		t.Fatal("odd byte count accepted")
	}
}

// TestTensorCoderNoAllocs: once warm, Encode into a buffer of
// MaxEncodedLen and Decode allocate nothing.
func TestTensorCoderNoAllocs(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("allocation counts are not meaningful under -cover or -race")
	}
	for _, tc := range tensorCases(t) {
		for _, fast := range []bool{false, true} {
			c := &TensorCoder{Best: !fast}
			n := len(tc.src) / tc.d.Size()
			out := make([]byte, 0, c.MaxEncodedLen(n, tc.d))
			dst := make([]byte, len(tc.src))
			frame, _ := c.Encode(out, tc.src, tc.d, tc.row)
			if err := c.Decode(dst, frame, tc.d); err != nil {
				t.Fatal(err)
			}
			if a := testing.AllocsPerRun(5, func() { frame, _ = c.Encode(out, tc.src, tc.d, tc.row) }); a != 0 {
				t.Errorf("%s fast=%v: Encode allocates %v times per call", tc.name, fast, a)
			}
			if a := testing.AllocsPerRun(5, func() { _ = c.Decode(dst, frame, tc.d) }); a != 0 {
				t.Errorf("%s fast=%v: Decode allocates %v times per call", tc.name, fast, a)
			}
		}
	}
}

// BenchmarkTensorCoder codes layer 0 of the step-800 activations (BF16
// and FP8), or the synthetic tensors without ../shared; ns/value is per
// value of the tensor.
func BenchmarkTensorCoder(b *testing.B) {
	type in struct {
		name string
		d    dtype.DType
		src  []byte
	}
	var ins []in
	for _, f := range []struct {
		file string
		d    dtype.DType
	}{{"relu2-step800.bf16.safetensors", dtype.BF16}, {"relu2-step800.f8e4m3.safetensors", dtype.F8E4M3}} {
		if a := realActivation(b, f.file); a != nil {
			ins = append(ins, in{"step800-" + f.d.String(), f.d, a})
		}
	}
	if ins == nil {
		for _, tc := range tensorCases(b)[:4] {
			ins = append(ins, in{tc.name, tc.d, tc.src})
		}
	}
	for _, x := range ins {
		n := len(x.src) / x.d.Size()
		for _, fast := range []bool{false, true} {
			mode := "best"
			if fast {
				mode = "fast"
			}
			c := &TensorCoder{Best: !fast}
			out := make([]byte, 0, c.MaxEncodedLen(n, x.d))
			frame, _ := c.Encode(out, x.src, x.d, 512)
			dst := make([]byte, len(x.src))
			b.Run(x.name+"/"+mode+"/encode", func(b *testing.B) {
				b.SetBytes(int64(len(x.src)))
				for b.Loop() {
					c.Encode(out, x.src, x.d, 512)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/value")
				b.ReportMetric(float64(len(x.src))/float64(len(frame)), "ratio")
			})
			b.Run(x.name+"/"+mode+"/decode", func(b *testing.B) {
				b.SetBytes(int64(len(x.src)))
				for b.Loop() {
					if err := c.Decode(dst, frame, x.d); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/value")
			})
		}
	}
}
