package store

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"testing"
)

var updateFuzz = flag.Bool("update-fuzz", false, "rewrite the seed corpora in testdata/fuzz from a store of real hub models")

// TestFuzzSeeds writes (-update-fuzz) the seed corpora of the record
// parsers from the index of a store holding real hub models: a few records
// of each kind.
func TestFuzzSeeds(t *testing.T) {
	if !*updateFuzz {
		t.Skip("-update-fuzz not set")
	}
	hub := shared(t, "hub/stories260K")
	s := NewMem(Options{})                   // version 2
	s1 := newMemVersion(Options{}, Version1) // its cast hints
	for _, f := range []string{"base/model.f32.safetensors", "ft-fortunes-lora/model.f32.safetensors", "base/model.bf16.safetensors"} {
		for _, st := range []*Store{s, s1} {
			if _, _, err := st.Add(f, inputs(t, path.Join(hub, f)), AddOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	write := func(target, bucket string, max int) {
		dir := filepath.Join("testdata", "fuzz", target)
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o755)
		n := 0
		s := s
		if bucket == bCasts {
			s = s1
		}
		s.kv.view(func(tx tx) error {
			return tx.scan(bucket, nil, func(k, v []byte) error {
				if bytes.Equal(k, formatKey) || bytes.Equal(k, maxDecodeKey) {
					return nil
				}
				if n < max && len(v) < 4096 {
					body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", v)
					os.WriteFile(filepath.Join(dir, fmt.Sprintf("real-%d", n)), []byte(body), 0o644)
					n++
				}
				return nil
			})
		})
		// one long manifest, cut to a seed of bounded size, is added by the target
	}
	write("FuzzParseUnit", bUnits, 6)
	write("FuzzParseManifest", bModels, 3)
	write("FuzzParseCast", bCasts, 3)
	write("FuzzParseFingerprint", bFP, 2)
	// the format records of the two stores
	fdir := filepath.Join("testdata", "fuzz", "FuzzParseFormat")
	os.RemoveAll(fdir)
	os.MkdirAll(fdir, 0o755)
	for i, st := range []*Store{s, s1} {
		st.kv.view(func(tx tx) error {
			v := tx.get(bFP, formatKey)
			os.WriteFile(filepath.Join(fdir, fmt.Sprintf("real-%d", i)), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", v)), 0o644)
			return nil
		})
	}
	// decode bound records (maxdecode.go)
	mdir := filepath.Join("testdata", "fuzz", "FuzzParseMaxDecode")
	os.RemoveAll(mdir)
	os.MkdirAll(mdir, 0o755)
	for i, r := range []float64{1, 2, 3} {
		os.WriteFile(filepath.Join(mdir, fmt.Sprintf("real-%d", i)), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", maxDecodeRec(r))), 0o644)
	}
	// the whole index of a store of one real model, as an s3:// store keeps it
	one := NewMem(Options{})
	if _, _, err := one.Add("bf16", inputs(t, path.Join(hub, "base/model.bf16.safetensors")), AddOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzS3Index")
	os.RemoveAll(dir)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "real-0"), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", encodeIndex(one.kv.(*memKV).b))), 0o644)
}

// seedsFromStore adds records of a small in-memory store (synthetic
// tensors) to f, so a target has seeds without the corpus too.
func seedsFromStore(f *testing.F, bucket string) {
	s := NewMem(Options{})
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(i * 7)
	}
	seg := []Input{{Name: "m", R: bytes.NewReader(b), Size: int64(len(b)), Segments: []codecSegment{{Offset: 64, Length: 1024, Name: "w", DType: f32, Shape: []int64{256}}}}}
	s.Add("a", seg, AddOptions{})
	s.kv.view(func(tx tx) error {
		return tx.scan(bucket, nil, func(k, v []byte) error {
			f.Add(bytes.Clone(v))
			return nil
		})
	})
}

func FuzzParseUnit(f *testing.F) {
	seedsFromStore(f, bUnits)
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := parseUnit(b)
		if err != nil {
			return
		}
		u2, err := parseUnit(u.encode())
		if err != nil || u2 != u {
			t.Fatalf("re-encoded unit: %v %+v != %+v", err, u2, u)
		}
	})
}

func FuzzParseManifest(f *testing.F) {
	seedsFromStore(f, bModels)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseManifest(b)
		if err != nil {
			return
		}
		m2, err := parseManifest(m.encode())
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("re-encoded manifest differs: %v", err)
		}
	})
}

func FuzzParseCast(f *testing.F) {
	seedsFromStore(f, bCasts)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseCast(b)
		if err != nil {
			return
		}
		if c2, err := parseCast(c.encode()); err != nil || c2 != c {
			t.Fatalf("re-encoded cast record differs: %v", err)
		}
	})
}

// FuzzParseFormat: the format record (version.go) parses to a version
// that encodes to the same bytes, or is an error; never a panic.
func FuzzParseFormat(f *testing.F) {
	f.Add(formatRec(Version2))
	f.Add(formatRec(Version1))
	f.Add([]byte(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseFormat(b)
		if err != nil || b == nil {
			return
		}
		if !bytes.Equal(formatRec(v), b) {
			t.Fatalf("format record %x parses to version %d, which encodes to %x", b, v, formatRec(v))
		}
	})
}

// FuzzParseMaxDecode: the decode bound record (maxdecode.go) parses to a
// bound of at least 1 that encodes to the same bytes, or is an error;
// never a panic.
func FuzzParseMaxDecode(f *testing.F) {
	f.Add(maxDecodeRec(2))
	f.Add(maxDecodeRec(1.5))
	f.Add(maxDecodeRec(0.5))
	f.Add([]byte(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseMaxDecode(b)
		if err != nil || b == nil {
			return
		}
		if !(r >= 1) || math.IsInf(r, 0) {
			t.Fatalf("decode bound record %x parses to %v", b, r)
		}
		if !bytes.Equal(maxDecodeRec(r), b) {
			t.Fatalf("decode bound record %x parses to %v, which encodes to %x", b, r, maxDecodeRec(r))
		}
	})
}

func FuzzParseFingerprint(f *testing.F) {
	seedsFromStore(f, bFP)
	f.Fuzz(func(t *testing.T, b []byte) {
		fp, err := parseFingerprint(b)
		if err != nil {
			return
		}
		fp2, err := parseFingerprint(fp.encode())
		if err != nil || len(fp2) != len(fp) || !bytes.Equal(fp.encode(), fp2.encode()) {
			t.Fatalf("re-encoded fingerprint differs: %v", err)
		}
	})
}

// FuzzS3Index: the index object of an s3:// store decodes to buckets that
// encode to the same bytes, or is ErrIndexDamaged; never a panic or an
// allocation beyond its size.
func FuzzS3Index(f *testing.F) {
	s := NewMem(Options{})
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(i * 7)
	}
	s.Add("a", []Input{{Name: "m", R: bytes.NewReader(b), Size: int64(len(b)), Segments: []codecSegment{{Offset: 64, Length: 1024, Name: "w", DType: f32, Shape: []int64{256}}}}}, AddOptions{})
	f.Add(encodeIndex(s.kv.(*memKV).b))
	f.Add(encodeIndex(newMemKV().b))
	f.Fuzz(func(t *testing.T, raw []byte) {
		bk, err := decodeIndex(raw)
		if err != nil {
			if !errors.Is(err, ErrIndexDamaged) {
				t.Fatalf("error %v is not ErrIndexDamaged", err)
			}
			return
		}
		if again := encodeIndex(bk); !bytes.Equal(again, raw) {
			t.Fatalf("decoded index re-encodes to %d other bytes", len(again))
		}
	})
}
