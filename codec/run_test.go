package codec

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"neuralzip/dtype"
)

// Under a setup, blocks after the first of a tensor run reuse its plane
// and repeat-probe decisions (runMemo): the archive is the same at every
// thread count, decodes bit-exact, and a run never crosses into the next
// tensor (a tensor whose mantissas compress is not stored packed because
// the tensor before it was).
func TestSetupRuns(t *testing.T) {
	// a: near-uniform sign and mantissa bits (stored packed)
	a := realisticValues(dtype.BF16, 200000, 1)
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < len(a); i += 2 {
		v := binary.LittleEndian.Uint16(a[i:])&^0x807f | uint16(r.Uint32())&0x807f
		binary.LittleEndian.PutUint16(a[i:], v)
	}
	// b: exponents only, but for a few mantissa bits (its sign and
	// mantissa plane codes to almost nothing unless a decision carried
	// over from a says "packed")
	b := make([]byte, 2*200000)
	for i := 0; i < len(b); i += 2 {
		v := binary.LittleEndian.Uint16(a[i:]) &^ 0x807f
		if i%128 == 0 {
			v |= 1 // no trailing zero bits to drop: the plane keeps its width
		}
		binary.LittleEndian.PutUint16(b[i:], v)
	}
	src := append(append([]byte{}, a...), b...)
	segs := []Segment{
		{Name: "a", DType: dtype.BF16, Offset: 0, Length: int64(len(a))},
		{Name: "b", DType: dtype.BF16, Offset: int64(len(a)), Length: int64(len(b))},
	}
	s, err := BuildSetup([]Input{{Name: "m", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}}, SetupOptions{ChunkValues: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{1024, 4096} {
		var first []byte
		for _, th := range []int{1, 2, 3, 5} {
			arc, err := CompressBytes(src, segs, Options{ChunkValues: chunk, Threads: th, Setup: s})
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = arc
				got, err := DecompressBytes(arc, Options{})
				if err != nil || !bytes.Equal(got, src) {
					t.Fatalf("chunk %d: roundtrip failed (%v)", chunk, err)
				}
				// a alone (its planes near uniform) and b alone
				ra, _ := CompressBytes(a, segs[:1], Options{ChunkValues: chunk, Threads: 1, Setup: s})
				rb, _ := CompressBytes(b, []Segment{{Name: "b", DType: dtype.BF16, Length: int64(len(b))}}, Options{ChunkValues: chunk, Threads: 1, Setup: s})
				if len(arc) > len(ra)+len(rb)+len(b)/16 {
					t.Errorf("chunk %d: archive of a then b is %d bytes, of each alone %d + %d: b's planes were coded as a's", chunk, len(arc), len(ra), len(rb))
				}
				continue
			}
			if !bytes.Equal(arc, first) {
				t.Fatalf("chunk %d: archive with %d threads differs from one thread's", chunk, th)
			}
		}
	}
}
