package codec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// trajDir returns the directory of the real training trajectory, or skips.
func trajDir(t testing.TB) string {
	d := needShared(t)
	dir := filepath.Join(d, "trajectories", "tinygpt-fortunes")
	if _, err := os.Stat(filepath.Join(dir, "step_000000.bf16.safetensors")); err != nil {
		t.Skip("../shared/trajectories/tinygpt-fortunes not present; skipping real-trajectory test")
	}
	return dir
}

// refOf makes a reference of one in-memory safetensors file.
func refOf(t testing.TB, name string, src []byte) *Reference {
	t.Helper()
	ref, err := NewReference([]Input{{Name: name, R: bytes.NewReader(src), Size: int64(len(src)), Segments: safetensorsSegments(src)}})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// encodeRef encodes src (a safetensors file) against ref.
func encodeRef(t testing.TB, src []byte, ref *Reference, opt EncodeOptions) []byte {
	t.Helper()
	opt.Ref = ref
	var buf bytes.Buffer
	if _, err := Encode(context.Background(), &buf, []Input{{Name: "model.safetensors", R: bytes.NewReader(src), Size: int64(len(src)), Segments: safetensorsSegments(src)}}, opt); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readStep reads a step of the real trajectory (kind bf16, f32 or optim).
func readStep(t testing.TB, dir string, step int, kind string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("step_%06d.%s.safetensors", step, kind)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRefRoundTripReal(t *testing.T) {
	dir := trajDir(t)
	read := func(step int, kind string) []byte { return readStep(t, dir, step, kind) }
	for _, c := range []struct {
		kind     string
		from, to int
	}{{"bf16", 950, 1000}, {"bf16", 0, 50}, {"f32", 900, 1000}, {"optim", 500, 1000}} {
		prev, cur := read(c.from, c.kind), read(c.to, c.kind)
		ref := refOf(t, "prev.safetensors", prev)
		arc1 := encodeRef(t, cur, ref, EncodeOptions{Threads: 1})
		arc2 := encodeRef(t, cur, ref, EncodeOptions{Threads: 3})
		if !bytes.Equal(arc1, arc2) {
			t.Fatalf("%s %d->%d: archive differs between 1 and 3 threads", c.kind, c.from, c.to)
		}
		ind, err := CompressBytes(context.Background(), cur, safetensorsSegments(cur), EncodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecompressBytes(context.Background(), arc1, DecodeOptions{Ref: ref})
		if err != nil {
			t.Fatal(err)
		}
		if sha256.Sum256(out) != sha256.Sum256(cur) {
			t.Fatalf("%s %d->%d: roundtrip differs", c.kind, c.from, c.to)
		}
		// every tier of fast paths gives the same archive and bytes:
		// AVX-512 without the narrow lanes (as without VBMI2), the AVX2
		// assembly alone, and pure Go
		for _, tier := range []string{"avx512-wide", "avx2", "go"} {
			restore := setFeatures(func(f *features) {
				f.avx512Lanes = false
				if tier != "avx512-wide" {
					f.avx512, f.avx512Group, f.avx512Tokens, f.avx512Wide = false, false, false, false
				}
				if tier == "go" {
					f.avx2 = false
				}
			})
			arc3 := encodeRef(t, cur, ref, EncodeOptions{Threads: 2})
			out3, err := DecompressBytes(context.Background(), arc1, DecodeOptions{Ref: ref})
			restore()
			if err != nil || !bytes.Equal(out3, cur) || !bytes.Equal(arc3, arc1) {
				t.Fatalf("%s %d->%d, %s paths: roundtrip or archive differs (%v)", c.kind, c.from, c.to, tier, err)
			}
		}
		t.Logf("%s %d->%d: raw %d independent %d (%.3f) conditioned %d (%.3f of raw, %.3f of independent)", c.kind, c.from, c.to,
			len(cur), len(ind), float64(len(ind))/float64(len(cur)), len(arc1), float64(len(arc1))/float64(len(cur)), float64(len(arc1))/float64(len(ind)))
		// without the reference: a clear error, nothing decoded
		if _, err := DecompressBytes(context.Background(), arc1, DecodeOptions{}); !errors.Is(err, ErrRefMissing) {
			t.Fatalf("decode without reference: %v, want ErrRefMissing", err)
		}
		wrong := refOf(t, "other.safetensors", cur)
		if _, err := DecompressBytes(context.Background(), arc1, DecodeOptions{Ref: wrong}); !errors.Is(err, ErrRefMismatch) {
			t.Fatalf("decode with the wrong reference: %v, want ErrRefMismatch", err)
		}
	}
}
