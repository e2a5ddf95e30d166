package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"neuralzip/assets"
	"neuralzip/codec"
	"neuralzip/codec/baseline"
)

// buildSetup runs `nzip setup build` and returns the setup's ID.
func buildSetup(t *testing.T, out string, args ...string) string {
	t.Helper()
	code, _, errs := nzip(t, append([]string{"setup", "build", "-o", out}, args...)...)
	if code != 0 {
		t.Fatalf("setup build %v: exit %d %s", args, code, errs)
	}
	s, err := loadSetup(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errs, s.IDString()) {
		t.Fatalf("build summary without the ID: %q", errs)
	}
	return s.IDString()
}

func TestSetupBuildShow(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.safetensors")
	orig := writeSafetensors(t, in, 20000)
	sp := filepath.Join(dir, "m.nzsetup")
	id := buildSetup(t, sp, "-k", "2", in)
	if code, _, errs := nzip(t, "setup", "build", "-q", "-o", sp, in); code != 1 || !strings.Contains(errs, "already exists") {
		t.Fatalf("second build without -f: %d %q", code, errs)
	}
	if code, _, errs := nzip(t, "setup", "build", "-q", "-f", "-k", "2", "-o", sp, in); code != 0 || errs != "" {
		t.Fatalf("build -f -q: %d %q", code, errs)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("left files: %v", ents)
	}

	code, out, errs := nzip(t, "setup", "show", sp)
	if code != 0 {
		t.Fatalf("show: %d %s", code, errs)
	}
	for _, want := range []string{id, "m.safetensors", "BF16:", "F32:", "BITS/SYMBOL", "safetensors"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = nzip(t, "setup", "show", "-json", sp)
	if code != 0 {
		t.Fatalf("show -json: %d %s", code, errs)
	}
	var rep setupReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(orig)
	if rep.ID != id || rep.Bytes <= 0 || len(rep.Sources) != 1 || rep.Sources[0].SHA256 != hex.EncodeToString(sum[:]) ||
		rep.Sources[0].Size != int64(len(orig)) || rep.Sources[0].Format != "safetensors" || len(rep.Sections) != 2 {
		t.Fatalf("show -json: %+v", rep)
	}
	for _, sec := range rep.Sections {
		if len(sec.Tables) == 0 || len(sec.Tables) > 2 || sec.SymbolBits == 0 || sec.ExpectedBits <= 0 || sec.ExpectedBits > float64(sec.SymbolBits)+1 {
			t.Fatalf("section %+v", sec)
		}
		for _, tb := range sec.Tables {
			if tb.Alphabet == 0 || tb.DescriptionBytes == 0 || tb.Chunks == 0 {
				t.Fatalf("table %+v", tb)
			}
		}
	}
	// a sharded model contributes every file
	shard := filepath.Join(dir, "shard")
	os.Mkdir(shard, 0o755)
	writeSafetensors(t, filepath.Join(shard, "model-00001-of-00002.safetensors"), 3000)
	writeSafetensors(t, filepath.Join(shard, "model-00002-of-00002.safetensors"), 4000)
	idx := `{"metadata":{},"weight_map":{"a.weight":"model-00001-of-00002.safetensors","b.weight":"model-00002-of-00002.safetensors"}}`
	ip := filepath.Join(shard, "model.safetensors.index.json")
	os.WriteFile(ip, []byte(idx), 0o644)
	buildSetup(t, filepath.Join(dir, "sharded.nzsetup"), ip, in)
	code, out, _ = nzip(t, "setup", "show", "-json", filepath.Join(dir, "sharded.nzsetup"))
	var srep setupReport
	if err := json.Unmarshal([]byte(out), &srep); code != 0 || err != nil {
		t.Fatalf("show: %d %v", code, err)
	}
	var names []string
	for _, src := range srep.Sources {
		names = append(names, src.Name)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "model-00001-of-00002.safetensors") || !strings.Contains(got, "model-00002-of-00002.safetensors") || !strings.HasSuffix(got, ",m.safetensors") {
		t.Fatalf("sources of a sharded model: %s", got)
	}
	// not a setup
	if code, _, errs := nzip(t, "setup", "show", in); code != 1 || !strings.HasPrefix(errs, "nzip: ") || !strings.Contains(errs, "setup") {
		t.Fatalf("show of a checkpoint: %d %q", code, errs)
	}
	// nothing to build from
	txt := filepath.Join(dir, "notes.txt")
	os.WriteFile(txt, bytes.Repeat([]byte("text\n"), 100), 0o644)
	if code, _, errs := nzip(t, "setup", "build", "-o", filepath.Join(dir, "x.nzsetup"), txt); code != 1 || !strings.Contains(errs, "no float tensors") {
		t.Fatalf("build without floats: %d %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.nzsetup")); err == nil {
		t.Fatal("a failed build left its output")
	}
}

func TestSetupCompressDecompress(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.safetensors")
	orig := writeSafetensors(t, in, 20000)
	other := filepath.Join(dir, "o.safetensors")
	writeSafetensors(t, other, 7000)
	sp := filepath.Join(dir, "m.nzsetup")
	id := buildSetup(t, sp, in)
	wrong := filepath.Join(dir, "o.nzsetup")
	wrongID := buildSetup(t, wrong, "-k", "1", other)
	if id == wrongID {
		t.Fatal("two different setups have one ID")
	}

	// embedded
	arc := filepath.Join(dir, "e.nzip")
	if code, _, errs := nzip(t, "compress", "-setup", sp, "-o", arc, in); code != 0 || !strings.Contains(errs, id) {
		t.Fatalf("compress -setup: %d %s", code, errs)
	}
	if code, out, _ := nzip(t, "decompress", "-o", "-", arc); code != 0 || out != string(orig) {
		t.Fatalf("decompress of an embedded-setup archive: exit %d", code)
	}
	if code, out, errs := nzip(t, "verify", arc); code != 0 || !strings.Contains(out, id+" (embedded)") {
		t.Fatalf("verify: %d %s %s", code, out, errs)
	}
	if code, _, errs := nzip(t, "verify", "-setup", sp, arc); code != 0 {
		t.Fatalf("verify -setup (embedded): %d %s", code, errs)
	}
	if code, _, errs := nzip(t, "verify", "-setup", wrong, arc); code != 1 || !strings.Contains(errs, "wrong setup") {
		t.Fatalf("verify with a wrong setup: %d %q", code, errs)
	}

	// external
	ext := filepath.Join(dir, "x.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-setup", sp, "-setup-external", "-setup-threshold", "0.1", "-o", ext, in); code != 0 {
		t.Fatalf("compress -setup-external: %d %s", code, errs)
	}
	if a, b := fileSize(t, ext), fileSize(t, arc); a >= b {
		t.Fatalf("external archive %d bytes, embedded %d", a, b)
	}
	restored := filepath.Join(dir, "r.safetensors")
	code, _, errs := nzip(t, "decompress", "-q", "-o", restored, ext)
	if code != 1 || !strings.HasPrefix(errs, "nzip: ") || !strings.Contains(errs, "archive needs its setup") || !strings.Contains(errs, id) || !strings.Contains(errs, "-setup") {
		t.Fatalf("decompress without the setup: %d %q", code, errs)
	}
	code, _, errs = nzip(t, "decompress", "-q", "-setup", wrong, "-o", restored, ext)
	if code != 1 || !strings.Contains(errs, "wrong setup") || !strings.Contains(errs, id) || !strings.Contains(errs, wrongID) {
		t.Fatalf("decompress with a wrong setup: %d %q", code, errs)
	}
	if _, err := os.Stat(restored); err == nil {
		t.Fatal("a failed decompress left its output")
	}
	if code, _, errs := nzip(t, "decompress", "-q", "-setup", sp, "-o", restored, ext); code != 0 {
		t.Fatalf("decompress -setup: %d %s", code, errs)
	}
	if b, _ := os.ReadFile(restored); !bytes.Equal(b, orig) {
		t.Fatal("restored file differs")
	}
	tb := filepath.Join(dir, "t.bin")
	if code, _, errs := nzip(t, "decompress", "-q", "-setup", sp, "-tensor", "a.weight", "-o", tb, ext); code != 0 {
		t.Fatalf("decompress -tensor -setup: %d %s", code, errs)
	}
	if code, _, _ := nzip(t, "verify", ext); code != 1 {
		t.Fatalf("verify of an external archive without the setup: exit %d", code)
	}
	if code, out, errs := nzip(t, "verify", "-setup", sp, ext); code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("verify -setup: %d %s %s", code, out, errs)
	}
	// a plain archive takes -setup with a warning
	plain := filepath.Join(dir, "p.nzip")
	nzip(t, "compress", "-q", "-o", plain, in)
	if code, _, errs := nzip(t, "verify", "-setup", sp, plain); code != 0 || !strings.Contains(errs, "warning") {
		t.Fatalf("verify -setup of a plain archive: %d %q", code, errs)
	}

	// inspect names the setup; without an external setup it lists but does not decode
	for _, c := range []struct {
		args    []string
		how     string
		missing bool
	}{
		{[]string{arc}, "embedded", false},
		{[]string{ext}, "external", true},
		{[]string{"-setup", sp, ext}, "external", false},
	} {
		code, out, errs := nzip(t, append([]string{"inspect", "-json"}, c.args...)...)
		if code != 0 {
			t.Fatalf("inspect %v: %d %s", c.args, code, errs)
		}
		var rep inspectReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		s := rep.Setup
		if s == nil || s.ID != id || s.How != c.how || s.Missing != c.missing || (!c.missing && s.Bytes <= 0) {
			t.Fatalf("inspect %v: setup %+v", c.args, s)
		}
		f := rep.Files[0]
		if c.missing != (f.Tensors[0].ExpEntropy == 0) || f.Ratio <= 1 {
			t.Fatalf("inspect %v: %+v", c.args, f)
		}
		code, out, _ = nzip(t, append([]string{"inspect"}, c.args...)...)
		if code != 0 || !strings.Contains(out, "setup: "+id+" ("+c.how) {
			t.Fatalf("inspect %v text: %s", c.args, out)
		}
	}
	// the built-in Gaussian setup is referenced, not embedded, and inspect
	// says so
	g := filepath.Join(dir, "g.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-setup", "gaussian", "-o", g, in); code != 0 {
		t.Fatalf("compress -setup gaussian: %d %s", code, errs)
	}
	gid := hex.EncodeToString(func() []byte { id := codec.GaussianSetup().ID(); return id[:] }())
	if code, out, _ := nzip(t, "inspect", g); code != 0 || !strings.Contains(out, "setup: "+gid+" (the built-in Gaussian setup") || strings.Contains(out, "embedded") {
		t.Fatalf("inspect of a Gaussian-setup archive: %d %s", code, out)
	}
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func TestBenchSetup(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.safetensors")
	writeSafetensors(t, in, 8000)
	sp := filepath.Join(dir, "m.nzsetup")
	buildSetup(t, sp, in)
	// -setup adds nzip+setup to the default list, right after nzip
	code, out, errs := nzip(t, "bench", "-json", "-runs", "1", "-setup", sp, in)
	if code != 0 {
		t.Fatalf("bench -setup: %d %s", code, errs)
	}
	var rows []baseline.Measurement
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.Codec)
		if !r.RoundtripOK || r.Ratio <= 1 {
			t.Errorf("%s: %+v", r.Codec, r)
		}
	}
	want := baseline.Names()
	want = slices.Insert(want, slices.Index(want, "nzip")+1, setupCodecName)
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("codecs %v, want %v", names, want)
	}
	// listed explicitly, referenced externally
	code, out, errs = nzip(t, "bench", "-runs", "1", "-codecs", "nzip+setup,zstd-1", "-setup", sp, "-setup-external", in)
	if code != 0 || !strings.Contains(out, "nzip+setup") || !strings.Contains(out, "bit-exact") {
		t.Fatalf("bench -codecs nzip+setup: %d %s %s", code, out, errs)
	}
}

func TestSetupCompare(t *testing.T) {
	dir := t.TempDir()
	f1, f2 := filepath.Join(dir, "one.safetensors"), filepath.Join(dir, "two.safetensors")
	writeSafetensors(t, f1, 12000)
	writeSafetensors(t, f2, 5000)
	s1, s2 := filepath.Join(dir, "one.nzsetup"), filepath.Join(dir, "two.nzsetup")
	id1 := buildSetup(t, s1, f1)
	id2 := buildSetup(t, s2, f2)
	code, out, errs := nzip(t, "setup", "compare", "-json", "-runs", "1", "-threads", "1", "-setups", s1+","+s2, f1, f2)
	if code != 0 {
		t.Fatalf("compare: %d %s", code, errs)
	}
	var rows []compareRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 {
		t.Fatalf("%d rows, want 8", len(rows))
	}
	gid := codec.GaussianSetup().IDString()
	for i, r := range rows {
		file := []string{"one.safetensors", "two.safetensors"}[i/4]
		setup := []string{"none", "gaussian", "one.nzsetup", "two.nzsetup"}[i%4]
		id := []string{"", gid, id1, id2}[i%4]
		own := (i == 2 || i == 7)
		if r.File != file || r.Setup != setup || r.SetupID != id || r.Own != own || !r.RoundtripOK || r.Ratio <= 1 ||
			r.CompressMBs <= 0 || r.DecompressMBs <= 0 || r.Threads != 1 || r.RatioVsNone <= 0 {
			t.Errorf("row %d: %+v", i, r)
		}
		if setup == "none" && (r.RatioVsNone != 1 || r.SetupEmbedded) {
			t.Errorf("row %d: %+v", i, r)
		}
		// the built-in Gaussian setup is referenced, never embedded
		if setup == "gaussian" && (r.SetupEmbedded || r.SetupBytes != 0) {
			t.Errorf("row %d: %+v", i, r)
		}
		if setup != "none" && setup != "gaussian" && (!r.SetupEmbedded || r.SetupBytes <= 0) {
			t.Errorf("row %d: %+v", i, r)
		}
	}
	code, out, errs = nzip(t, "setup", "compare", "-runs", "1", "-setup-external", "-setups", s1, f1)
	if code != 0 || !strings.Contains(out, "Δ VS NONE") || !strings.Contains(out, "yes") || !strings.Contains(out, "one.nzsetup") || !strings.Contains(out, "gaussian") {
		t.Fatalf("compare text: %d %s %s", code, out, errs)
	}
	if code, _, _ := nzip(t, "setup", "compare", "-setups", filepath.Join(dir, "nope.nzsetup"), f1); code != 1 {
		t.Fatalf("compare with a missing setup: exit %d", code)
	}
}

func TestSetupUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"setup"},
		{"setup", "frobnicate"},
		{"setup", "build", "x.safetensors"},
		{"setup", "build", "-o", "x.nzsetup"},
		{"setup", "build", "-o", "x.nzsetup", "-sample", "2", "x.safetensors"},
		{"setup", "build", "-o", "x.nzsetup", "-chunk", "5", "x.safetensors"},
		{"setup", "show"},
		{"setup", "show", "a", "b"},
		{"setup", "compare", "x.safetensors"},
		{"setup", "compare", "-setups", "a,,b", "x.safetensors"},
		{"setup", "compare", "-setups", "a.nzsetup"},
		{"bench", "-codecs", "nzip+setup", "x"},
		{"bench", "-setup-external", "x"},
		{"compress", "-setup-external", "x"},
		{"compress", "-setup-threshold", "0.1", "x"},
		{"compress", "-setup", "s", "-setup-threshold", "-1", "x"},
	} {
		if code, _, _ := nzip(t, args...); code != 2 {
			t.Errorf("nzip %v: exit %d, want 2", args, code)
		}
	}
	if code, _, _ := nzip(t, "setup", "build", "-h"); code != 0 {
		t.Errorf("setup build -h: exit %d", code)
	}
	if code, _, _ := nzip(t, "compress", "-setup", "/no/such.nzsetup", "/no/such/file"); code != 1 {
		t.Errorf("missing setup: exit %d, want 1", code)
	}
}

// The real model: a setup built from it serves it (own setup), an external
// setup roundtrips.
func TestSetupCorpus(t *testing.T) {
	src := filepath.Join(sharedOriginal(t), "stories260K.bf16.safetensors")
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	sp := filepath.Join(dir, "stories.nzsetup")
	id := buildSetup(t, sp, src)
	arc := filepath.Join(dir, "s.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-setup", sp, "-setup-external", "-o", arc, src); code != 0 {
		t.Fatalf("compress: %s", errs)
	}
	out := filepath.Join(dir, "s.safetensors")
	if code, _, errs := nzip(t, "decompress", "-q", "-setup", sp, "-o", out, arc); code != 0 {
		t.Fatalf("decompress: %s", errs)
	}
	if b, _ := os.ReadFile(out); !bytes.Equal(b, orig) {
		t.Fatal("not restored bit-exact")
	}
	code, js, errs := nzip(t, "setup", "compare", "-json", "-runs", "1", "-setups", sp, src)
	if code != 0 {
		t.Fatalf("compare: %s", errs)
	}
	var rows []compareRow
	if err := json.Unmarshal([]byte(js), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[1].Setup != "gaussian" || !rows[2].Own || rows[2].SetupID != id || !rows[2].RoundtripOK {
		t.Fatalf("compare: %+v", rows)
	}
	t.Logf("stories260K.bf16: per-chunk tables %.4f, Gaussian model (estimate) %.4f, own setup %.4f (%+.2f%%)",
		rows[0].Ratio, rows[1].Ratio, rows[2].Ratio, (rows[2].RatioVsNone-1)*100)
}

// bench and setup compare measure a model of several files as a whole: a
// TF.js manifest with its weight shard (the demo model from assets/).
func TestBenchMultiFileModel(t *testing.T) {
	dir := t.TempDir()
	var want int64
	var main string
	for _, m := range assets.Models() {
		if m.Format != "tfjs" {
			continue
		}
		for _, f := range m.Files {
			b, err := assets.FS.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, filepath.Base(f))
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			want += int64(len(b))
			if main == "" {
				main = p
			}
		}
		break
	}
	if main == "" {
		t.Fatal("no TF.js demo model in assets")
	}
	code, out, errs := nzip(t, "bench", "-json", "-runs", "1", "-codecs", "nzip", main)
	if code != 0 {
		t.Fatalf("bench: %s", errs)
	}
	var rows []baseline.Measurement
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].OriginalBytes != want || !rows[0].RoundtripOK || rows[0].Ratio <= 1 {
		t.Fatalf("bench of the whole model (%d bytes): %+v", want, rows)
	}
	buildSetup(t, filepath.Join(dir, "m.nzsetup"), main)
	code, out, errs = nzip(t, "setup", "compare", "-json", "-runs", "1", "-setups", filepath.Join(dir, "m.nzsetup"), main)
	if code != 0 {
		t.Fatalf("compare: %s", errs)
	}
	var crow []compareRow
	if err := json.Unmarshal([]byte(out), &crow); err != nil {
		t.Fatal(err)
	}
	for _, r := range crow {
		if r.OriginalBytes != want || !r.RoundtripOK {
			t.Fatalf("compare row %+v, want %d bytes", r, want)
		}
	}
}

// nzip setup program writes a setup whose programs compress honours
// (each chosen tensor's blocks are of its program), show lists them, and
// the archive decompresses to the original.
func TestSetupProgram(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.safetensors")
	orig := writeSafetensors(t, in, 20000)
	sp := filepath.Join(dir, "p.nzsetup")
	if code, _, errs := nzip(t, "setup", "program", "-o", sp, "-setup", "gaussian", "a.weight=planes", "b.weight=zstd"); code != 0 || !strings.Contains(errs, "2 chosen program(s)") {
		t.Fatalf("setup program: %d %q", code, errs)
	}
	for _, bad := range [][]string{{"a.weight"}, {"a.weight=lzma"}, {"=zstd"}} {
		if code, _, _ := nzip(t, append([]string{"setup", "program", "-f", "-o", sp + ".x"}, bad...)...); code != 2 {
			t.Errorf("setup program %v: exit %d, want 2", bad, code)
		}
	}
	code, out, errs := nzip(t, "setup", "show", sp)
	if code != 0 || !strings.Contains(out, "programs: 2 tensors") || !strings.Contains(out, "a.weight  planes") {
		t.Fatalf("show: %d %q\n%s", code, errs, out)
	}
	arc := filepath.Join(dir, "m.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-setup", sp, "-o", arc, in); code != 0 {
		t.Fatalf("compress: %d %s", code, errs)
	}
	f, err := os.Open(arc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	rd, err := codec.NewReader(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	fi := rd.Files()[0]
	want := map[string]string{"a.weight": "float byte planes", "b.weight": "zstd"}
	for _, tn := range fi.Tensors {
		for bi, b := range fi.Blocks() {
			if b.Offset < tn.Offset || b.Offset >= tn.Offset+tn.Length {
				continue
			}
			n, err := rd.BlockProgram(0, bi)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(n.Op, want[tn.Name]) {
				t.Errorf("%s: block %d is %q, want %s", tn.Name, bi, n.Op, want[tn.Name])
			}
		}
	}
	back := filepath.Join(dir, "back.safetensors")
	if code, _, errs := nzip(t, "decompress", "-q", "-o", back, arc); code != 0 {
		t.Fatalf("decompress: %d %s", code, errs)
	}
	if b, _ := os.ReadFile(back); !bytes.Equal(b, orig) {
		t.Fatal("decompressed bytes differ")
	}
}
