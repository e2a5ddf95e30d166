package codec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lukechampine.com/blake3"

	"neuralzip/dtype"
)

func realFiles(t testing.TB) []string {
	d := needShared(t)
	var out []string
	for _, pat := range []string{"models/bench/*", "models/original/*", "models/original/*/*", "trajectories/*/*.safetensors"} {
		m, _ := filepath.Glob(filepath.Join(d, pat))
		for _, f := range m {
			if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
				out = append(out, f)
			}
		}
	}
	return out
}

func TestRoundTripRealFiles(t *testing.T) {
	files := realFiles(t)
	if testing.Short() && len(files) > 6 {
		files = files[:6]
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			segs := safetensorsSegments(src)
			a1 := roundTrip(t, src, segs, EncodeOptions{Threads: 1})
			a2 := roundTrip(t, src, segs, EncodeOptions{Threads: 2})
			if !bytes.Equal(a1, a2) {
				t.Fatalf("archive differs between 1 and 2 threads")
			}
			t.Logf("%d -> %d bytes, ratio %.4f", len(src), len(a1), float64(len(src))/float64(len(a1)))
		})
	}
}

// ReadFile and WriteFile hash the file while its blocks are decoded: at
// every thread count the result checks out, and a stored digest (BLAKE3
// or SHA-256) that does not match is refused (every block's CRC being
// right). Encode stores the digest it is asked for, the same at every
// thread count.
func TestReadFileHash(t *testing.T) {
	src := realisticValues(dtype.BF16, 300000, 21)
	segs := []Segment{{Name: "w", DType: dtype.BF16, Offset: 0, Length: int64(len(src))}}
	for _, d := range []Digest{DigestBLAKE3, DigestSHA256} {
		arc, err := CompressBytes(context.Background(), src, segs, EncodeOptions{ChunkValues: 4096, Digest: d})
		if err != nil {
			t.Fatal(err)
		}
		for _, th := range []int{1, 3} {
			if arc2, err := CompressBytes(context.Background(), src, segs, EncodeOptions{ChunkValues: 4096, Digest: d, Threads: th}); err != nil || !bytes.Equal(arc, arc2) {
				t.Fatalf("%v: archive differs at %d threads (%v)", d, th, err)
			}
		}
		want := [32]byte(blake3.Sum256(src))
		if d == DigestSHA256 {
			want = sha256.Sum256(src)
		}
		if rd, err := NewMemReader(arc); err != nil || rd.Files()[0].Digest != d || rd.Files()[0].Sum != want || (rd.Files()[0].SHA256 != [32]byte{}) != (d == DigestSHA256) {
			t.Fatalf("%v: the archive holds %+v (%v), want the digest %x", d, rd.Files()[0], err, want)
		}
		for _, th := range []int{1, 2, 3, 8} {
			rd, err := NewMemReader(arc)
			if err != nil {
				t.Fatal(err)
			}
			out, err := rd.ReadFile(context.Background(), 0, DecodeOptions{Threads: th})
			if err != nil || !bytes.Equal(out, src) {
				t.Fatalf("%v threads %d: %v", d, th, err)
			}
			// into a used buffer (not cleared first: every byte is decoded),
			// and into one too small (a new slice)
			dirty := bytes.Repeat([]byte{0xa5}, len(src)+7)
			out, err = rd.ReadFileTo(context.Background(), dirty, 0, DecodeOptions{Threads: th})
			if err != nil || !bytes.Equal(out, src) || &out[0] != &dirty[0] {
				t.Fatalf("%v threads %d: ReadFileTo a used buffer: %v", d, th, err)
			}
			small := make([]byte, 10)
			out, err = rd.ReadFileTo(context.Background(), small, 0, DecodeOptions{Threads: th})
			if err != nil || !bytes.Equal(out, src) || &out[0] == &small[0] {
				t.Fatalf("%v threads %d: ReadFileTo a small buffer: %v", d, th, err)
			}
			if err := rd.WriteFile(context.Background(), io.Discard, 0, DecodeOptions{Threads: th}); err != nil {
				t.Fatalf("%v threads %d: WriteFile: %v", d, th, err)
			}
			for _, bit := range []int{0, 255} {
				rd.idx.files[0].Sum[bit/8] ^= 1 << (bit % 8)
				if _, err := rd.ReadFile(context.Background(), 0, DecodeOptions{Threads: th}); !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), d.String()) {
					t.Fatalf("%v threads %d: wrong digest gave %v, want ErrChecksum", d, th, err)
				}
				if err := rd.WriteFile(context.Background(), io.Discard, 0, DecodeOptions{Threads: th}); !errors.Is(err, ErrChecksum) {
					t.Fatalf("%v threads %d: WriteFile with a wrong digest gave %v, want ErrChecksum", d, th, err)
				}
				if _, err := rd.ReadFile(context.Background(), 0, DecodeOptions{Threads: th, SkipHash: true}); err != nil {
					t.Fatalf("%v threads %d: SkipHash: %v", d, th, err)
				}
				rd.idx.files[0].Sum[bit/8] ^= 1 << (bit % 8)
			}
		}
	}
}

// CompressBytes reads its input in place: it must leave it as it was, for
// every dtype's edge cases, a real file and coding against a reference.
func TestCompressBytesLeavesInput(t *testing.T) {
	check := func(name string, src []byte, segs []Segment, opt EncodeOptions) {
		t.Helper()
		keep := bytes.Clone(src)
		arc, err := CompressBytes(context.Background(), src, segs, opt)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(src, keep) {
			t.Fatalf("%s: CompressBytes changed its input", name)
		}
		out, err := DecompressBytes(context.Background(), arc, DecodeOptions{Ref: opt.Ref})
		if err != nil || !bytes.Equal(out, keep) {
			t.Fatalf("%s: roundtrip: %v", name, err)
		}
	}
	for _, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32, dtype.F64, dtype.F8E4M3, dtype.F8E5M2} {
		src, segs := tensorFile(d, edgeTensors(d))
		check(d.String(), src, segs, EncodeOptions{Threads: 2})
		// against a reference that differs in a few values
		other := bytes.Clone(src)
		for i := 1; i < len(other); i += 97 {
			other[i] ^= 1
		}
		check(d.String()+" with a reference", src, segs, EncodeOptions{Threads: 2, Ref: refOfSegs(t, other, segs)})
	}
	if d := sharedDir(); d != "" {
		src, err := os.ReadFile(filepath.Join(d, "models/bench/real-bf16.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		check("real-bf16", src, safetensorsSegments(src), EncodeOptions{})
	}
}

func refOfSegs(t *testing.T, b []byte, segs []Segment) *Reference {
	t.Helper()
	ref, err := NewReference([]Input{{Name: "ref", R: bytes.NewReader(b), Size: int64(len(b)), Segments: segs}})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// makeNoZero gives slices of the asked length that do not overlap and keep
// what is written to them.
func TestMakeNoZero(t *testing.T) {
	for _, n := range []int{0, 1, 1 << 16, 1<<20 + 3} {
		a, b := makeNoZero(n), makeNoZero(n)
		if len(a) != n || len(b) != n {
			t.Fatalf("n=%d: lengths %d, %d", n, len(a), len(b))
		}
		for i := range a {
			a[i] = byte(i)
		}
		for i := range b {
			b[i] = byte(i) ^ 0xff
		}
		for i := range a {
			if a[i] != byte(i) {
				t.Fatalf("n=%d: byte %d changed", n, i)
			}
		}
	}
}
