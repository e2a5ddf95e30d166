package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"neuralzip/assets"
)

// writeStep writes a safetensors checkpoint of a synthetic training run at
// the given step: BF16 and F32 weights that drift a little per step.
func writeStep(t *testing.T, path string, n, step int) []byte {
	t.Helper()
	file := driftFile("a.weight", "b.weight", n, step, 0, 1)
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// writeSteps writes steps 0..count-1 (n values per tensor) as
// DIR/step_S.safetensors and returns their bytes and paths.
func writeSteps(t *testing.T, dir string, count, n int) (files [][]byte, paths []string) {
	t.Helper()
	for s := range count {
		p := filepath.Join(dir, fmt.Sprintf("step_%d.safetensors", s))
		files, paths = append(files, writeStep(t, p, n, s)), append(paths, p)
	}
	return files, paths
}

// driftFile is a safetensors file of a BF16 tensor wn and an F32 tensor bn
// of n values each at the given training step: value i is
// sin((i+shift)·0.7)·0.05·(1+i%7) + step·1e-4·cos(i·mul) (the F32 one 3×).
func driftFile(wn, bn string, n, step, shift, mul int) []byte {
	var bf, f32 []byte
	for i := 0; i < n; i++ {
		x := float32(math.Sin(float64(i+shift)*0.7))*0.05*float32(1+i%7) + float32(step)*1e-4*float32(math.Cos(float64(i*mul)))
		bf = binary.LittleEndian.AppendUint16(bf, uint16(math.Float32bits(x)>>16))
		f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(x*3))
	}
	hdr := fmt.Sprintf(`{%q:{"dtype":"BF16","shape":[%d],"data_offsets":[0,%d]},%q:{"dtype":"F32","shape":[%d],"data_offsets":[%d,%d]}}`,
		wn, n, len(bf), bn, n, len(bf), len(bf)+len(f32))
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	var file []byte
	file = binary.LittleEndian.AppendUint64(file, uint64(len(hdr)))
	file = append(file, hdr...)
	file = append(file, bf...)
	return append(file, f32...)
}

func TestCompressRef(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.safetensors")
	ft := filepath.Join(dir, "ft.safetensors")
	other := filepath.Join(dir, "other.safetensors")
	writeStep(t, base, 30000, 0)
	want := writeStep(t, ft, 30000, 3)
	writeStep(t, other, 30000, 9)
	if code, _, errs := nzip(t, "compress", "-q", "-ref", base, ft); code != 0 {
		t.Fatalf("compress -ref: %d %s", code, errs)
	}
	arc := ft + ".nzip"
	plain := filepath.Join(dir, "plain.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-o", plain, ft); code != 0 {
		t.Fatalf("compress: %d %s", code, errs)
	}
	if a, b := refFileSize(t, arc), refFileSize(t, plain); a >= b {
		t.Fatalf("conditioned archive %d bytes, independent %d", a, b)
	}
	if code, out, errs := nzip(t, "verify", "-ref", base, arc); code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("verify -ref: %d %s %s", code, out, errs)
	}
	out := filepath.Join(dir, "out.safetensors")
	// missing and wrong reference: clear errors, no output
	if code, _, errs := nzip(t, "decompress", "-q", "-o", out, arc); code != 1 || !strings.Contains(errs, "reference missing") || !strings.Contains(errs, "base.safetensors") {
		t.Fatalf("decompress without -ref: %d %q", code, errs)
	}
	if code, _, errs := nzip(t, "decompress", "-q", "-o", out, "-ref", other, arc); code != 1 || !strings.Contains(errs, "wrong reference") {
		t.Fatalf("decompress with the wrong -ref: %d %q", code, errs)
	}
	if code, _, errs := nzip(t, "verify", arc); code != 1 || !strings.Contains(errs, "reference missing") {
		t.Fatalf("verify without -ref: %d %q", code, errs)
	}
	if code, _, errs := nzip(t, "verify", "-ref", other, arc); code != 1 || !strings.Contains(errs, "wrong reference") {
		t.Fatalf("verify with the wrong -ref: %d %q", code, errs)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("output written despite a missing reference")
	}
	// inspect lists the archive without the reference and decodes it with
	if code, out, errs := nzip(t, "inspect", arc); code != 0 || !strings.Contains(out, "reference: base.safetensors") || !strings.Contains(out, "pass -ref FILE") {
		t.Fatalf("inspect without -ref: %d %s %s", code, out, errs)
	}
	if code, out, errs := nzip(t, "inspect", "-ref", base, arc); code != 0 || strings.Contains(out, "pass -ref FILE") || !strings.Contains(out, "a.weight  BF16") || !strings.Contains(out, "against the reference") {
		t.Fatalf("inspect -ref: %d %s %s", code, out, errs)
	}
	if code, _, errs := nzip(t, "inspect", "-ref", other, arc); code != 1 || !strings.Contains(errs, "wrong reference") {
		t.Fatalf("inspect with the wrong -ref: %d %q", code, errs)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}
	// the reference may be renamed: it is found by its SHA-256
	moved := filepath.Join(dir, "renamed-base.bin")
	b, _ := os.ReadFile(base)
	os.WriteFile(moved, b, 0o644)
	if code, _, errs := nzip(t, "decompress", "-q", "-o", out, "-ref", moved, arc); code != 0 {
		t.Fatalf("decompress -ref: %d %s", code, errs)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Fatal("decompressed file differs")
	}
}

func refFileSize(t *testing.T, p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func TestTrajectoryCLI(t *testing.T) {
	dir := t.TempDir()
	files, _ := writeSteps(t, dir, 12, 5000)
	run := filepath.Join(dir, "run.nztraj")
	// a quoted glob is sorted naturally: step_2 before step_10
	if code, _, errs := nzip(t, "trajectory", "pack", "-q", "-plan=false", "-o", run, "-keyframe", "4", filepath.Join(dir, "step_*.safetensors")); code != 0 {
		t.Fatalf("pack: %d %s", code, errs)
	}
	checkPlannedCLI(t, dir, files, run)
	code, out, errs := nzip(t, "trajectory", "ls", "-json", run)
	if code != 0 {
		t.Fatalf("ls: %d %s", code, errs)
	}
	var ls struct {
		Keyframe int `json:"keyframe"`
		Frames   []struct {
			Name string `json:"name"`
			Ref  int    `json:"ref"`
		} `json:"frames"`
	}
	if err := json.Unmarshal([]byte(out), &ls); err != nil {
		t.Fatal(err)
	}
	if len(ls.Frames) != 12 || ls.Keyframe != 4 {
		t.Fatalf("ls: %+v", ls)
	}
	for i, f := range ls.Frames {
		if f.Name != fmt.Sprintf("step_%d.safetensors", i) {
			t.Fatalf("frame %d is %s: not in natural order", i, f.Name)
		}
		if (i%4 == 0) != (f.Ref < 0) {
			t.Fatalf("frame %d: ref %d with keyframe interval 4", i, f.Ref)
		}
	}
	if code, out, _ := nzip(t, "trajectory", "ls", run); code != 0 || !strings.Contains(out, "step_11.safetensors") {
		t.Fatalf("ls: %d %s", code, out)
	}
	for _, name := range []string{"step_7.safetensors", "11", "0", "step_5"} {
		o := filepath.Join(dir, "x-"+name)
		if code, _, errs := nzip(t, "trajectory", "extract", "-q", "-o", o, run, name); code != 0 {
			t.Fatalf("extract %s: %d %s", name, code, errs)
		}
		got, _ := os.ReadFile(o)
		i := 0
		fmt.Sscanf(strings.TrimPrefix(name, "step_"), "%d", &i)
		if !bytes.Equal(got, files[i]) {
			t.Fatalf("extract %s differs", name)
		}
	}
	if code, _, errs := nzip(t, "trajectory", "extract", "-q", "-o", filepath.Join(dir, "y"), run, "nope"); code != 1 || !strings.Contains(errs, "no such frame") {
		t.Fatalf("extract of a missing frame: %d %q", code, errs)
	}
	// append after an interrupted append (garbage tail)
	files = append(files, writeStep(t, filepath.Join(dir, "step_12.safetensors"), 5000, 12))
	f, _ := os.OpenFile(run, os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte("half a frame"))
	f.Close()
	code, out, _ = nzip(t, "trajectory", "ls", run)
	if code != 0 || !strings.Contains(out, "interrupted append") {
		t.Fatalf("ls of an interrupted archive: %d %s", code, out)
	}
	if code, _, errs := nzip(t, "trajectory", "append", "-q", run, filepath.Join(dir, "step_12.safetensors")); code != 0 {
		t.Fatalf("append: %d %s", code, errs)
	}
	o := filepath.Join(dir, "x12")
	if code, _, errs := nzip(t, "trajectory", "extract", "-q", "-o", o, run, "step_12.safetensors"); code != 0 {
		t.Fatalf("extract after append: %d %s", code, errs)
	}
	if got, _ := os.ReadFile(o); !bytes.Equal(got, files[12]) {
		t.Fatal("appended step differs")
	}
	if code, out, _ := nzip(t, "trajectory", "ls", run); code != 0 || strings.Contains(out, "interrupted") || !strings.Contains(out, "step_12") {
		t.Fatalf("ls after append: %d %s", code, out)
	}
	// pack refuses to overwrite; usage errors
	if code, _, errs := nzip(t, "trajectory", "pack", "-q", "-o", run, filepath.Join(dir, "step_0.safetensors")); code != 1 || !strings.Contains(errs, "already exists") {
		t.Fatalf("pack over an existing archive: %d %q", code, errs)
	}
	if code, _, _ := nzip(t, "trajectory", "pack", "-o", run, "-ref-mode", "sideways", "x"); code != 2 {
		t.Fatalf("bad -ref-mode: %d", code)
	}
	if code, _, _ := nzip(t, "trajectory", "frobnicate"); code != 2 {
		t.Fatalf("unknown subcommand: %d", code)
	}
	// the other kind of archive: an error that names the commands for it
	for _, args := range [][]string{{"inspect", run}, {"decompress", "-o", filepath.Join(dir, "z"), run}, {"verify", run}} {
		if code, _, errs := nzip(t, args...); code != 1 || !strings.Contains(errs, "trajectory archive") || !strings.Contains(errs, "nzip trajectory ls") {
			t.Fatalf("%s of a trajectory archive: %d %q", args[0], code, errs)
		}
	}
	arc := filepath.Join(dir, "step_0.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-o", arc, filepath.Join(dir, "step_0.safetensors")); code != 0 {
		t.Fatalf("compress: %d %s", code, errs)
	}
	for _, args := range [][]string{{"trajectory", "ls", arc}, {"trajectory", "extract", "-o", filepath.Join(dir, "z"), arc, "0"}} {
		if code, _, errs := nzip(t, args...); code != 1 || !strings.Contains(errs, "it is an nzip archive") {
			t.Fatalf("%s of an nzip archive: %d %q", args[1], code, errs)
		}
	}
}

func TestNaturalLess(t *testing.T) {
	in := []string{"step_10", "step_2", "step_1", "step_010b", "a", "step_02", "step_100", "step_2a"}
	sort.Slice(in, func(i, j int) bool { return naturalLess(in[i], in[j]) })
	want := "a step_1 step_2 step_2a step_02 step_10 step_010b step_100"
	if got := strings.Join(in, " "); got != want {
		t.Fatalf("natural order: %s, want %s", got, want)
	}
}

// The Silero VAD demo holds most weights twice: the archive stores the
// repeats as copies (format 3), beats zstd-3's ratio on it, restores it
// bit-exact, and inspect says how many blocks are copies.
func TestDuplicateBlocksCLI(t *testing.T) {
	b, err := assets.FS.ReadFile("models/silero_vad_legacy.onnx")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "silero.onnx")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := nzip(t, "compress", "-q", in); code != 0 {
		t.Fatalf("compress: %d %s", code, errs)
	}
	arc := in + ".nzip"
	if ratio := float64(len(b)) / float64(refFileSize(t, arc)); ratio < 2.0 {
		t.Errorf("ratio %.3f: duplicates not stored as copies?", ratio)
	}
	if code, out, errs := nzip(t, "inspect", arc); code != 0 || !strings.Contains(out, "stored as copies of earlier blocks") {
		t.Fatalf("inspect: %d %s %s", code, out, errs)
	}
	out := filepath.Join(dir, "out.onnx")
	if code, _, errs := nzip(t, "decompress", "-q", "-o", out, arc); code != 0 {
		t.Fatalf("decompress: %d %s", code, errs)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, b) {
		t.Fatal("restored file differs")
	}
}

// checkPlannedCLI packs the steps with planned keyframes (the default): no
// chain longer than K = 4, no larger than every K-th frame (regular bytes),
// every step extracts; repack of the regular run gives the same archive.
func checkPlannedCLI(t *testing.T, dir string, files [][]byte, regularRun string) {
	t.Helper()
	regular := refFileSize(t, regularRun)
	run := filepath.Join(dir, "planned.nztraj")
	code, _, errs := nzip(t, "trajectory", "pack", "-o", run, "-keyframe", "4", filepath.Join(dir, "step_*.safetensors"))
	if code != 0 || !strings.Contains(errs, "planned keyframes (frames 0, ") {
		t.Fatalf("planned pack: %d %s", code, errs)
	}
	code, out, errs := nzip(t, "trajectory", "ls", "-json", run)
	if code != 0 {
		t.Fatalf("ls: %d %s", code, errs)
	}
	var ls struct {
		Frames []struct {
			Ref   int `json:"ref"`
			Chain int `json:"chain"`
		} `json:"frames"`
	}
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls.Frames) != len(files) {
		t.Fatalf("ls: %v %s", err, out)
	}
	chain := make([]int, len(ls.Frames))
	for i, f := range ls.Frames {
		chain[i] = 1
		if f.Ref >= 0 {
			if f.Ref != i-1 {
				t.Fatalf("frame %d coded against %d", i, f.Ref)
			}
			chain[i] = chain[i-1] + 1
		}
		if chain[i] > 4 || f.Chain != chain[i] {
			t.Fatalf("frame %d decodes through %d frames (ls: %d)", i, chain[i], f.Chain)
		}
	}
	if size := refFileSize(t, run); size > regular {
		t.Fatalf("planned archive %d bytes, every 4th frame %d", size, regular)
	}
	// repack, its steps decoded in memory and (the threshold lowered)
	// into temporary files, which it removes
	repacked := filepath.Join(dir, "repacked.nztraj")
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o755)
	defer func(v int64) { stepInMemory = v }(stepInMemory)
	for _, lim := range []int64{128 << 20, 0} {
		stepInMemory = lim
		if code, _, errs := nzip(t, "trajectory", "repack", "-f", "-tmpdir", tmp, "-o", repacked, regularRun); code != 0 || !strings.Contains(errs, "keyframes 0, ") {
			t.Fatalf("repack (in memory up to %d): %d %s", lim, code, errs)
		}
		a, _ := os.ReadFile(run)
		b, _ := os.ReadFile(repacked)
		if !bytes.Equal(a, b) {
			t.Fatalf("repack of the regular run (%d bytes, in memory up to %d) differs from the planned pack (%d bytes)", len(b), lim, len(a))
		}
		if es, _ := os.ReadDir(tmp); len(es) != 0 {
			t.Fatalf("repack left %d files in its temporary directory", len(es))
		}
	}
	if code, _, errs := nzip(t, "trajectory", "repack", "-q", "-tmpdir", filepath.Join(dir, "none"), "-o", filepath.Join(dir, "r2.nztraj"), regularRun); code != 1 || !strings.Contains(errs, "not a directory") {
		t.Fatalf("repack into a missing temporary directory: %d %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "r2.nztraj")); err == nil {
		t.Fatal("a failed repack left its output")
	}
	stepInMemory = 128 << 20
	if code, _, errs := nzip(t, "trajectory", "repack", "-q", "-o", regularRun, regularRun); code != 1 || !strings.Contains(errs, "overwrite the input") {
		t.Fatalf("repack onto its input: %d %s", code, errs)
	}
	if code, _, _ := nzip(t, "trajectory", "repack", regularRun); code != 2 {
		t.Fatalf("repack without -o: %d", code)
	}
	for i := range files {
		o := filepath.Join(dir, fmt.Sprintf("planned-%d", i))
		if code, _, errs := nzip(t, "trajectory", "extract", "-q", "-o", o, run, strconv.Itoa(i)); code != 0 {
			t.Fatalf("extract %d: %d %s", i, code, errs)
		}
		if got, _ := os.ReadFile(o); !bytes.Equal(got, files[i]) {
			t.Fatalf("planned frame %d differs", i)
		}
	}
}

// TestTrajectoryAppendProvides: append reads the previous step's file when
// it is still beside the new step (its SHA-256 checked) instead of
// decoding its chain; either way the archive is the one pack makes.
func TestTrajectoryAppendProvides(t *testing.T) {
	dir := t.TempDir()
	_, steps := writeSteps(t, dir, 6, 3000)
	whole := filepath.Join(dir, "whole.nztraj")
	if code, _, errs := nzip(t, append([]string{"trajectory", "pack", "-q", "-o", whole}, steps...)...); code != 0 {
		t.Fatalf("pack: %d %s", code, errs)
	}
	want, _ := os.ReadFile(whole)
	part := filepath.Join(dir, "part.nztraj")
	if code, _, errs := nzip(t, append([]string{"trajectory", "pack", "-q", "-o", part}, steps[:5]...)...); code != 0 {
		t.Fatalf("pack: %d %s", code, errs)
	}
	partBytes, _ := os.ReadFile(part)
	code, _, errs := nzip(t, "trajectory", "append", part, steps[5])
	if code != 0 || !strings.Contains(errs, "reference frame 4 read from "+steps[4]) {
		t.Fatalf("append: %d %s", code, errs)
	}
	if got, _ := os.ReadFile(part); !bytes.Equal(got, want) {
		t.Fatal("append with the previous file differs from pack")
	}
	// the previous step changed on disk (same size): decoded instead
	os.WriteFile(part, partBytes, 0o644)
	b, _ := os.ReadFile(steps[4])
	b[len(b)-1] ^= 1
	os.WriteFile(steps[4], b, 0o644)
	code, _, errs = nzip(t, "trajectory", "append", part, steps[5])
	if code != 0 || strings.Contains(errs, "read from") {
		t.Fatalf("append beside a changed file: %d %s", code, errs)
	}
	if got, _ := os.ReadFile(part); !bytes.Equal(got, want) {
		t.Fatal("append with the decoded reference differs from pack")
	}
}

// TestTrajectoryVerifyExtractAll: verify checks every frame; extract -all
// writes every step once, refusing to overwrite.
func TestTrajectoryVerifyExtractAll(t *testing.T) {
	dir := t.TempDir()
	files, steps := writeSteps(t, dir, 7, 3000)
	run := filepath.Join(dir, "run.nztraj")
	if code, _, errs := nzip(t, append([]string{"trajectory", "pack", "-q", "-keyframe", "3", "-o", run}, steps...)...); code != 0 {
		t.Fatalf("pack: %d %s", code, errs)
	}
	// both ways of verify: steps decoded whole (small ones) and block by
	// block in lock-step (large ones; here with the threshold lowered)
	defer func(v int64) { stepInMemory = v }(stepInMemory)
	for _, lim := range []int64{128 << 20, 0} {
		stepInMemory = lim
		if code, out, errs := nzip(t, "trajectory", "verify", run); code != 0 || !strings.Contains(out, "OK: 7 frames") {
			t.Fatalf("verify (in memory up to %d): %d %s %s", lim, code, out, errs)
		}
	}
	outDir := filepath.Join(dir, "out", "sub") // made by extract -all
	if code, _, errs := nzip(t, "trajectory", "extract", "-all", "-d", outDir, run); code != 0 || !strings.Contains(errs, "7 frames") {
		t.Fatalf("extract -all: %d %s", code, errs)
	}
	for i := range files {
		if got, _ := os.ReadFile(filepath.Join(outDir, fmt.Sprintf("step_%d.safetensors", i))); !bytes.Equal(got, files[i]) {
			t.Fatalf("extract -all: step %d differs", i)
		}
	}
	if code, _, errs := nzip(t, "trajectory", "extract", "-all", "-q", "-d", outDir, run); code != 1 || !strings.Contains(errs, "already exists") {
		t.Fatalf("extract -all over existing files: %d %s", code, errs)
	}
	if code, _, errs := nzip(t, "trajectory", "extract", "-all", "-q", "-f", "-d", outDir, run); code != 0 {
		t.Fatalf("extract -all -f: %d %s", code, errs)
	}
	for _, bad := range [][]string{{"-all", run, "3"}, {"-all", "-o", "x", run}, {"-d", outDir, run, "3"}, {run}} {
		if code, _, _ := nzip(t, append([]string{"trajectory", "extract"}, bad...)...); code != 2 {
			t.Fatalf("extract %v: exit %d, want 2", bad, code)
		}
	}
	// damage in the middle of the archive: verify names the frame
	b, _ := os.ReadFile(run)
	for i := len(b) / 2; i < len(b)/2+64; i++ {
		b[i] ^= 0x5a
	}
	os.WriteFile(run, b, 0o644)
	for _, lim := range []int64{128 << 20, 0} {
		stepInMemory = lim
		if code, _, errs := nzip(t, "trajectory", "verify", run); code != 1 || !strings.Contains(errs, "frame ") {
			t.Fatalf("verify of a damaged archive (in memory up to %d): %d %s", lim, code, errs)
		}
	}
	// extract -all decodes each frame against the files it has just
	// written: a damaged frame stops it with an error, the frames before
	// it are written whole and the damaged one not at all
	bad := filepath.Join(dir, "bad")
	os.Mkdir(bad, 0o755)
	code, _, errs := nzip(t, "trajectory", "extract", "-all", "-q", "-d", bad, run)
	if code != 1 || !strings.Contains(errs, "frame ") {
		t.Fatalf("extract -all of a damaged archive: %d %s", code, errs)
	}
	ents, _ := os.ReadDir(bad)
	for _, e := range ents {
		var i int
		if _, err := fmt.Sscanf(e.Name(), "step_%d.safetensors", &i); err != nil {
			t.Fatalf("extract -all of a damaged archive left %s", e.Name())
		}
		if got, _ := os.ReadFile(filepath.Join(bad, e.Name())); !bytes.Equal(got, files[i]) {
			t.Fatalf("extract -all of a damaged archive wrote a wrong %s", e.Name())
		}
	}
	if len(ents) == len(files) {
		t.Fatal("extract -all of a damaged archive wrote every step")
	}
	// frames coded against their keyframe (-ref-mode key): each reads the
	// keyframe's file, kept open while later frames need it
	keyRun := filepath.Join(dir, "key.nztraj")
	if code, _, errs := nzip(t, append([]string{"trajectory", "pack", "-q", "-keyframe", "3", "-ref-mode", "key", "-o", keyRun}, steps...)...); code != 0 {
		t.Fatalf("pack -ref-mode key: %d %s", code, errs)
	}
	keyDir := filepath.Join(dir, "key")
	os.Mkdir(keyDir, 0o755)
	if code, _, errs := nzip(t, "trajectory", "extract", "-all", "-q", "-d", keyDir, keyRun); code != 0 {
		t.Fatalf("extract -all (key mode): %d %s", code, errs)
	}
	for i := range files {
		if got, _ := os.ReadFile(filepath.Join(keyDir, fmt.Sprintf("step_%d.safetensors", i))); !bytes.Equal(got, files[i]) {
			t.Fatalf("extract -all (key mode): step %d differs", i)
		}
	}
}

// TestBestCLI: -best (codings chosen by bytes alone; range-coded
// difference blocks) in compress, with and without -ref, and trajectory
// pack/append/repack: smaller or equal, bit-exact.
func TestBestCLI(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.safetensors")
	ft := filepath.Join(dir, "ft.safetensors")
	writeStep(t, base, 30000, 0)
	want := writeStep(t, ft, 30000, 3)
	// without -ref, -best chooses by bytes alone: never larger
	plain, plainBest := filepath.Join(dir, "plain.nzip"), filepath.Join(dir, "plain-best.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-o", plain, ft); code != 0 {
		t.Fatalf("compress: %d %s", code, errs)
	}
	if code, _, errs := nzip(t, "compress", "-q", "-best", "-o", plainBest, ft); code != 0 {
		t.Fatalf("compress -best without -ref: %d %q", code, errs)
	}
	if a, b := refFileSize(t, plainBest), refFileSize(t, plain); a > b {
		t.Fatalf("-best archive %d bytes, default %d", a, b)
	}
	def, best := filepath.Join(dir, "def.nzip"), filepath.Join(dir, "best.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-ref", base, "-o", def, ft); code != 0 {
		t.Fatalf("compress -ref: %d %s", code, errs)
	}
	if code, _, errs := nzip(t, "compress", "-q", "-ref", base, "-best", "-o", best, ft); code != 0 {
		t.Fatalf("compress -ref -best: %d %s", code, errs)
	}
	if a, b := refFileSize(t, best), refFileSize(t, def); a > b {
		t.Fatalf("-best archive %d bytes, default %d", a, b)
	}
	out := filepath.Join(dir, "out.safetensors")
	if code, _, errs := nzip(t, "decompress", "-q", "-ref", base, "-o", out, best); code != 0 {
		t.Fatalf("decompress -best archive: %d %s", code, errs)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Fatal("decompressed -best archive differs")
	}
	// a trajectory packed, appended and repacked with -best
	files, paths := writeSteps(t, dir, 6, 5000)
	run, runDef := filepath.Join(dir, "best.nztraj"), filepath.Join(dir, "def.nztraj")
	if code, _, errs := nzip(t, append([]string{"trajectory", "pack", "-q", "-o", runDef}, paths[:5]...)...); code != 0 {
		t.Fatalf("pack: %d %s", code, errs)
	}
	if code, _, errs := nzip(t, append([]string{"trajectory", "pack", "-q", "-best", "-o", run}, paths[:5]...)...); code != 0 {
		t.Fatalf("pack -best: %d %s", code, errs)
	}
	if a, b := refFileSize(t, run), refFileSize(t, runDef); a > b {
		t.Fatalf("pack -best %d bytes, default %d", a, b)
	}
	if code, _, errs := nzip(t, "trajectory", "append", "-q", "-best", run, paths[5]); code != 0 {
		t.Fatalf("append -best: %d %s", code, errs)
	}
	re := filepath.Join(dir, "re.nztraj")
	if code, _, errs := nzip(t, "trajectory", "repack", "-q", "-best", "-o", re, runDef); code != 0 {
		t.Fatalf("repack -best: %d %s", code, errs)
	}
	if code, out, errs := nzip(t, "trajectory", "verify", run); code != 0 || !strings.Contains(out, "OK") {
		t.Fatalf("verify -best run: %d %s %s", code, out, errs)
	}
	for i, arc := range []string{run, re} {
		for s := range 5 + (1 - i) {
			o := filepath.Join(dir, fmt.Sprintf("x%d-%d", i, s))
			if code, _, errs := nzip(t, "trajectory", "extract", "-q", "-o", o, arc, strconv.Itoa(s)); code != 0 {
				t.Fatalf("extract %s %d: %d %s", arc, s, code, errs)
			}
			if got, _ := os.ReadFile(o); !bytes.Equal(got, files[s]) {
				t.Fatalf("extract %s %d differs", arc, s)
			}
		}
	}
}

// TestTrajectoryAppendSafety: append refuses the archive as its own step,
// an archive another process is writing (locked), and one whose last index
// is damaged (a whole frame would be cut off) unless told to drop it; ls
// and verify report that damage; an input changed after it was opened is
// noticed.
func TestTrajectoryAppendSafety(t *testing.T) {
	dir := t.TempDir()
	_, steps := writeSteps(t, dir, 5, 3000)
	run := filepath.Join(dir, "run.nztraj")
	if code, _, errs := nzip(t, append([]string{"trajectory", "pack", "-q", "-o", run}, steps[:3]...)...); code != 0 {
		t.Fatalf("pack: %d %s", code, errs)
	}
	if code, _, errs := nzip(t, "trajectory", "append", "-q", run, run); code != 1 || !strings.Contains(errs, "the archive itself") {
		t.Fatalf("append of the archive to itself: %d %s", code, errs)
	}
	f, err := os.OpenFile(run, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := lockFile(f); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS == "linux" || runtime.GOOS == "windows" {
		if code, _, errs := nzip(t, "trajectory", "append", "-q", run, steps[3]); code != 1 || !strings.Contains(errs, "another process") {
			t.Fatalf("append while another holds the lock: %d %s", code, errs)
		}
	}
	f.Close()
	if code, _, errs := nzip(t, "trajectory", "append", "-q", run, steps[3]); code != 0 {
		t.Fatalf("append: %d %s", code, errs)
	}
	// the last index damaged: frame 3 can no longer be read
	b, _ := os.ReadFile(run)
	b[len(b)-40] ^= 0x10
	os.WriteFile(run, b, 0o644)
	if code, out, _ := nzip(t, "trajectory", "ls", run); code != 0 || !strings.Contains(out, "index that follows is damaged") {
		t.Fatalf("ls of a damaged last index: %d %s", code, out)
	}
	if code, _, errs := nzip(t, "trajectory", "verify", run); code != 1 || !strings.Contains(errs, "damaged") {
		t.Fatalf("verify of a damaged last index: %d %s", code, errs)
	}
	if code, _, errs := nzip(t, "trajectory", "append", "-q", run, steps[4]); code != 1 || !strings.Contains(errs, "-drop-damaged-tail") && !strings.Contains(errs, "damaged") {
		t.Fatalf("append after a damaged last index: %d %s", code, errs)
	}
	if got, _ := os.ReadFile(run); !bytes.Equal(got, b) {
		t.Fatal("a refused append changed the archive")
	}
	if code, _, errs := nzip(t, "trajectory", "append", "-q", "-drop-damaged-tail", run, steps[4]); code != 0 || !strings.Contains(errs, "cut off") {
		t.Fatalf("append -drop-damaged-tail: %d %s", code, errs)
	}
	if code, out, errs := nzip(t, "trajectory", "verify", run); code != 0 || !strings.Contains(out, "OK: 4 frames") {
		t.Fatalf("verify after dropping the damaged tail: %d %s %s", code, out, errs)
	}
	// an input written to after it was opened
	in, err := openModel(steps[0], io.Discard)
	if err != nil || len(in) != 1 {
		t.Fatal(err)
	}
	defer closeInputs(in)
	if err := in[0].unchanged(); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	if err := os.Chtimes(steps[0], later, later); err != nil {
		t.Fatal(err)
	}
	if err := in[0].unchanged(); err == nil || !strings.Contains(err.Error(), "changed while it was read") {
		t.Fatalf("a file touched after it was opened: %v", err)
	}
}
