package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// writeZeroTensor writes a safetensors file of one all-zero BF16 tensor
// name of n bytes, sparse on disk (the data is a hole).
func writeZeroTensor(t *testing.T, path, name string, n int64) {
	t.Helper()
	hdr := fmt.Sprintf(`{%q:{"dtype":"BF16","shape":[%d],"data_offsets":[0,%d]}}`, name, n/2, n)
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	b = append(b, hdr...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(len(b))+n); err != nil {
		t.Fatal(err)
	}
}

// TestTrajectoryDamagedTrailerMagic: one flipped bit in the last trailer's
// magic leaves a complete frame and an index whose CRC checks: that is
// damage, not an interrupted append. verify fails, append refuses without
// -drop-damaged-tail and leaves the archive as it was.
func TestTrajectoryDamagedTrailerMagic(t *testing.T) {
	dir := t.TempDir()
	_, steps := writeSteps(t, dir, 4, 2000)
	run := filepath.Join(dir, "run.nztraj")
	if code, _, errs := nzip(t, append([]string{"trajectory", "pack", "-q", "-o", run}, steps[:3]...)...); code != 0 {
		t.Fatalf("pack: %d %s", code, errs)
	}
	b, err := os.ReadFile(run)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-3] ^= 0x04 // inside "NZTREND\x00"
	if err := os.WriteFile(run, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := nzip(t, "trajectory", "verify", run); code != 1 || !strings.Contains(errs, "damaged") {
		t.Fatalf("verify of a damaged trailer magic: %d %s %s", code, out, errs)
	}
	if code, out, _ := nzip(t, "trajectory", "ls", run); code != 0 || !strings.Contains(out, "damaged") || strings.Contains(out, "interrupted append") {
		t.Fatalf("ls of a damaged trailer magic: %d %s", code, out)
	}
	if code, _, errs := nzip(t, "trajectory", "append", "-q", run, steps[3]); code != 1 || !strings.Contains(errs, "-drop-damaged-tail") && !strings.Contains(errs, "damaged") {
		t.Fatalf("append after a damaged trailer magic: %d %s", code, errs)
	}
	if got, _ := os.ReadFile(run); !bytes.Equal(got, b) {
		t.Fatal("a refused append changed the archive")
	}
	if code, _, errs := nzip(t, "trajectory", "append", "-q", "-drop-damaged-tail", run, steps[3]); code != 0 || !strings.Contains(errs, "cut off") {
		t.Fatalf("append -drop-damaged-tail: %d %s", code, errs)
	}
	if code, out, errs := nzip(t, "trajectory", "verify", run); code != 0 || !strings.Contains(out, "OK: 3 frames") {
		t.Fatalf("verify after dropping the damaged tail: %d %s %s", code, out, errs)
	}
}

// TestDecompressTensorStreams: decompress -tensor streams the tensor block
// by block; it held the whole tensor in memory (about 3× its size) while
// whole-file decompress streamed.
func TestDecompressTensorStreams(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "zero.safetensors")
	writeZeroTensor(t, in, "w", 256<<20)
	arc := in + ".nzip"
	if code, _, errs := nzip(t, "compress", "-q", "-threads", "2", in); code != 0 {
		t.Fatalf("compress: %d %s", code, errs)
	}
	if st, err := os.Stat(arc); err != nil || st.Size() > 64<<10 {
		t.Fatalf("archive of a zero tensor: %v %v", st.Size(), err)
	}
	// to stdout, counted: nothing of the tensor is kept, in memory or on disk
	var out zeroCounter
	var errb bytes.Buffer
	var code int
	n := allocated(func() {
		code = run(context.Background(), []string{"decompress", "-q", "-threads", "2", "-tensor", "w", "-o", "-", arc}, &out, &errb)
	})
	if code != 0 || out.n != 256<<20 || out.nonzero {
		t.Fatalf("decompress -tensor: %d %s: %d bytes (nonzero %v)", code, errb.String(), out.n, out.nonzero)
	}
	if n > 64<<20 {
		t.Fatalf("decompress -tensor of a 256 MiB tensor allocated %d MiB", n>>20)
	}
	t.Logf("256 MiB tensor: %.1f MiB allocated", float64(n)/(1<<20))
}

// zeroCounter counts the bytes written to it and whether any was not 0.
type zeroCounter struct {
	n       int64
	nonzero bool
}

func (w *zeroCounter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	w.nonzero = w.nonzero || bytes.ContainsFunc(p, func(r rune) bool { return r != 0 })
	return len(p), nil
}

// TestThreadsClamped: -threads 1000000 (a million goroutines, each with
// its coder: half a minute and gigabytes) is clamped in every command that
// takes it, with a warning on stderr only (bench -json stays one JSON
// array on stdout).
func TestThreadsClamped(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.safetensors")
	orig := writeSafetensors(t, in, 3000)
	_, steps := writeSteps(t, dir, 3, 2000)
	run := filepath.Join(dir, "run.nztraj")
	setup := filepath.Join(dir, "s.nzsetup")
	buildSetup(t, setup, in)
	const many = "1000000"
	for _, c := range [][]string{
		{"compress", "-q", "-threads", many, in},
		{"decompress", "-q", "-threads", many, "-o", filepath.Join(dir, "out"), in + ".nzip"},
		{"decompress", "-q", "-threads", many, "-tensor", "a.weight", "-o", filepath.Join(dir, "a.raw"), in + ".nzip"},
		{"verify", "-threads", many, in + ".nzip"},
		{"bench", "-json", "-runs", "1", "-codecs", "nzip,zipnn,dfloat11", "-threads", many, in},
		{"bench", "-json", "-runs", "1", "-codecs", "nzip", "-backend", "cpu", "-threads", many, in},
		{"setup", "compare", "-json", "-runs", "1", "-setups", setup, "-threads", many, in},
		{"trajectory", "pack", "-q", "-threads", many, "-o", run, steps[0], steps[1]},
		{"trajectory", "append", "-q", "-threads", many, run, steps[2]},
		{"trajectory", "verify", "-q", "-threads", many, run},
		{"trajectory", "extract", "-q", "-threads", many, "-o", filepath.Join(dir, "x"), run, "2"},
		{"trajectory", "extract", "-q", "-all", "-threads", many, "-d", filepath.Join(dir, "all"), run},
		{"trajectory", "repack", "-q", "-threads", many, "-o", filepath.Join(dir, "re.nztraj"), run},
	} {
		var code int
		var out, errs string
		n := allocated(func() { code, out, errs = nzip(t, c...) })
		if code != 0 {
			t.Fatalf("%v: %d %s", c, code, errs)
		}
		if !strings.Contains(errs, "-threads "+many+" is more than can be used") {
			t.Errorf("%v: no word of the clamp on stderr: %q", c, errs)
		}
		if strings.Contains(out, "threads "+many) {
			t.Errorf("%v: the warning went to stdout", c)
		}
		if slices.Contains(c, "-json") {
			var rows []map[string]any
			if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) == 0 {
				t.Errorf("%v: stdout is not a JSON array: %v", c, err)
			}
			for _, r := range rows {
				if th, _ := r["threads"].(float64); th > 256 {
					t.Errorf("%v: a row reports %v threads", c, th)
				}
			}
		}
		if n > 256<<20 {
			t.Errorf("%v: allocated %d MiB", c, n>>20)
		}
		t.Logf("%v: %.1f MiB", c[:2], float64(n)/(1<<20))
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "out")); !bytes.Equal(got, orig) {
		t.Fatal("decompress with clamped threads differs")
	}
}

// writeNamedTensors writes a safetensors file of small BF16 tensors with
// the given names.
func writeNamedTensors(t *testing.T, path string, names ...string) {
	t.Helper()
	const n = 512
	hdr := "{"
	for i, name := range names {
		q, _ := json.Marshal(name)
		if i > 0 {
			hdr += ","
		}
		hdr += fmt.Sprintf(`%s:{"dtype":"BF16","shape":[%d],"data_offsets":[%d,%d]}`, q, n, 2*n*i, 2*n*(i+1))
	}
	hdr += "}"
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	b = append(b, hdr...)
	for i := range n * len(names) {
		b = binary.LittleEndian.AppendUint16(b, uint16(0x3c00+i%97))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rawControl reports whether s holds a control character other than a
// newline or a tab: what a terminal acts on.
func rawControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 })
}

// TestHostileNamesEscaped: tensor, file and frame names with control
// characters (a title-setting escape sequence, a carriage return) are
// printed escaped in text output (inspect, trajectory ls, messages,
// errors) and exactly in JSON.
func TestHostileNamesEscaped(t *testing.T) {
	dir := t.TempDir()
	title, cr := "x\x1b]0;pwned\x07", "a\rb"
	in := filepath.Join(dir, "m.safetensors")
	writeNamedTensors(t, in, title, cr, "plain")
	arc := in + ".nzip"
	if code, _, errs := nzip(t, "compress", "-q", in); code != 0 {
		t.Fatalf("compress: %d %s", code, errs)
	}
	for _, f := range []string{in, arc} {
		code, out, errs := nzip(t, "inspect", f)
		if code != 0 || rawControl(out) || rawControl(errs) {
			t.Fatalf("inspect %s: %d, raw control characters in %q %q", f, code, out, errs)
		}
		if !strings.Contains(out, strconv.Quote(title)) || !strings.Contains(out, strconv.Quote(cr)) || !strings.Contains(out, "\nplain ") {
			t.Fatalf("inspect %s: names not shown quoted (or a plain one quoted): %s", f, out)
		}
		code, out, _ = nzip(t, "inspect", "-json", f)
		if code != 0 || !strings.Contains(out, `"x\u001b]0;pwned\u0007"`) || !strings.Contains(out, `"a\rb"`) {
			t.Fatalf("inspect -json %s: names not exact: %d %s", f, code, out)
		}
	}
	code, _, errs := nzip(t, "decompress", "-tensor", title, "-o", filepath.Join(dir, "t.raw"), arc)
	if code != 0 || rawControl(errs) || !strings.Contains(errs, strconv.Quote(title)) {
		t.Fatalf("decompress -tensor: %d %q", code, errs)
	}
	// a frame named after a file whose name holds them
	step := filepath.Join(dir, "s"+title+cr+".safetensors")
	writeNamedTensors(t, step, "w")
	run := filepath.Join(dir, "run.nztraj")
	if code, out, errs := nzip(t, "trajectory", "pack", "-o", run, step); code != 0 || rawControl(out) || rawControl(errs) {
		t.Fatalf("trajectory pack: %d %q %q", code, out, errs)
	}
	code, out, errs := nzip(t, "trajectory", "ls", run)
	if code != 0 || rawControl(out) || !strings.Contains(out, strconv.Quote(filepath.Base(step))) {
		t.Fatalf("trajectory ls: %d %q %q", code, out, errs)
	}
	if code, out, _ := nzip(t, "trajectory", "ls", "-json", run); code != 0 || !strings.Contains(out, `s`+`x\u001b]0;pwned\u0007a\rb.safetensors`) {
		t.Fatalf("trajectory ls -json: %d %s", code, out)
	}
	if code, out, errs := nzip(t, "trajectory", "extract", "-o", filepath.Join(dir, "x"), run, "0"); code != 0 || rawControl(out) || rawControl(errs) {
		t.Fatalf("trajectory extract: %d %q %q", code, out, errs)
	}
	// errors that quote a name as it is
	if code, _, errs := nzip(t, "inspect", filepath.Join(dir, "no"+title)); code != 1 || rawControl(errs) || !strings.Contains(errs, `\x1b]0;pwned\a`) {
		t.Fatalf("an error naming a hostile path: %d %q", code, errs)
	}
}

func TestTermSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain: ok\n\tnext": "plain: ok\n\tnext",
		"é ü 名前":            "é ü 名前",
		"x\x1b]0;pwned\x07": `x\x1b]0;pwned\a`,
		"a\rb\x7f":          `a\rb\x7f`,
		"\u202eevil":        `\u202eevil`,
		"bad\xffutf8":       `bad\xffutf8`,
	} {
		if got := termSafe(in); got != want {
			t.Errorf("termSafe(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"w.weight": "w.weight", "名前": "名前", "a\rb": `"a\rb"`, "a b": "a b", "a\tb": `"a\tb"`} {
		if got := shown(in); got != want {
			t.Errorf("shown(%q) = %q, want %q", in, got, want)
		}
	}
}
