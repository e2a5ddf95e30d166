package codec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
)

// goldenSetupArchive builds a setup from the golden input (1024 values per
// chunk) and codes the input with it, embedded, every block forced onto
// shared tables.
func goldenSetupArchive(t *testing.T) (setup, arc, src []byte) {
	src, segs := goldenInput()
	in := Input{Name: "example.safetensors", Format: "safetensors", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}
	s, err := BuildSetup(context.Background(), []Input{in}, SetupOptions{ChunkValues: 1024, Builder: "codec/golden_setup_test.go"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Encode(context.Background(), &buf, []Input{in}, EncodeOptions{ChunkValues: 1024, Threads: 2, Setup: s, SetupThreshold: 1e9}); err != nil {
		t.Fatal(err)
	}
	return s.Bytes(), buf.Bytes(), src
}

// TestGoldenSetup pins the setup file format and the shared-table stream
// modes: building a setup from the golden input must give the golden setup,
// coding the input with it the golden archive, and both must decode. A
// change is a format change (bump the setup or archive version) or a
// deliberate change of the setup builder or encoder; regenerate with
// `go test ./codec -run GoldenSetup -update`.
func TestGoldenSetup(t *testing.T) {
	setupPath := filepath.Join("testdata", "golden-setup.nzsetup")
	arcPath := filepath.Join("testdata", "golden-setup.nzip")
	setup, arc, src := goldenSetupArchive(t)
	gs := goldenBytes(t, setupPath, setup)
	ga := goldenBytes(t, arcPath, arc)
	checkSetupArchive(t, gs, ga, src)
	if !bytes.Equal(setup, gs) {
		t.Errorf("setup builder output changed (%d bytes, golden %d)", len(setup), len(gs))
	}
	if !bytes.Equal(arc, ga) {
		t.Errorf("encoder output with a setup changed (%d bytes, golden %d)", len(arc), len(ga))
	}
}

// checkSetupArchive: the setup parses, the archive (which embeds it)
// decodes to src without help and with the setup given, and its blocks use
// shared tables.
func checkSetupArchive(t *testing.T, setup, arc, src []byte) {
	t.Helper()
	s, err := ParseSetup(setup)
	if err != nil {
		t.Fatalf("golden setup does not parse: %v", err)
	}
	for _, opt := range []DecodeOptions{{}, {Setup: s}} {
		out, err := DecompressBytes(context.Background(), arc, opt)
		if err != nil {
			t.Fatalf("golden setup archive does not decode: %v", err)
		}
		if sha256.Sum256(out) != sha256.Sum256(src) {
			t.Fatal("golden setup archive decodes to different bytes")
		}
	}
	rd, err := NewReader(bytes.NewReader(arc), int64(len(arc)))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := rd.SetupID(); got != s.ID() {
		t.Fatalf("archive names setup %x, golden setup is %x", got, s.ID())
	}
	c, err := rd.Census()
	if err != nil {
		t.Fatal(err)
	}
	if c.SharedTables == 0 {
		t.Fatalf("no block of the golden setup archive uses a shared table: %+v", c)
	}
}

// Setup files of version 1 (no plane policy) stay readable, and archives
// that embed one decode: golden-setup-v1.* were written by setup version 1;
// so does golden-setup-v3.nzip, the golden setup archive of format version
// 3 (SHA-256 digest).
func TestGoldenSetupV1Decodes(t *testing.T) {
	_, _, src := goldenSetupArchive(t)
	gs, err := os.ReadFile(filepath.Join("testdata", "golden-setup-v1.nzsetup"))
	if err != nil {
		t.Fatal(err)
	}
	ga, err := os.ReadFile(filepath.Join("testdata", "golden-setup-v1.nzip"))
	if err != nil {
		t.Fatal(err)
	}
	checkSetupArchive(t, gs, ga, src)
	gs, err = os.ReadFile(filepath.Join("testdata", "golden-setup.nzsetup"))
	if err != nil {
		t.Fatal(err)
	}
	ga, err = os.ReadFile(filepath.Join("testdata", "golden-setup-v3.nzip"))
	if err != nil {
		t.Fatal(err)
	}
	checkSetupArchive(t, gs, ga, src)
}
