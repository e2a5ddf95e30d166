package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackendFlags: decompress and bench on a gpu backend (the kernels'
// Go twin, which runs everywhere), and a clear error for one that cannot
// run here.
func TestBackendFlags(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.safetensors")
	orig := writeSafetensors(t, in, 30000)
	if code, _, errs := nzip(t, "compress", "-q", in); code != 0 {
		t.Fatalf("compress: %d %s", code, errs)
	}
	out := filepath.Join(dir, "out.safetensors")
	code, _, errs := nzip(t, "decompress", "-backend", "cpu", "-o", out, in+".nzip")
	if code != 0 || !strings.Contains(errs, "decoded on the device") {
		t.Fatalf("decompress -backend cpu: %d %s", code, errs)
	}
	if b, _ := os.ReadFile(out); !bytes.Equal(b, orig) {
		t.Fatal("decompress -backend cpu: output differs")
	}
	if code, stdout, errs := nzip(t, "verify", "-backend", "cpu", in+".nzip"); code != 0 || !strings.Contains(stdout, "OK") || !strings.Contains(stdout, "decoded on the device") {
		t.Fatalf("verify -backend cpu: %d %s %s", code, stdout, errs)
	}
	if code, _, errs := nzip(t, "decompress", "-backend", "tpu", "-f", "-o", out, in+".nzip"); code != 1 || !strings.Contains(errs, "unknown backend") {
		t.Fatalf("unknown backend: %d %s", code, errs)
	}
	if code, _, errs := nzip(t, "decompress", "-backend", "webgpu", "-f", "-o", out, in+".nzip"); code != 1 || !strings.Contains(errs, "unavailable") {
		t.Fatalf("webgpu outside the browser: %d %s", code, errs)
	}
	code, stdout, errs := nzip(t, "bench", "-json", "-codecs", "nzip", "-backend", "cpu", "-gpu-bytes", "1000000", "-runs", "1", in)
	if code != 0 {
		t.Fatalf("bench -backend cpu: %d %s", code, errs)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatal(err)
	}
	var dev map[string]any
	for _, r := range rows {
		if r["codec"] == "nzip@cpu" {
			dev = r
		}
	}
	if dev == nil || dev["roundtrip_ok"] != true || dev["kernel_gb_s"].(float64) <= 0 || dev["copies"].(float64) < 2 || dev["streams"].(float64) < 1 {
		t.Fatalf("bench row: %v", dev)
	}
	if code, _, errs := nzip(t, "bench", "-gpu-bytes", "5", in); code != 2 || !strings.Contains(errs, "-gpu-bytes needs -backend") {
		t.Fatalf("-gpu-bytes without -backend: %d %s", code, errs)
	}
}
