package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestStoreCLI runs every store subcommand on hub models: add (names as
// given, -name), ls, stats -json, get -o byte for byte, rm, gc, verify,
// and the usage and failure exits.
func TestStoreCLI(t *testing.T) {
	hub := sharedFile(t, "hub/stories260K")
	dir := t.TempDir()
	st := filepath.Join(dir, "S")
	mustRun := func(args ...string) string {
		t.Helper()
		code, out, errs := nzip(t, args...)
		if code != 0 {
			t.Fatalf("nzip %v: exit %d: %s", args, code, errs)
		}
		return out
	}
	mustRun("store", "init", st)
	if code, _, _ := nzip(t, "store", "init", st); code != 1 {
		t.Fatalf("init of an existing store: exit %d, want 1", code)
	}
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	if err := os.Chdir(hub); err != nil {
		t.Fatal(err)
	}
	out := mustRun("store", "add", "-compare", st, "base/model.f32.safetensors", "ft-fortunes-lora/model.f32.safetensors", "base/model.bf16.safetensors")
	if !strings.Contains(out, "ft-fortunes-lora/model.f32.safetensors:") || !strings.Contains(out, "casts") {
		t.Fatalf("add output:\n%s", out)
	}
	mustRun("store", "add", "-q", "-name", "gguf-f16", st, "ft-fortunes-full/model.f16.gguf")
	if code, _, _ := nzip(t, "store", "add", "-name", "x", st, "base/model.f32.safetensors", "tok512.bin"); code != 2 {
		t.Fatalf("-name with two files: exit %d, want 2", code)
	}
	if code, _, errs := nzip(t, "store", "add", st, "base/model.f32.safetensors"); code != 1 || !strings.Contains(errs, "already stored") {
		t.Fatalf("second add of a name: exit %d: %s", code, errs)
	}
	// one batch: a model that fails (a name given twice) adds none of it
	if code, out, errs := nzip(t, "store", "add", st, "ft-continued/model.f32.safetensors", "tok512.bin", "tok512.bin"); code != 1 || !strings.Contains(errs, "given twice") || out != "" {
		t.Fatalf("a name twice in one add: exit %d: %s%s", code, out, errs)
	}
	// a name a terminal would act on (a right-to-left override passes
	// the store's check: it is not a control character) is shown quoted
	odd := "odd\u202egnp.exe"
	if out := mustRun("store", "add", "-name", odd, st, "tok512.bin"); !strings.HasPrefix(out, strconv.Quote(odd)+":") {
		t.Fatalf("add output for %q: %s", odd, out)
	}
	os.Chdir(wd)
	if ls := mustRun("store", "ls", st); !strings.Contains(ls, strconv.Quote(odd)) || strings.Contains(ls, odd) {
		t.Fatalf("ls shows %q unquoted:\n%s", odd, ls)
	}
	mustRun("store", "rm", st, odd)
	ls := mustRun("store", "ls", st)
	for _, n := range []string{"base/model.f32.safetensors", "gguf-f16", "base/model.bf16.safetensors (base/model.f32.safetensors)"} {
		if !strings.Contains(ls, n) {
			t.Fatalf("ls lacks %q:\n%s", n, ls)
		}
	}
	if strings.Contains(ls, "ft-continued") || strings.Contains(ls, "tok512") {
		t.Fatalf("the refused batch left models:\n%s", ls)
	}
	var stats struct {
		Models []struct {
			Name  string `json:"name"`
			Raw   int64  `json:"raw_bytes"`
			Added int64  `json:"added_bytes"`
		} `json:"models"`
		Raw     int64 `json:"raw_bytes"`
		Stored  int64 `json:"stored_bytes"`
		Version int   `json:"format_version"`
	}
	if err := json.Unmarshal([]byte(mustRun("store", "stats", "-json", st)), &stats); err != nil {
		t.Fatal(err)
	}
	if len(stats.Models) != 4 || stats.Stored <= 0 || stats.Stored >= stats.Raw || stats.Version != 2 {
		t.Fatalf("stats -json: %+v", stats)
	}
	if out := mustRun("store", "stats", st); !strings.Contains(out, "format       version 2 (units addressed by BLAKE3)") {
		t.Fatalf("stats: %s", out)
	}
	if code, _, errOut := nzip(t, "store", "migrate", st); code != 1 || !strings.Contains(errOut, "version 2 store already") {
		t.Fatalf("migrate of a version 2 store: exit %d, %s", code, errOut)
	}
	if code, _, help := nzip(t, "store", "migrate", "-h"); code != 0 || !strings.Contains(help, "s3://bucket/prefix store has no lock") || !strings.Contains(help, "If-Match") {
		t.Fatalf("store migrate -h: exit %d:\n%s", code, help)
	}
	for name, src := range map[string]string{"base/model.bf16.safetensors": "base/model.bf16.safetensors", "gguf-f16": "ft-fortunes-full/model.f16.gguf"} {
		o := filepath.Join(dir, strings.ReplaceAll(name, "/", "_"))
		mustRun("store", "get", st, name, "-o", o)
		got, _ := os.ReadFile(o)
		want, _ := os.ReadFile(filepath.Join(hub, src))
		if !bytes.Equal(got, want) {
			t.Fatalf("get %s: other bytes", name)
		}
		if code, _, _ := nzip(t, "store", "get", st, name, "-o", o); code != 1 {
			t.Fatalf("get over an existing file without -f: exit %d", code)
		}
		// as decompress makes its files; and -o - is standard output
		if fi, err := os.Stat(o); err != nil || fi.Mode().Perm() != 0o644 {
			t.Fatalf("get -o %s: %v, mode %v, want 0644", o, err, fi.Mode())
		}
		if got := mustRun("store", "get", "-o", "-", st, name); got != string(want) {
			t.Fatalf("get %s -o -: %d bytes on stdout, want the file's %d", name, len(got), len(want))
		}
	}
	if code, _, errs := nzip(t, "store", "get", st, "nothing", "-o", filepath.Join(dir, "n")); code != 1 || !strings.Contains(errs, "no such model") {
		t.Fatalf("get of a missing model: exit %d: %s", code, errs)
	}
	mustRun("store", "rm", st, "base/model.f32.safetensors")
	mustRun("store", "gc", st)
	if v := mustRun("store", "verify", st); !strings.Contains(v, "3 models") {
		t.Fatalf("verify: %s", v)
	}
	mustRun("store", "rm", st, "base/model.bf16.safetensors", "ft-fortunes-lora/model.f32.safetensors", "gguf-f16")
	if g := mustRun("store", "gc", st); !strings.Contains(g, "removed 4 chunk files") {
		t.Fatalf("gc after rm of everything: %s", g)
	}
	if code, _, _ := nzip(t, "store", "ls", filepath.Join(dir, "none")); code != 1 {
		t.Fatalf("ls of a directory without a store: exit %d", code)
	}
	if code, _, _ := nzip(t, "store", "frobnicate", st); code != 2 {
		t.Fatalf("unknown subcommand: exit %d", code)
	}
}

// TestStoreCLIDamaged: verify and get of a store with a damaged chunk
// exit 1 naming the model.
func TestStoreCLIDamaged(t *testing.T) {
	hub := sharedFile(t, "hub/stories260K")
	st := filepath.Join(t.TempDir(), "S")
	if code, _, errs := nzip(t, "store", "init", st); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := nzip(t, "store", "add", "-name", "base", st, filepath.Join(hub, "base/model.f32.safetensors")); code != 0 {
		t.Fatal(errs)
	}
	packs, _ := filepath.Glob(filepath.Join(st, "packs", "*", "*.pack"))
	if len(packs) != 1 {
		t.Fatalf("%d chunk files", len(packs))
	}
	b, _ := os.ReadFile(packs[0])
	b[len(b)/2] ^= 1
	os.WriteFile(packs[0], b, 0o644)
	if code, _, errs := nzip(t, "store", "verify", st); code != 1 || !strings.Contains(errs, `model "base"`) {
		t.Fatalf("verify of a damaged chunk: exit %d: %s", code, errs)
	}
	o := filepath.Join(t.TempDir(), "out")
	if code, _, errs := nzip(t, "store", "get", st, "base", "-o", o); code != 1 || !strings.Contains(errs, `model "base"`) {
		t.Fatalf("get of a damaged chunk: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(o); err == nil {
		t.Fatal("get of a damaged model left an output file")
	}
}

// TestStoreCLIMultiFile: a TF.js model (model.json + weights) is one model
// of two files; get -o DIR writes both byte for byte.
func TestStoreCLIMultiFile(t *testing.T) {
	src := sharedFile(t, "models/original/handtrack/handtrack.json")
	st := filepath.Join(t.TempDir(), "S")
	if code, _, errs := nzip(t, "store", "init", st); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := nzip(t, "store", "add", "-name", "hand", st, src); code != 0 {
		t.Fatal(errs)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := nzip(t, "store", "get", "-o", out, st, "hand"); code != 0 {
		t.Fatal(errs)
	}
	for _, n := range []string{"handtrack.json", "handtrack.bin"} {
		got, err := os.ReadFile(filepath.Join(out, n))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(filepath.Join(filepath.Dir(src), n))
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: other bytes", n)
		}
	}
	if code, _, _ := nzip(t, "store", "get", "-o", out, st, "hand"); code != 1 {
		t.Fatalf("get over existing files without -f: exit %d", code)
	}
	if code, so, errs := nzip(t, "store", "get", "-o", "-", st, "hand"); code != 1 || so != "" || !strings.Contains(errs, "standard output") {
		t.Fatalf("get -o - of a model of two files: exit %d, %d bytes out: %s", code, len(so), errs)
	}
}

// TestStoreCLIRepack: a store whose BF16 exports came before their F32
// originals, all of them (each fine-tune's BF16 a delta of the base's
// until the F32 files arrive; some are not recast then), repacks to the payload of the F32-first
// store; every model restores byte for byte and verifies; an s3:// store
// is refused with exit 1.
func TestStoreCLIRepack(t *testing.T) {
	hub := sharedFile(t, "hub/stories260K")
	dir := t.TempDir()
	mustRun := func(args ...string) string {
		t.Helper()
		code, out, errs := nzip(t, args...)
		if code != 0 {
			t.Fatalf("nzip %v: exit %d: %s", args, code, errs)
		}
		return out
	}
	models := []string{"base", "ft-continued", "ft-fortunes-full", "ft-fortunes-lora", "ft-frozen-embed"}
	var first, f32 []string
	for _, m := range models {
		first = append(first, m+"/model.bf16.safetensors")
		f32 = append(f32, m+"/model.f32.safetensors")
	}
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	if err := os.Chdir(hub); err != nil {
		t.Fatal(err)
	}
	payload := func(st string) int64 {
		var s struct {
			Stored int64 `json:"stored_bytes"`
		}
		if err := json.Unmarshal([]byte(mustRun("store", "stats", "-json", st)), &s); err != nil {
			t.Fatal(err)
		}
		return s.Stored
	}
	ref, st := filepath.Join(dir, "F32first"), filepath.Join(dir, "S")
	mustRun("store", "init", ref)
	mustRun(append([]string{"store", "add", "-q", ref}, append(f32, first...)...)...)
	mustRun("store", "init", st)
	mustRun(append([]string{"store", "add", "-q", st}, append(first, f32...)...)...)
	before := payload(st)
	out := mustRun("store", "repack", st)
	after := payload(st)
	t.Logf("repack: %d -> %d bytes (F32 first: %d)\n%s", before, after, payload(ref), out)
	if !strings.Contains(out, "recast ") || strings.Contains(out, "recast 0 ") || !strings.Contains(out, "decoded per byte restored") || after > before || 100*after > 102*payload(ref) {
		t.Fatalf("repack: %d -> %d bytes, F32 first %d:\n%s", before, after, payload(ref), out)
	}
	for _, n := range append(first, f32...) {
		got := mustRun("store", "get", "-o", "-", st, n)
		want, _ := os.ReadFile(n)
		if got != string(want) {
			t.Fatalf("get %s after repack: other bytes", n)
		}
	}
	if v := mustRun("store", "verify", st); !strings.Contains(v, "10 models") {
		t.Fatalf("verify: %s", v)
	}
	if code, _, errs := nzip(t, "store", "repack", "s3://bucket/prefix"); code != 1 || !strings.Contains(errs, "s3://") {
		t.Fatalf("repack of an s3:// store: exit %d: %s", code, errs)
	}
	if code, _, _ := nzip(t, "store", "repack"); code != 2 {
		t.Fatalf("repack without a store: exit %d, want 2", code)
	}
}

// TestStoreCLIMaxDecode: init -max-decode refuses a bound below 1 or NaN
// (exit 2); a store made with one shows it in stats and stats -json, and
// its models' gets decode within it.
func TestStoreCLIMaxDecode(t *testing.T) {
	hub := sharedFile(t, "hub/stories260K")
	dir := t.TempDir()
	st := filepath.Join(dir, "S")
	for _, bad := range []string{"0.5", "NaN", "-1", "+Inf"} {
		if code, _, errs := nzip(t, "store", "init", "-max-decode", bad, st); code != 2 || !strings.Contains(errs, "-max-decode") {
			t.Fatalf("init -max-decode %s: exit %d: %s", bad, code, errs)
		}
	}
	if code, out, errs := nzip(t, "store", "init", "-max-decode", "2", st); code != 0 || !strings.Contains(out, "at most 2 bytes") {
		t.Fatalf("init -max-decode 2: exit %d: %s%s", code, out, errs)
	}
	var files []string
	for _, m := range []string{"base", "ft-continued"} {
		for _, f := range []string{"model.f32.safetensors", "model.bf16.safetensors"} {
			files = append(files, filepath.Join(hub, m, f))
		}
	}
	if code, _, errs := nzip(t, append([]string{"store", "add", "-q", st}, files...)...); code != 0 {
		t.Fatalf("add: exit %d: %s", code, errs)
	}
	_, out, _ := nzip(t, "store", "stats", st)
	if !strings.Contains(out, "at most 2)") {
		t.Fatalf("stats does not show the bound:\n%s", out)
	}
	_, out, _ = nzip(t, "store", "stats", "-json", st)
	var s struct {
		Raw       int64   `json:"raw_bytes"`
		Decoded   int64   `json:"decoded_bytes"`
		MaxDecode float64 `json:"max_decode"`
		Units     map[string]int
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if s.MaxDecode != 2 || s.Decoded > 2*s.Raw || s.Units["cast"] != 0 || s.Units["delta"] == 0 {
		t.Fatalf("stats -json: %s", out)
	}
}
