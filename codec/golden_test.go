package codec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"lukechampine.com/blake3"

	"neuralzip/dtype"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// goldenInput builds a deterministic, valid safetensors file with a tensor
// of every float type the float pipeline handles and an integer tensor. It
// doubles as the example model of `make run`.
func goldenInput() ([]byte, []Segment) {
	var ts []refT
	for i, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32, dtype.F64, dtype.F8E4M3, dtype.F8E5M2} {
		rows := int64(24 + 8*i)
		ts = append(ts, refT{"layers." + strconv.Itoa(i) + ".weight." + d.String(), d, []int64{rows, 128}, goldenValues(d, int(rows*128), uint64(100+i))})
	}
	ints := make([]byte, 4000)
	for i := range ints {
		ints[i] = byte(i * i % 251)
	}
	ts = append(ts, refT{"token_ids", dtype.I32, []int64{1000}, ints})
	return safetensorsFile(`{"format":"pt","source":"neuralzip codec/golden_test.go"}`, ts)
}

// TestGolden pins the archive format: the golden archive must decode to the
// golden input, and encoding the input must give the golden bytes. A change
// of either is a format change: bump Version and regenerate with
// `go test ./codec -run Golden -update` (keeping the previous golden as a
// decode-only one, TestGoldenOldVersionsDecode).
func TestGolden(t *testing.T) {
	path := filepath.Join("testdata", "golden-v7.nzip")
	src, segs := goldenInput()
	// the test's own layout must agree with the minimal safetensors reader
	if got := safetensorsSegments(src); len(got) != len(segs) {
		t.Fatalf("golden input is not valid safetensors: %d segments, want %d", len(got), len(segs))
	}
	var buf bytes.Buffer
	_, err := Encode(context.Background(), &buf, []Input{{Name: "example.safetensors", Format: "safetensors", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}}, EncodeOptions{ChunkValues: 1024, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	arc := buf.Bytes()
	golden := goldenBytes(t, path, arc)
	out, err := DecompressBytes(context.Background(), golden, DecodeOptions{})
	if err != nil {
		t.Fatalf("golden archive does not decode: %v", err)
	}
	if v := binary.LittleEndian.Uint16(golden[8:]); v != denseVersion {
		t.Fatalf("golden archive of version %d, want %d (dense inputs)", v, denseVersion)
	}
	rd, err := NewMemReader(golden)
	if err != nil {
		t.Fatal(err)
	}
	if f := rd.Files()[0]; f.Digest != DigestBLAKE3 || f.Sum != blake3.Sum256(src) {
		t.Fatalf("golden archive holds the %v digest %x, want BLAKE3 %x", f.Digest, f.Sum, blake3.Sum256(src))
	}
	if sha256.Sum256(out) != sha256.Sum256(src) {
		t.Fatal("golden archive decodes to different bytes")
	}
	if !bytes.Equal(arc, golden) {
		t.Fatalf("encoder output changed (%d bytes, golden %d): a format or coding change must be deliberate; bump Version if the format changed and regenerate with -update", len(arc), len(golden))
	}
}

// goldenValues makes weight-like bit patterns with integer arithmetic only
// (no floating point, no library RNG), so the golden input is the same on
// every platform and Go version: a geometric exponent below a scale, random
// sign and mantissa.
func goldenValues(d dtype.DType, n int, seed uint64) []byte {
	l, _ := d.FloatLayout()
	size := d.Size()
	out := make([]byte, n*size)
	x := seed
	next := func() uint64 { // splitmix64
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return z ^ z>>31
	}
	top := uint64(1)<<(l.Exp-1) - 3 // a bit below 1.0
	for i := 0; i < n; i++ {
		r := next()
		tz := uint64(0)
		for r&1 == 1 && tz < top {
			r >>= 1
			tz++
		}
		e := top - tz
		m := next() & (1<<l.Mant - 1)
		s := next() & 1
		storeValue(out, i, size, s<<(l.Exp+l.Mant)|e<<l.Mant|m)
	}
	return out
}

// Archives of earlier format versions stay readable: golden-v1.nzip,
// golden-v2.nzip and golden-v3.nzip are the same example written by format
// versions 1 to 3 (SHA-256 digests); so do those of earlier encoders of
// version 3: golden-v3-1x.nzip was written when Huffman streams below 2048
// symbols were 1-stream blocks. Their SHA-256 is checked: a damaged one
// is refused.
func TestGoldenOldVersionsDecode(t *testing.T) {
	src, _ := goldenInput()
	for _, name := range []string{"golden-v1.nzip", "golden-v2.nzip", "golden-v3-1x.nzip", "golden-v3.nzip"} {
		golden, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecompressBytes(context.Background(), golden, DecodeOptions{})
		if err != nil {
			t.Fatalf("%s does not decode: %v", name, err)
		}
		if sha256.Sum256(out) != sha256.Sum256(src) {
			t.Fatalf("%s decodes to different bytes", name)
		}
		rd, err := NewMemReader(golden)
		if err != nil {
			t.Fatal(err)
		}
		if f := rd.Files()[0]; f.Digest != DigestSHA256 || f.Sum != sha256.Sum256(src) || f.SHA256 != f.Sum {
			t.Fatalf("%s: the index gives the %v digest %x, want its SHA-256", name, f.Digest, f.Sum)
		}
		rd.idx.files[0].Sum[7] ^= 1
		if err := rd.Verify(context.Background(), DecodeOptions{}); !errors.Is(err, ErrChecksum) {
			t.Fatalf("%s with a damaged SHA-256: %v, want ErrChecksum", name, err)
		}
	}
}

// goldenBytes returns the golden file at path, first writing arc there with
// -update.
func goldenBytes(t *testing.T, path string, arc []byte) []byte {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, arc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	return golden
}

// checkGolden checks the golden archive at path against the archive the
// encoder wrote now (arc) of src: of the format version, decoding to src,
// and byte for byte arc (written there first with -update). It returns
// the golden archive.
func checkGolden(t *testing.T, path string, arc, src []byte, version int) []byte {
	t.Helper()
	golden := goldenBytes(t, path, arc)
	if v := binary.LittleEndian.Uint16(golden[8:]); int(v) != version {
		t.Fatalf("golden archive of version %d, want %d", v, version)
	}
	out, err := DecompressBytes(context.Background(), golden, DecodeOptions{})
	if err != nil {
		t.Fatalf("golden archive does not decode: %v", err)
	}
	if !bytes.Equal(out, src) {
		t.Fatal("golden archive decodes to different bytes")
	}
	if !bytes.Equal(arc, golden) {
		t.Fatalf("encoder output changed (%d bytes, golden %d): a format or coding change must be deliberate; bump Version if the format changed and regenerate with -update", len(arc), len(golden))
	}
	return golden
}
