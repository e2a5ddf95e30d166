package codec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"neuralzip/codec/huff"
	"neuralzip/dtype"
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

func needShared(t testing.TB) string {
	d := sharedDir()
	if d == "" {
		t.Skip("../shared (real-weights corpus) not present; skipping real-file test")
	}
	return d
}

// safetensorsSegments is a minimal safetensors layout reader for tests (the
// real loader lives in package checkpoint, which codec does not import).
func safetensorsSegments(b []byte) []Segment {
	if len(b) < 8 {
		return nil
	}
	n := binary.LittleEndian.Uint64(b)
	if n > uint64(len(b)-8) || n == 0 || b[8] != '{' {
		return nil
	}
	var hdr map[string]json.RawMessage
	if json.Unmarshal(b[8:8+n], &hdr) != nil {
		return nil
	}
	base := int64(8 + n)
	segs := []Segment{{Offset: 0, Length: base}}
	var ts []Segment
	for k, v := range hdr {
		if k == "__metadata__" {
			continue
		}
		var x struct {
			Dtype   string
			Shape   []int64
			Offsets [2]int64 `json:"data_offsets"`
		}
		if json.Unmarshal(v, &x) != nil {
			return nil
		}
		d, _ := dtype.Parse(x.Dtype)
		ts = append(ts, Segment{Name: k, DType: d, Shape: x.Shape, Offset: base + x.Offsets[0], Length: x.Offsets[1] - x.Offsets[0]})
	}
	sort.Slice(ts, func(i, j int) bool {
		return ts[i].Offset < ts[j].Offset || ts[i].Offset == ts[j].Offset && ts[i].Name < ts[j].Name
	})
	return append(segs, ts...)
}

// roundTrip compresses and decompresses src and fails unless the bytes and
// SHA-256 match. It returns the archive.
func roundTrip(t testing.TB, src []byte, segs []Segment, opt EncodeOptions) []byte {
	t.Helper()
	arc, err := CompressBytes(context.Background(), src, segs, opt)
	if err != nil {
		t.Fatalf("compress: %v", err)
	}
	out, err := DecompressBytes(context.Background(), arc, opt.Decoding())
	if err != nil {
		t.Fatalf("decompress: %v", err)
	}
	if !bytes.Equal(out, src) || sha256.Sum256(out) != sha256.Sum256(src) {
		t.Fatalf("roundtrip mismatch: %d bytes in, %d out", len(src), len(out))
	}
	return arc
}

// realFile returns the bytes of a file of ../shared (rel is relative to
// it), skipping the test in -short runs and when it is not there.
func realFile(t *testing.T, rel string) []byte {
	t.Helper()
	if testing.Short() {
		t.Skip("real files: not in -short")
	}
	b, err := os.ReadFile(filepath.Join(needShared(t), rel))
	if err != nil {
		t.Skipf("%s: %v", rel, err)
	}
	return b
}

// censusOf is the Census of an archive in memory.
func censusOf(t *testing.T, arc []byte) Census {
	t.Helper()
	rd, err := NewMemReader(arc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rd.Census()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// setFeatures switches fast paths as set says (a tier of use, as on a CPU
// without some features), package huff's included, and returns the
// function that restores them all:
//
//	defer setFeatures(func(f *features) { f.avx2 = false })()
//
// Without avx2 the Huffman stream encoder's assembly is off too (it is
// AVX2 code), so that tier is all Go as far as codec's tiers go.
func setFeatures(set func(f *features)) (restore func()) {
	saved := use
	set(&use)
	h := use.huff
	h.StreamAsm = h.StreamAsm && use.avx2
	restoreHuff := huff.SetFeatures(h)
	return func() { use = saved; restoreHuff() }
}
