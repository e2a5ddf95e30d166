package codec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand"
	"strings"
	"testing"

	"lukechampine.com/blake3"
	"lukechampine.com/blake3/guts"

	"neuralzip/codec/b3"
	"neuralzip/dtype"
)

// BLAKE3's official test vectors (test_vectors.json of the BLAKE3
// repository): the input is n bytes i % 251, the hash its first 32 bytes
// of output.
var blake3Vectors = []struct {
	n    int
	hash string
}{
	{0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"},
	{1, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"},
	{1023, "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11"},
	{1024, "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"},
	{1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"},
	{8193, "bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3b"},
	{16384, "f875d6646de28985646f34ee13be9a576fd515f76b5b0a26bb324735041ddde4"},
	{31744, "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47"},
	{100000, "d93c23eedaf165a7e0be908ba86f1a7a520d568d2d13cde787c8580c5c72cc54"},
}

// splits are ways workers may hold a file of n bytes: whole, in parts of
// a few chunks, of odd sizes around the group size, and random ones.
func splits(n int, rng *rand.Rand) [][]int {
	cut := func(size func() int) []int {
		var p []int
		for left := n; left > 0; {
			k := min(max(size(), 1), left)
			p = append(p, k)
			left -= k
		}
		return p
	}
	out := [][]int{{n}}
	for _, s := range []int{1000, treeGroup - 1, treeGroup + 1, 3*treeGroup + 517, 256<<10 + 12345} {
		out = append(out, cut(func() int { return s }))
	}
	out = append(out, cut(func() int { return rng.Intn(5 * treeGroup) }))
	out = append(out, cut(func() int { return rng.Intn(100) }))
	return out
}

func TestBLAKE3Vectors(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, v := range blake3Vectors {
		b := make([]byte, v.n)
		for i := range b {
			b[i] = byte(i % 251)
		}
		want := v.hash
		if got := DigestBLAKE3.New().Sum(b[:0:0]); true {
			h := DigestBLAKE3.New()
			h.Write(b)
			if got = h.Sum(nil); hex.EncodeToString(got) != want {
				t.Errorf("%d bytes: Digest.New gives %x, want %s", v.n, got, want)
			}
		}
		for _, parts := range splits(v.n, rng) {
			if got := treeSum(b, parts); hex.EncodeToString(got[:]) != want {
				t.Errorf("%d bytes in parts %v: %x, want %s", v.n, parts, got, want)
			}
		}
	}
}

// TestTreeSum: the digest merged from any split of a file is BLAKE3 of
// the file, for sizes around chunks, groups and subtrees of groups.
func TestTreeSum(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	const G = treeGroup
	sizes := []int{0, 1, 1023, 1024, 1025, G - 1, G, G + 1, 2*G - 1, 2 * G, 2*G + 1, 3*G + 5, 4 * G, 8*G - 1024, 8 * G, 8*G + 1,
		64*G - 1, 64 * G, 64*G + 1, 1<<20 + 1, 5<<20 + 12347}
	if testing.Short() {
		sizes = sizes[:16]
	}
	// every number of chunks in a last group (hashed in one SIMD pass),
	// alone and after one, two and three whole groups, its last chunk
	// whole or not
	for _, before := range []int{0, G, 2 * G, 3 * G} {
		for k := 0; k <= 16; k++ {
			for _, d := range []int{-1, 0, 1} {
				if n := before + k*1024 + d; n >= 0 {
					sizes = append(sizes, n)
				}
			}
		}
	}
	for _, n := range sizes {
		b := make([]byte, n)
		rng.Read(b)
		want := blake3.Sum256(b)
		for _, parts := range splits(n, rng) {
			if got := treeSum(b, parts); got != want {
				t.Fatalf("%d bytes in %d parts (%v...): %x, want %x", n, len(parts), parts[:min(len(parts), 4)], got, want)
			}
		}
	}
}

// TestTreeAddOrder: a part merged out of order is an error, not a wrong
// digest.
func TestTreeAddOrder(t *testing.T) {
	b := make([]byte, 8*treeGroup)
	var p1, p2 treePart
	p1.hash(b[:4*treeGroup], 0, int64(len(b)))
	p2.hash(b[4*treeGroup:], 4*treeGroup, int64(len(b)))
	var h treeHash
	if err := h.add(&p2); err == nil {
		t.Fatal("second part first: no error")
	}
}

// TestSubtreeCVTwin compares the chaining values of subtrees of groups
// computed by the library's SIMD code (CompressBuffer: AVX-512 or AVX2 on
// amd64) with those of its pure-Go chunk compression and parent nodes.
func TestSubtreeCVTwin(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	b := make([]byte, 8*treeGroup)
	rng.Read(b)
	goCV := func(b []byte, chunk uint64) [8]uint32 {
		var cvs [][8]uint32
		for i := 0; i < len(b); i += guts.ChunkSize {
			cvs = append(cvs, guts.ChainingValue(guts.CompressChunk(b[i:i+guts.ChunkSize], &guts.IV, chunk+uint64(i/guts.ChunkSize), 0)))
		}
		for len(cvs) > 1 {
			var next [][8]uint32
			for i := 0; i < len(cvs); i += 2 {
				next = append(next, parentCV(cvs[i], cvs[i+1]))
			}
			cvs = next
		}
		return cvs[0]
	}
	for h := 0; h <= 3; h++ {
		n := treeGroup << h
		for _, g := range []uint64{0, 1 << h, 5 << h, 1<<40 + 3<<h} {
			if got, want := b3.SubtreeCV(b[:n], g*guts.MaxSIMD), goCV(b[:n], g*guts.MaxSIMD); got != want {
				t.Errorf("2^%d groups at group %d: SIMD %x, Go %x", h, g, got, want)
			}
		}
	}
}

// The index records each file's digest kind (version 7): a kind this
// package does not know is refused, and an archive rewritten as version 3
// (no kind: SHA-256) still decodes and checks its SHA-256.
func TestIndexDigestKind(t *testing.T) {
	src := realisticValues(dtype.BF16, 5000, 4)
	segs := []Segment{{Name: "w", DType: dtype.BF16, Length: int64(len(src))}}
	arc, err := CompressBytes(context.Background(), src, segs, EncodeOptions{Digest: DigestSHA256})
	if err != nil {
		t.Fatal(err)
	}
	old := withVersion(t, arc, 3)
	rd, err := NewMemReader(old)
	if err != nil {
		t.Fatal(err)
	}
	if f := rd.Files()[0]; rd.idx.version != 3 || f.Digest != DigestSHA256 || f.Sum != sha256.Sum256(src) {
		t.Fatalf("version %d archive holds the %v digest %x", rd.idx.version, f.Digest, f.Sum)
	}
	if out, err := rd.ReadFile(context.Background(), 0, DecodeOptions{}); err != nil || !bytes.Equal(out, src) {
		t.Fatalf("version 3 rewrite: %v", err)
	}
	rd, err = NewMemReader(arc)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []Digest{0, 3, 255} {
		x := *rd.idx
		f := *x.files[0]
		f.Digest = k
		x.files = []*FileInfo{&f}
		if _, err := unmarshalIndex(x.marshal(), payloadLen(rd), Version); err == nil || !strings.Contains(err.Error(), "unknown digest kind") {
			t.Errorf("digest kind %d: %v", k, err)
		}
	}
	if _, err := CompressBytes(context.Background(), src, segs, EncodeOptions{Digest: 3}); err == nil {
		t.Error("Encode takes an unknown digest kind")
	}
}

// payloadLen is the bytes of block payloads in an archive.
func payloadLen(rd *Reader) int64 {
	var n int64
	for _, f := range rd.idx.files {
		n += f.Compressed
	}
	return n
}

// Encode from files (read by the workers or the hashers, whichever comes
// first) stores each file's BLAKE3, empty files included, the same at any
// thread count, and the archive verifies.
func TestEncodeDigestFiles(t *testing.T) {
	a := realisticValues(dtype.BF16, 400000, 7)
	c := make([]byte, 3*treeGroup+11)
	rand.New(rand.NewSource(8)).Read(c)
	files := [][]byte{a, nil, c}
	var first []byte
	for _, th := range []int{1, 2, 3} {
		var ins []Input
		for i, f := range files {
			in := Input{Name: string(rune('a' + i)), R: bytes.NewReader(f), Size: int64(len(f))}
			if i == 0 {
				in.Segments = []Segment{{Offset: 0, Length: 1001}, {Name: "w", DType: dtype.BF16, Offset: 1001, Length: int64(len(a)) - 1001 - 1}, {Offset: int64(len(a)) - 1, Length: 1}}
			}
			ins = append(ins, in)
		}
		var buf bytes.Buffer
		if _, err := Encode(context.Background(), &buf, ins, EncodeOptions{Threads: th, ChunkValues: 5000}); err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = buf.Bytes()
		} else if !bytes.Equal(first, buf.Bytes()) {
			t.Fatalf("threads %d: the archive differs", th)
		}
		// the sums given (EncodeOptions.Sums): the same archive, not hashed
		var sums [][32]byte
		for _, f := range files {
			sums = append(sums, blake3.Sum256(f))
		}
		var given bytes.Buffer
		if _, err := Encode(context.Background(), &given, ins, EncodeOptions{Threads: th, ChunkValues: 5000, Sums: sums}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, given.Bytes()) {
			t.Fatalf("threads %d, sums given: the archive differs", th)
		}
		if _, err := Encode(context.Background(), io.Discard, ins, EncodeOptions{Threads: th, Sums: sums[:2]}); err == nil {
			t.Fatal("two sums for three inputs: no error")
		}
	}
	rd, err := NewMemReader(first)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range rd.Files() {
		if f.Digest != DigestBLAKE3 || f.Sum != blake3.Sum256(files[i]) {
			t.Fatalf("file %d: %v %x, want BLAKE3 %x", i, f.Digest, f.Sum, blake3.Sum256(files[i]))
		}
	}
	if err := rd.Verify(context.Background(), DecodeOptions{Threads: 2}); err != nil {
		t.Fatal(err)
	}
}

// TestSumBLAKE3: SumBLAKE3 of one slice and of the same bytes in parts is
// blake3.Sum256, at sizes around chunk, group and subtree boundaries.
func TestSumBLAKE3(t *testing.T) {
	for _, n := range []int{0, 1, 1023, 1024, 1025, 16384, 16385, 100000, 1 << 20, 3<<20 + 7} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + i>>9)
		}
		want := blake3.Sum256(b)
		if SumBLAKE3(b) != want {
			t.Fatalf("%d bytes: one part differs", n)
		}
		if n > 3 && SumBLAKE3(b[:n/3], nil, b[n/3:n/2], b[n/2:]) != want {
			t.Fatalf("%d bytes: parts differ", n)
		}
		// NewBLAKE3: the same, written part by part, and again after Reset
		h := NewBLAKE3()
		for range 2 {
			for _, p := range [][]byte{b[:n/3], nil, b[n/3 : n/2], b[n/2:]} {
				h.Write(p)
			}
			if got := h.Sum([]byte("x")); string(got[:1]) != "x" || [32]byte(got[1:]) != want {
				t.Fatalf("%d bytes: NewBLAKE3 differs", n)
			}
			h.Reset()
		}
	}
}
