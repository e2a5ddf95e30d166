package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nzip runs the CLI in-process and returns exit status, stdout, stderr.
func nzip(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// writeSafetensors writes a small valid safetensors file with a BF16 and an
// F32 tensor of weight-like values and returns its bytes.
func writeSafetensors(t *testing.T, path string, n int) []byte {
	t.Helper()
	var bf, f32 []byte
	for i := 0; i < n; i++ {
		x := float32(math.Sin(float64(i)*0.7)) * 0.05 * float32(1+i%7)
		bf = binary.LittleEndian.AppendUint16(bf, uint16(math.Float32bits(x)>>16))
		f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(x*3))
	}
	hdr := fmt.Sprintf(`{"a.weight":{"dtype":"BF16","shape":[%d],"data_offsets":[0,%d]},"b.weight":{"dtype":"F32","shape":[%d],"data_offsets":[%d,%d]}}`,
		n, len(bf), n, len(bf), len(bf)+len(f32))
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	var file []byte
	file = binary.LittleEndian.AppendUint64(file, uint64(len(hdr)))
	file = append(file, hdr...)
	file = append(file, bf...)
	file = append(file, f32...)
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestCompressDecompressVerify(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.safetensors")
	orig := writeSafetensors(t, in, 20000)
	if code, _, errs := nzip(t, "compress", "-q", in); code != 0 {
		t.Fatalf("compress: %d %s", code, errs)
	}
	if code, _, errs := nzip(t, "compress", "-q", in); code != 1 || !strings.Contains(errs, "already exists") {
		t.Fatalf("second compress without -f: %d %q", code, errs)
	}
	if code, _, errs := nzip(t, "compress", "-q", "-f", "-threads", "1", in); code != 0 {
		t.Fatalf("compress -f: %d %s", code, errs)
	}
	arc := in + ".nzip"
	if code, out, _ := nzip(t, "verify", arc); code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("verify: %d %s", code, out)
	}
	// the input is untouched and no temporary files are left
	if b, _ := os.ReadFile(in); !bytes.Equal(b, orig) {
		t.Fatal("input changed")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("left files: %v", ents)
	}
	os.Remove(in)
	if code, _, errs := nzip(t, "decompress", "-q", arc); code != 0 {
		t.Fatalf("decompress: %d %s", code, errs)
	}
	if b, _ := os.ReadFile(in); !bytes.Equal(b, orig) {
		t.Fatal("decompressed file differs")
	}
	// one tensor
	tb := filepath.Join(dir, "t.bin")
	if code, _, errs := nzip(t, "decompress", "-q", "-tensor", "b.weight", "-o", tb, arc); code != 0 {
		t.Fatalf("decompress -tensor: %d %s", code, errs)
	}
	if b, _ := os.ReadFile(tb); !bytes.Equal(b, orig[len(orig)-80000:]) {
		t.Fatal("tensor bytes differ")
	}
	if code, _, _ := nzip(t, "decompress", "-tensor", "nope", "-o", tb+"2", arc); code != 1 {
		t.Fatalf("unknown tensor: exit %d", code)
	}
	// stdout
	if code, out, _ := nzip(t, "decompress", "-o", "-", arc); code != 0 || out != string(orig) {
		t.Fatalf("decompress -o -: exit %d, %d bytes", code, len(out))
	}
	// compress -o - writes the archive to stdout (the same bytes as to a
	// file, no file named "-"), which decompresses to the original
	want, _ := os.ReadFile(arc)
	code, out, errs := nzip(t, "compress", "-o", "-", in)
	if code != 0 || out != string(want) {
		t.Fatalf("compress -o -: exit %d, %d bytes (the file's archive %d), %s", code, len(out), len(want), errs)
	}
	if _, err := os.Stat("-"); err == nil {
		t.Fatal(`compress -o - made a file named "-"`)
	}
}

func TestCorruptArchive(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.safetensors")
	writeSafetensors(t, in, 30000)
	arc := in + ".nzip"
	if code, _, errs := nzip(t, "compress", "-q", in); code != 0 {
		t.Fatal(errs)
	}
	b, _ := os.ReadFile(arc)
	b[len(b)/3] ^= 0x40
	os.WriteFile(arc, b, 0o644)
	code, _, errs := nzip(t, "verify", arc)
	if code != 1 || !strings.HasPrefix(errs, "nzip: ") || !strings.Contains(errs, "block") {
		t.Fatalf("verify of a damaged archive: exit %d, %q", code, errs)
	}
	os.Remove(in)
	if code, _, _ := nzip(t, "decompress", "-q", arc); code != 1 {
		t.Fatalf("decompress of a damaged archive: exit %d", code)
	}
	if _, err := os.Stat(in); err == nil {
		t.Fatal("a damaged archive left an output file")
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}
	// truncated and not-an-archive
	os.WriteFile(arc, b[:len(b)-10], 0o644)
	if code, _, errs := nzip(t, "verify", arc); code != 1 || !strings.Contains(errs, "codec:") {
		t.Fatalf("truncated: %d %q", code, errs)
	}
	os.WriteFile(arc, []byte("hello"), 0o644)
	if code, _, errs := nzip(t, "verify", arc); code != 1 || !strings.Contains(errs, "not an nzip archive") {
		t.Fatalf("not an archive: %d %q", code, errs)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"compress"},
		{"compress", "-nosuchflag", "x"},
		{"compress", "-chunk", "5", "x"},
		{"decompress", "a", "b"},
		{"bench"},
		{"bench", "-codecs", "nosuch", "x"},
		{"inspect"},
	} {
		if code, _, _ := nzip(t, args...); code != 2 {
			t.Errorf("nzip %v: exit %d, want 2", args, code)
		}
	}
	if code, _, _ := nzip(t, "compress", "/no/such/file"); code != 1 {
		t.Errorf("missing input: exit %d, want 1", code)
	}
	// a flag out of range is named, with its range
	for _, c := range []struct{ flag, val, says string }{
		{"-threads", "-2", "-threads -2: must be 0"},
		{"-chunk", "5", "-chunk 5: must be 256..262143"},
		{"-level", "23", "-level 23: must be 1..22"},
		{"-setup-threshold", "NaN", "-setup-threshold NaN: must be a fraction"},
		{"-setup-threshold", "-0.5", "-setup-threshold -0.5: must be a fraction"},
	} {
		if code, _, errs := nzip(t, "compress", c.flag, c.val, "x"); code != 2 || !strings.HasPrefix(errs, "nzip compress: "+c.says) {
			t.Errorf("compress %s %s: exit %d: %.80q", c.flag, c.val, code, errs)
		}
	}
	if code, _, _ := nzip(t, "bench", "-setup-threshold", "NaN", "x"); code != 2 {
		t.Errorf("bench -setup-threshold NaN: exit %d, want 2", code)
	}
}

// TestCompressArchive: compressing an nzip archive works (opaque bytes)
// but warns, unless -q.
func TestCompressArchive(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.safetensors")
	writeSafetensors(t, in, 3000)
	if code, _, errs := nzip(t, "compress", "-q", in); code != 0 {
		t.Fatal(errs)
	}
	code, _, errs := nzip(t, "compress", in+".nzip")
	if code != 0 || !strings.Contains(errs, "already an nzip archive") {
		t.Fatalf("compress of an archive: exit %d: %q", code, errs)
	}
	if code, _, errs := nzip(t, "compress", "-q", "-f", in+".nzip"); code != 0 || errs != "" {
		t.Fatalf("compress -q of an archive: exit %d: %q", code, errs)
	}
}

func TestOpaqueAndMalformedInputs(t *testing.T) {
	dir := t.TempDir()
	// not a checkpoint
	txt := filepath.Join(dir, "notes.txt")
	os.WriteFile(txt, bytes.Repeat([]byte("plain text\n"), 1000), 0o644)
	// claims safetensors (length + '{') but the JSON is broken
	bad := filepath.Join(dir, "bad.safetensors")
	b := binary.LittleEndian.AppendUint64(nil, 10)
	b = append(b, []byte(`{"x":[1,2,`)...)
	b = append(b, make([]byte, 100)...)
	os.WriteFile(bad, b, 0o644)
	for _, p := range []string{txt, bad} {
		code, _, errs := nzip(t, "compress", "-q", p)
		if code != 0 {
			t.Fatalf("%s: exit %d %s", p, code, errs)
		}
		if p == bad && !strings.Contains(errs, "warning") {
			t.Fatalf("malformed file compressed without a warning: %q", errs)
		}
		if code, _, _ := nzip(t, "verify", p+".nzip"); code != 0 {
			t.Fatalf("%s: verify failed", p)
		}
	}
}

func TestInspectJSON(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.safetensors")
	writeSafetensors(t, in, 5000)
	nzip(t, "compress", "-q", in)
	for _, p := range []string{in, in + ".nzip"} {
		code, out, errs := nzip(t, "inspect", "-json", p)
		if code != 0 {
			t.Fatalf("inspect %s: %s", p, errs)
		}
		var rep inspectReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		f := rep.Files[0]
		if len(f.Tensors) != 2 || f.Tensors[0].Name != "a.weight" || f.Tensors[0].ExpEntropy <= 0 || f.BoundRatio <= 1 {
			t.Fatalf("%s: %+v", p, f)
		}
		if rep.Kind == "archive" && (f.Compressed <= 0 || f.Tensors[1].Compressed <= 0 || f.Ratio <= 1) {
			t.Fatalf("archive sizes missing: %+v", f)
		}
	}
	if code, out, _ := nzip(t, "inspect", in); code != 0 || !strings.Contains(out, "b.weight") || !strings.Contains(out, "order-0 bound") {
		t.Fatalf("inspect text: %s", out)
	}
}

// A sharded model becomes one archive that restores every file.
func TestShardedModel(t *testing.T) {
	dir := t.TempDir()
	s1 := writeSafetensors(t, filepath.Join(dir, "model-00001-of-00002.safetensors"), 3000)
	// second shard with different tensor names
	var f32 []byte
	for i := 0; i < 4000; i++ {
		f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(float32(i%13)*0.01))
	}
	hdr := fmt.Sprintf(`{"c.weight":{"dtype":"F32","shape":[4000],"data_offsets":[0,%d]}}`, len(f32))
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	s2 := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	s2 = append(append(s2, hdr...), f32...)
	os.WriteFile(filepath.Join(dir, "model-00002-of-00002.safetensors"), s2, 0o644)
	idx := `{"metadata":{"total_size":1},"weight_map":{"a.weight":"model-00001-of-00002.safetensors","b.weight":"model-00001-of-00002.safetensors","c.weight":"model-00002-of-00002.safetensors"}}`
	ip := filepath.Join(dir, "model.safetensors.index.json")
	os.WriteFile(ip, []byte(idx), 0o644)
	if code, _, errs := nzip(t, "compress", "-q", ip); code != 0 {
		t.Fatalf("compress index: %s", errs)
	}
	out := filepath.Join(dir, "restored")
	if code, _, errs := nzip(t, "decompress", "-q", "-o", out, ip+".nzip"); code != 0 {
		t.Fatalf("decompress: %s", errs)
	}
	for name, want := range map[string][]byte{"model.safetensors.index.json": []byte(idx), "model-00001-of-00002.safetensors": s1, "model-00002-of-00002.safetensors": s2} {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s not restored: %v", name, err)
		}
	}
}

func TestSafeName(t *testing.T) {
	for _, bad := range []string{"", "../x", "/etc/passwd", "a/../../b", "..", ".", "a\x00b", `a\b`, "a//b", "./a", "a/", "sub/../x", "sub/./x"} {
		if safeName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// archive names are slash-separated on every system (on Windows too)
	for _, ok := range []string{"model.safetensors", "sub/model.bin", "weights/group1-shard1of2.bin"} {
		if err := safeName(ok); err != nil {
			t.Errorf("%q rejected: %v", ok, err)
		}
	}
}

// Multi-file models of every kind restore all their files: an ONNX model
// with external data and a TF.js model with weights in a subdirectory.
func TestMultiFileFixtures(t *testing.T) {
	for _, c := range []struct {
		dir, main string
		files     []string
	}{
		{"../../checkpoint/testdata/onnx", "external.onnx", []string{"external.onnx", "external.bin", "whole.bin"}},
		{"../../checkpoint/testdata/tfjs", "model.json", nil},
	} {
		work := t.TempDir()
		// copy the fixture directory
		filepath.Walk(c.dir, func(p string, info os.FileInfo, err error) error {
			if err != nil || !info.Mode().IsRegular() {
				return err
			}
			rel, _ := filepath.Rel(c.dir, p)
			b, _ := os.ReadFile(p)
			os.MkdirAll(filepath.Join(work, "in", filepath.Dir(rel)), 0o755)
			return os.WriteFile(filepath.Join(work, "in", rel), b, 0o644)
		})
		in := filepath.Join(work, "in", c.main)
		arc := filepath.Join(work, "m.nzip")
		if code, _, errs := nzip(t, "compress", "-q", "-o", arc, in); code != 0 {
			t.Fatalf("%s: compress: %s", c.main, errs)
		}
		out := filepath.Join(work, "out")
		if code, _, errs := nzip(t, "decompress", "-q", "-o", out, arc); code != 0 {
			t.Fatalf("%s: decompress: %s", c.main, errs)
		}
		n := 0
		filepath.Walk(out, func(p string, info os.FileInfo, err error) error {
			if err != nil || !info.Mode().IsRegular() {
				return err
			}
			rel, _ := filepath.Rel(out, p)
			want, err := os.ReadFile(filepath.Join(work, "in", rel))
			got, _ := os.ReadFile(p)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %s not restored: %v", c.main, rel, err)
			}
			n++
			return nil
		})
		if n < 2 || (c.files != nil && n != len(c.files)) {
			t.Errorf("%s: %d files restored", c.main, n)
		}
		// a damaged archive leaves nothing, not even the directories
		// made for it
		b, _ := os.ReadFile(arc)
		for i := len(b) / 3; i < len(b)/3+16; i++ {
			b[i] ^= 0x5a
		}
		os.WriteFile(arc, b, 0o644)
		fresh := filepath.Join(work, "fresh", "out")
		if code, _, _ := nzip(t, "decompress", "-q", "-o", fresh, arc); code != 1 {
			t.Fatalf("%s: decompress of a damaged archive: exit %d", c.main, code)
		}
		if _, err := os.Stat(filepath.Join(work, "fresh")); err == nil {
			t.Errorf("%s: a failed decompress left the directories it made", c.main)
		}
	}
}
