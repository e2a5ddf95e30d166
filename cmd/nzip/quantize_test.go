package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"neuralzip/codec"
)

// TestQuantize: nzip quantize writes a lossy archive only when asked
// (-method, -o), never over its input; the lossless commands refuse it by
// name (decompress without -lossy, verify), decompress -lossy writes the
// dequantized model with a warning, inspect shows its measured error, and
// generate runs it with the logits of its dequantized model.
func TestQuantize(t *testing.T) {
	model := sharedFile(t, "models/original/stories260K.bf16.safetensors")
	tok := sharedFile(t, "models/tokenizer/tok512.bin")
	orig, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "m.safetensors")
	if err := os.WriteFile(in, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	ar := filepath.Join(dir, "m.nzq")
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"quantize", in}, 2},                                               // no method, no output
		{[]string{"quantize", "-method", "nf4", in}, 2},                             // no output
		{[]string{"quantize", "-o", ar, in}, 2},                                     // no method
		{[]string{"quantize", "-method", "e8", "-o", ar, in}, 1},                    // e8 needs -bits
		{[]string{"quantize", "-method", "lowrank", "-bits", "4", "-o", ar, in}, 1}, // not archivable
		{[]string{"quantize", "-method", "nf4", "-bits", "8", "-o", ar, in}, 1},
		{[]string{"quantize", "-method", "nf4", "-o", in, in}, 1}, // the input
		{[]string{"quantize", "-method", "nf4", "-f", "-o", in, in}, 1},
	} {
		if code, _, errs := nzip(t, c.args...); code != c.code || !strings.HasPrefix(errs, "nzip") {
			t.Errorf("%v: exit %d (want %d): %s", c.args, code, c.code, errs)
		}
	}
	if b, _ := os.ReadFile(in); !bytes.Equal(b, orig) {
		t.Fatal("the input changed")
	}
	if _, err := os.Stat(ar); err == nil {
		t.Fatal("a refused quantize wrote its output")
	}
	if code, _, errs := nzip(t, "quantize", "-method", "nf4", "-o", ar, in); code != 0 || !strings.Contains(errs, "LOSSY archive (nf4)") {
		t.Fatalf("quantize: %d: %s", code, errs)
	}
	if code, _, _ := nzip(t, "quantize", "-method", "int8", "-o", ar, in); code != 1 {
		t.Error("quantize replaced an existing file without -f")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("files left in the directory: %v", ents)
	}
	b, err := os.ReadFile(ar)
	if err != nil || !bytes.HasPrefix(b, codec.LossyMagic[:]) {
		t.Fatalf("the archive: %v", err)
	}

	// lossless readers refuse it by name; nothing is written
	out := filepath.Join(dir, "deq.safetensors")
	for _, args := range [][]string{{"decompress", ar}, {"decompress", "-o", out, ar}} {
		code, _, errs := nzip(t, args...)
		if code != 1 || !strings.Contains(errs, "LOSSY archive") || !strings.Contains(errs, "-lossy") {
			t.Errorf("%v: exit %d: %s", args, code, errs)
		}
	}
	if code, _, _ := nzip(t, "decompress", "-lossy", ar); code != 2 {
		t.Error("decompress -lossy without -o")
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a refused decompress wrote its output")
	}
	code, stdout, errs := nzip(t, "verify", ar)
	if code != 1 || !strings.Contains(stdout, "LOSSY") || !strings.Contains(stdout, "rel L2 0.09") || !strings.Contains(errs, "not bit-exact") {
		t.Errorf("verify: exit %d: %s%s", code, stdout, errs)
	}
	// under an .nzip name too
	fake := filepath.Join(dir, "fake.nzip")
	if err := os.WriteFile(fake, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := nzip(t, "decompress", fake); code != 1 || !strings.Contains(errs, "LOSSY archive") {
		t.Errorf("decompress of a lossy archive named .nzip: %d: %s", code, errs)
	}
	os.Remove(fake)

	code, _, errs = nzip(t, "decompress", "-lossy", "-o", out, ar)
	if code != 0 || !strings.Contains(errs, "warning") || !strings.Contains(errs, "DEQUANTIZED") {
		t.Fatalf("decompress -lossy: %d: %s", code, errs)
	}
	deq, err := os.ReadFile(out)
	if err != nil || len(deq) != len(orig) || bytes.Equal(deq, orig) || !bytes.Equal(deq[:1000], orig[:1000]) {
		t.Fatalf("the dequantized model: %d bytes of %d, %v", len(deq), len(orig), err)
	}

	code, stdout, errs = nzip(t, "inspect", "-json", ar)
	var rep struct {
		Kind   string  `json:"kind"`
		Lossy  string  `json:"lossy"`
		Method string  `json:"method"`
		RelL2  float64 `json:"rel_l2"`
		Bits   float64 `json:"bits_per_param"`
		Parts  []struct {
			Name  string   `json:"name"`
			RelL2 *float64 `json:"rel_l2"`
		} `json:"parts"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || rep.Kind != "lossy-archive" || !strings.HasPrefix(rep.Lossy, "LOSSY") ||
		rep.Method != "nf4" || !(rep.RelL2 > 0.05 && rep.RelL2 < 0.15) || !(rep.Bits > 4.4 && rep.Bits < 4.6) {
		t.Errorf("inspect -json: %d: %+v %s", code, rep, errs)
	}
	if code, stdout, _ := nzip(t, "inspect", ar); code != 0 || !strings.Contains(stdout, "LOSSY") || !strings.Contains(stdout, "REL L2") {
		t.Errorf("inspect: %d: %s", code, stdout)
	}

	a := generateJSON(t, "-temp", "0", "-n", "24", "-tokenizer", tok, ar, "Once upon a time")
	d := generateJSON(t, "-temp", "0", "-n", "24", "-tokenizer", tok, out, "Once upon a time")
	if a.LogitsSHA256 != d.LogitsSHA256 || a.Text != d.Text || a.ResidentPeakBytes >= d.ResidentPeakBytes {
		t.Errorf("generate from the lossy archive: %+v; from its dequantized model: %+v", a, d)
	}

	// a lossless archive is not quantized again, nor read as lossy
	nz := filepath.Join(dir, "m.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-o", nz, in); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := nzip(t, "quantize", "-method", "nf4", "-o", filepath.Join(dir, "x.nzq"), nz); code != 1 || !strings.Contains(errs, "lossless") {
		t.Errorf("quantize of an .nzip: %d: %s", code, errs)
	}
	if code, _, errs := nzip(t, "decompress", "-lossy", "-o", filepath.Join(dir, "y"), nz); code != 0 {
		t.Errorf("decompress -lossy of a lossless archive: %d: %s", code, errs)
	}
}
