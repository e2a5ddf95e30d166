package codec

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/dtype"
)

// gaussianSetupID pins the built-in Gaussian setup: its tables, bytes and
// ID must be the same on every platform and in every release, or archives
// written with `-setup gaussian` stop decoding. (make test runs this on
// amd64, arm64 under qemu and js/wasm.)
const gaussianSetupID = "49ac27a8f3ffcdeb4d9cf6e1cdd307e8"

func TestGaussianSetupID(t *testing.T) {
	s := GaussianSetup()
	if got := s.IDString(); got != gaussianSetupID {
		t.Fatalf("built-in Gaussian setup has ID %s, want %s: its tables changed (archives written with it would no longer decode)", got, gaussianSetupID)
	}
	if s.id != gaussianID {
		t.Fatalf("gaussianID (which IsGaussian compares) is %x, the setup's ID %x", gaussianID, s.id)
	}
	p, err := ParseSetup(s.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !p.IsGaussian() || p.ID() != s.ID() {
		t.Fatal("the Gaussian setup does not survive its own encoding")
	}
	for _, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32} {
		sec := s.Section(d)
		if sec == nil || len(sec.Tables) != len(gaussCounts)*len(gaussCounts[0]) || !sec.Shifts() || len(sec.PlaneCuts) == 0 {
			t.Fatalf("%v: section %+v", d, sec)
		}
		for i, tb := range sec.Tables {
			if !tb.HasPairs() {
				t.Errorf("%v table %d has no pair code", d, i)
			}
		}
	}
}

// TestGaussianRoundTrip: every dtype the Gaussian setup covers, with every
// edge value, codes bit-exactly with it; the archive names the setup
// without holding it (also without SetupExternal) and decodes with no
// setup given; the bytes are the
// same at any thread count.
func TestGaussianRoundTrip(t *testing.T) {
	for _, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32, dtype.F64, dtype.F8E4M3} {
		src, segs := tensorFile(d, edgeTensors(d))
		for _, chunk := range []int{256, 4096, 65536} {
			// (never embedded, SetupExternal or not)
			opt := EncodeOptions{ChunkValues: chunk, Setup: GaussianSetup(), Threads: 1}
			arc := roundTrip(t, src, segs, opt)
			out, err := DecompressBytes(context.Background(), arc, DecodeOptions{})
			if err != nil || !bytes.Equal(out, src) {
				t.Fatalf("%v chunk %d: decode without a setup given: %v", d, chunk, err)
			}
			rd, err := NewReader(bytes.NewReader(arc), int64(len(arc)))
			if err != nil {
				t.Fatal(err)
			}
			if id, how := rd.SetupID(); how != "built-in" || id != GaussianSetup().ID() {
				t.Fatalf("%v: setup %x %q, want the built-in one", d, id, how)
			}
			opt.Threads = 3
			arc3, err := CompressBytes(context.Background(), src, segs, opt)
			if err != nil || !bytes.Equal(arc, arc3) {
				t.Fatalf("%v chunk %d: 3 threads give other bytes (%v)", d, chunk, err)
			}
		}
	}
}

// TestGaussianReal: on real weights the Gaussian setup codes every float
// block of a BF16 model with its tables or its own, bit-exactly, within
// 1.5 % of per-block tables (the bound; about 0.5 % measured).
func TestGaussianReal(t *testing.T) {
	if testing.Short() {
		t.Skip("real files: not in -short")
	}
	d := needShared(t)
	for _, name := range []string{"models/bench/real-bf16.safetensors", "trajectories/tinygpt-fortunes/step_001000.bf16.safetensors"} {
		src, err := os.ReadFile(filepath.Join(d, name))
		if err != nil {
			t.Skipf("%s: %v", name, err)
		}
		segs := safetensorsSegments(src)
		own := roundTrip(t, src, segs, EncodeOptions{})
		g := roundTrip(t, src, segs, EncodeOptions{Setup: GaussianSetup(), SetupExternal: true})
		loss := float64(len(g))/float64(len(own)) - 1
		t.Logf("%s: per-block tables %d B, Gaussian setup %d B (%+.3f %%)", name, len(own), len(g), 100*loss)
		if loss > 0.015 {
			t.Errorf("%s: the Gaussian setup codes %.2f %% larger than per-block tables", name, 100*loss)
		}
	}
}

// TestGoldenGaussian: an archive of the golden input coded with the
// built-in Gaussian setup decodes with no setup given, and the encoder
// still writes it (regenerate with `go test ./codec -run Golden -update`
// after a deliberate encoder change; keep the old file as a decode-only
// golden then).
func TestGoldenGaussian(t *testing.T) {
	path := filepath.Join("testdata", "golden-gaussian.nzip")
	src, segs := goldenInput()
	arc, err := CompressBytes(context.Background(), src, segs, EncodeOptions{ChunkValues: 1024, Threads: 2, Setup: GaussianSetup(), SetupExternal: true})
	if err != nil {
		t.Fatal(err)
	}
	golden := goldenBytes(t, path, arc)
	out, err := DecompressBytes(context.Background(), golden, DecodeOptions{})
	if err != nil || !bytes.Equal(out, src) {
		t.Fatalf("golden Gaussian archive does not decode to the golden input: %v", err)
	}
	if !bytes.Equal(arc, golden) {
		t.Errorf("encoder output with the Gaussian setup changed (%d bytes, golden %d)", len(arc), len(golden))
	}
}
