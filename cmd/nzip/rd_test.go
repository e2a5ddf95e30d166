package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestRD: nzip rd on stories260K: one JSON row per method and rate for the
// whole model (tensor "") with the measured rate, the error and the
// next-token comparison, rows per tensor beside them; the table names the
// continuations; bad flags are refused.
func TestRD(t *testing.T) {
	model := sharedFile(t, "models/original/stories260K.bf16.safetensors")
	tok := sharedFile(t, "models/tokenizer/tok512.bin")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"rd", "-json", "-methods", "int8,nf4,lowrank,kron", "-bits", "2,4", "-tokens", "16", model}, &out, &errb); code != 0 {
		t.Fatalf("rd: %d: %s", code, errb.String())
	}
	var rows []struct {
		Method       string   `json:"method"`
		BitsTarget   float64  `json:"bits_target"`
		BitsPerParam float64  `json:"bits_per_param"`
		RelL2        float64  `json:"rel_l2"`
		Tensor       *string  `json:"tensor"`
		Seconds      *float64 `json:"seconds"`
		KL           *float64 `json:"kl"`
		Top1         *float64 `json:"top1"`
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	whole := map[string]int{}
	for _, r := range rows {
		if r.Tensor == nil || r.Seconds == nil || r.BitsPerParam <= 0 || r.RelL2 <= 0 {
			t.Fatalf("row %+v", r)
		}
		if *r.Tensor == "" {
			whole[r.Method]++
			if r.KL == nil || r.Top1 == nil {
				t.Fatalf("%s: no next-token comparison", r.Method)
			}
			if r.Method == "int8" && (*r.Top1 < 0.9 || *r.KL > 0.01) {
				t.Errorf("int8: KL %g, top-1 %g", *r.KL, *r.Top1)
			}
		}
	}
	if whole["int8"] != 1 || whole["nf4"] != 1 || whole["lowrank"] != 2 || whole["kron"] != 2 || len(rows) <= 4 {
		t.Errorf("whole-model rows %v of %d rows", whole, len(rows))
	}
	out.Reset()
	if code := run(context.Background(), []string{"rd", "-methods", "fp8h", "-tokens", "16", "-tokenizer", tok, model}, &out, &errb); code != 0 {
		t.Fatalf("rd: %d: %s", code, errb.String())
	}
	if s := out.String(); !strings.Contains(s, "BITS/PARAM") || !strings.Contains(s, "original: ") || !strings.Contains(s, "fp8h: ") {
		t.Errorf("the table:\n%s", s)
	}
	for _, args := range [][]string{
		{"rd", "-methods", "e9", model},
		{"rd", "-bits", "0", model},
		{"rd", filepath.Join(t.TempDir(), "none.safetensors")},
	} {
		errb.Reset()
		if code := run(context.Background(), args, &out, &errb); code == 0 || errb.Len() == 0 {
			t.Errorf("%v: code %d, %q", args, code, errb.String())
		}
	}
}
