package codec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/dtype"
)

// refBenchPair loads two steps of the real trajectory (or generated data).
func refBenchPair(b testing.TB, from, to int) (prev, cur []byte) {
	dir := trajDir(b)
	var err error
	if prev, err = os.ReadFile(filepath.Join(dir, fmt.Sprintf("step_%06d.bf16.safetensors", from))); err != nil {
		b.Fatal(err)
	}
	if cur, err = os.ReadFile(filepath.Join(dir, fmt.Sprintf("step_%06d.bf16.safetensors", to))); err != nil {
		b.Fatal(err)
	}
	return prev, cur
}

// BenchmarkRefDecode decodes a step coded against the previous one;
// BenchmarkRefDecode/independent decodes the same step coded on its own.
func BenchmarkRefDecode(b *testing.B) {
	for _, c := range [][2]int{{0, 50}, {950, 1000}} {
		prev, cur := refBenchPair(b, c[0], c[1])
		ref := refOf(b, "prev", prev)
		arc := encodeRef(b, cur, ref, EncodeOptions{})
		ind, _ := CompressBytes(context.Background(), cur, safetensorsSegments(cur), EncodeOptions{})
		for _, v := range []struct {
			name string
			arc  []byte
			opt  EncodeOptions
		}{{"ref", arc, EncodeOptions{Ref: ref, Threads: 1}}, {"independent", ind, EncodeOptions{Threads: 1}}} {
			b.Run(fmt.Sprintf("%d-%d/%s", c[0], c[1], v.name), func(b *testing.B) {
				b.SetBytes(int64(len(cur)))
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					out, err := DecompressBytes(context.Background(), v.arc, v.opt.Decoding())
					if err != nil || !bytes.Equal(out, cur) {
						b.Fatal("roundtrip", err)
					}
				}
			})
		}
	}
}

// BenchmarkRefEncode codes a step against the previous one (1 thread).
func BenchmarkRefEncode(b *testing.B) {
	for _, c := range [][2]int{{0, 50}, {950, 1000}} {
		prev, cur := refBenchPair(b, c[0], c[1])
		ref := refOf(b, "prev", prev)
		b.Run(fmt.Sprintf("%d-%d", c[0], c[1]), func(b *testing.B) {
			b.SetBytes(int64(len(cur)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				encodeRef(b, cur, ref, EncodeOptions{Threads: 1})
			}
		})
	}
}

// BenchmarkRefBlockDecode decodes one 65536-value BF16 block of the real
// trajectory (step 0 → 50, where every value changes) against its
// reference, without the container.
func BenchmarkRefBlockDecode(b *testing.B) {
	prev, cur := refBenchPair(b, 0, 50)
	var seg Segment
	for _, s := range safetensorsSegments(cur) {
		if s.Length == 2*65536 {
			seg = s
			break
		}
	}
	in, ref := cur[seg.Offset:seg.Offset+seg.Length], prev[seg.Offset:seg.Offset+seg.Length]
	be := &blockEncoder{}
	p, _ := be.encodeRefFloat(nil, in, ref, dtype.BF16)
	bd := &blockDecoder{}
	dst := make([]byte, len(in))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := bd.decodeRefFloat(dst, p, ref, dtype.BF16); err != nil {
			b.Fatal(err)
		}
	}
	if !bytes.Equal(dst, in) {
		b.Fatal("roundtrip")
	}
}

// BenchmarkRefBlockDecodeIndependent decodes the same block coded on its own.
func BenchmarkRefBlockDecodeIndependent(b *testing.B) {
	_, cur := refBenchPair(b, 0, 50)
	var seg Segment
	for _, s := range safetensorsSegments(cur) {
		if s.Length == 2*65536 {
			seg = s
			break
		}
	}
	in := cur[seg.Offset : seg.Offset+seg.Length]
	be := &blockEncoder{}
	p := be.encodeFloat(nil, in, dtype.BF16)
	bd := &blockDecoder{}
	dst := make([]byte, len(in))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := bd.decode(dst, p, kindFloat, dtype.BF16); err != nil {
			b.Fatal(err)
		}
	}
}
