package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lukechampine.com/blake3"

	"neuralzip/codec"
)

// inspect and verify name the digest an archive holds and give its value
// (BLAKE3 in new archives, SHA-256 in those before format version 7);
// verify -sha256 prints the SHA-256 of the restored file.
func TestDigestShown(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.safetensors")
	orig := writeSafetensors(t, in, 5000)
	if code, _, errs := nzip(t, "compress", "-q", in); code != 0 {
		t.Fatal(errs)
	}
	b3, sha := blake3.Sum256(orig), sha256.Sum256(orig)
	arc := in + ".nzip"
	code, out, errs := nzip(t, "inspect", "-json", arc)
	var rep inspectReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("inspect -json: %d %s", code, errs)
	}
	if f := rep.Files[0]; f.Digest != "BLAKE3" || f.BLAKE3 != hex.EncodeToString(b3[:]) || f.SHA256 != "" {
		t.Fatalf("inspect -json: digest %q blake3 %q sha256 %q", f.Digest, f.BLAKE3, f.SHA256)
	}
	if code, out, _ := nzip(t, "inspect", arc); code != 0 || !strings.Contains(out, "digest: BLAKE3 "+hex.EncodeToString(b3[:])) {
		t.Fatalf("inspect: %s", out)
	}
	code, out, _ = nzip(t, "verify", arc)
	if code != 0 || !strings.Contains(out, "file BLAKE3 match") || !strings.Contains(out, "m.safetensors: BLAKE3 "+hex.EncodeToString(b3[:])) || strings.Contains(out, "SHA-256") {
		t.Fatalf("verify: %s", out)
	}
	code, out, _ = nzip(t, "verify", "-sha256", arc)
	if code != 0 || !strings.Contains(out, "m.safetensors: SHA-256 "+hex.EncodeToString(sha[:])) {
		t.Fatalf("verify -sha256: %s", out)
	}
	// decompress says which digest it checked
	if code, _, errs := nzip(t, "decompress", "-o", filepath.Join(dir, "out"), arc); code != 0 || !strings.Contains(errs, "(BLAKE3 verified)") {
		t.Fatalf("decompress: %d %s", code, errs)
	}

	// an archive of format version 3 holds a SHA-256
	old := filepath.Join("..", "..", "codec", "testdata", "golden-v3.nzip")
	b, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	src, err := codec.DecompressBytes(context.Background(), b, codec.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	osum := sha256.Sum256(src)
	if code, out, _ := nzip(t, "inspect", old); code != 0 || !strings.Contains(out, "digest: SHA-256 "+hex.EncodeToString(osum[:])) {
		t.Fatalf("inspect of a version 3 archive: %s", out)
	}
	code, out, _ = nzip(t, "verify", "-sha256", old)
	if code != 0 || !strings.Contains(out, "file SHA-256 match") || strings.Count(out, hex.EncodeToString(osum[:])) != 1 {
		t.Fatalf("verify -sha256 of a version 3 archive: %s", out)
	}
	if code, _, errs := nzip(t, "decompress", "-o", filepath.Join(dir, "old"), old); code != 0 || !strings.Contains(errs, "(SHA-256 verified)") {
		t.Fatalf("decompress of a version 3 archive: %d %s", code, errs)
	}
}
