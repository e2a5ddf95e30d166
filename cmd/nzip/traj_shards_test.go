package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeShardedStep writes a sharded safetensors checkpoint of a synthetic
// training run into dir: model.safetensors.index.json and two shards, each
// with a BF16 and an F32 tensor that drift a little per step. It returns
// the files by name.
func writeShardedStep(t *testing.T, dir string, n, step int) map[string][]byte {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	weightMap := map[string]string{}
	const shards = 2
	for k := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, shards)
		wn, bn := fmt.Sprintf("layers.%d.weight", k), fmt.Sprintf("layers.%d.scale", k)
		weightMap[wn], weightMap[bn] = name, name
		files[name] = driftFile(wn, bn, n, step, k*n, k+1)
	}
	idx, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": shards * 6 * n}, "weight_map": weightMap})
	if err != nil {
		t.Fatal(err)
	}
	files["model.safetensors.index.json"] = idx
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// sameFiles checks that dir holds exactly the files, byte for byte.
func sameFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(files) {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("%s holds %v, want %d files", dir, names, len(files))
	}
	for name, want := range files {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: differs from the original (%v)", filepath.Join(dir, name), err)
		}
	}
}

// writeShardedRun writes n sharded steps, dir/run/checkpoint-100 and on,
// and returns their files and directories.
func writeShardedRun(t *testing.T, dir string, n int) (steps []map[string][]byte, dirs []string) {
	t.Helper()
	for s := range n {
		d := filepath.Join(dir, "run", fmt.Sprintf("checkpoint-%d", 100*(s+1)))
		steps = append(steps, writeShardedStep(t, d, 3000, s))
		dirs = append(dirs, d)
	}
	return steps, dirs
}

// TestTrajectoryShardedCLI packs sharded checkpoint directories (and an
// index file named directly), lists, extracts one step and all steps into
// directories, verifies, repacks and appends.
func TestTrajectoryShardedCLI(t *testing.T) {
	dir := t.TempDir()
	steps, dirs := writeShardedRun(t, dir, 4)
	run := filepath.Join(dir, "run.nztraj")
	args := []string{"trajectory", "pack", "-q", "-keyframe", "2", "-o", run, dirs[0], filepath.Join(dirs[1], "model.safetensors.index.json"), dirs[2]}
	if code, _, errs := nzip(t, args...); code != 0 {
		t.Fatalf("pack: %d %s", code, errs)
	}
	code, out, errs := nzip(t, "trajectory", "ls", "-json", run)
	if code != 0 {
		t.Fatalf("ls: %d %s", code, errs)
	}
	var ls struct {
		Frames []trajFrameJSON `json:"frames"`
	}
	if err := json.Unmarshal([]byte(out), &ls); err != nil || len(ls.Frames) != 3 {
		t.Fatalf("ls -json: %v %s", err, out)
	}
	var indep, cond int64
	for i, fr := range ls.Frames {
		var size int64
		for _, b := range steps[i] {
			size += int64(len(b))
		}
		if fr.Name != filepath.Base(dirs[i]) || fr.Files != 3 || fr.Size != size {
			t.Fatalf("ls frame %d: %+v", i, fr)
		}
		if fr.Ref < 0 {
			indep = fr.Compressed
		} else {
			cond = fr.Compressed
		}
	}
	if cond == 0 || cond >= indep {
		t.Fatalf("frame coded against the step before: %d bytes, keyframe %d", cond, indep)
	}
	if code, out, _ := nzip(t, "trajectory", "ls", run); code != 0 || !strings.Contains(out, "checkpoint-200") || !strings.Contains(out, "files") {
		t.Fatalf("ls: %d %s", code, out)
	}
	// one step into a directory, byte for byte
	o := filepath.Join(dir, "one")
	if code, _, errs := nzip(t, "trajectory", "extract", "-o", o, run, "checkpoint-200"); code != 0 || !strings.Contains(errs, "3 files") {
		t.Fatalf("extract: %d %s", code, errs)
	}
	sameFiles(t, o, steps[1])
	if code, _, errs := nzip(t, "trajectory", "extract", "-q", "-o", o, run, "1"); code != 1 || !strings.Contains(errs, "already exists") {
		t.Fatalf("extract over existing files: %d %s", code, errs)
	}
	if code, _, errs := nzip(t, "trajectory", "extract", "-q", "-f", "-o", o, run, "checkpoint-300"); code != 0 {
		t.Fatalf("extract -f: %d %s", code, errs)
	}
	sameFiles(t, o, steps[2])
	if code, _, errs := nzip(t, "trajectory", "extract", "-q", "-o", "-", run, "checkpoint-100"); code != 1 || !strings.Contains(errs, "-o DIR") {
		t.Fatalf("extract of a sharded step to stdout: %d %s", code, errs)
	}
	// default output: the step's name in the current directory
	cwd := filepath.Join(dir, "cwd")
	os.Mkdir(cwd, 0o755)
	t.Chdir(cwd)
	if code, _, errs := nzip(t, "trajectory", "extract", "-q", run, "checkpoint-100"); code != 0 {
		t.Fatalf("extract: %d %s", code, errs)
	}
	sameFiles(t, filepath.Join(cwd, "checkpoint-100"), steps[0])
	// every step
	all := filepath.Join(dir, "all")
	if code, _, errs := nzip(t, "trajectory", "extract", "-all", "-q", "-d", all, run); code != 0 {
		t.Fatalf("extract -all: %d %s", code, errs)
	}
	for i := range 3 {
		sameFiles(t, filepath.Join(all, filepath.Base(dirs[i])), steps[i])
	}
	if code, _, errs := nzip(t, "trajectory", "extract", "-all", "-q", "-d", all, run); code != 1 || !strings.Contains(errs, "already exists") {
		t.Fatalf("extract -all over existing files: %d %s", code, errs)
	}
	if code, out, errs := nzip(t, "trajectory", "verify", run); code != 0 || !strings.Contains(out, "OK: 3 frames") {
		t.Fatalf("verify: %d %s %s", code, out, errs)
	}
	// steps must have distinct names
	if code, _, errs := nzip(t, "trajectory", "append", "-q", run, dirs[2]); code != 1 || !strings.Contains(errs, "distinct") {
		t.Fatalf("append of a step already there: %d %s", code, errs)
	}
	if code, _, errs := nzip(t, "trajectory", "pack", "-q", "-o", filepath.Join(dir, "dup.nztraj"), dirs[0], dirs[0]); code != 1 || !strings.Contains(errs, "distinct") {
		t.Fatalf("pack of one step twice: %d %s", code, errs)
	}
	// append, then repack: every step decodes from both
	if code, _, errs := nzip(t, "trajectory", "append", "-q", run, dirs[3]); code != 0 {
		t.Fatalf("append: %d %s", code, errs)
	}
	re := filepath.Join(dir, "re.nztraj")
	if code, _, errs := nzip(t, "trajectory", "repack", "-q", "-keyframe", "3", "-o", re, run); code != 0 {
		t.Fatalf("repack: %d %s", code, errs)
	}
	for _, a := range []string{run, re} {
		if code, out, errs := nzip(t, "trajectory", "verify", a); code != 0 || !strings.Contains(out, "OK: 4 frames") {
			t.Fatalf("verify %s: %d %s %s", a, code, out, errs)
		}
		o := filepath.Join(dir, "last-"+filepath.Base(a))
		if code, _, errs := nzip(t, "trajectory", "extract", "-q", "-o", o, a, "checkpoint-400"); code != 0 {
			t.Fatalf("extract from %s: %d %s", a, code, errs)
		}
		sameFiles(t, o, steps[3])
	}
	// a directory of several unrelated files is refused with a message
	junk := filepath.Join(dir, "junk")
	os.Mkdir(junk, 0o755)
	os.WriteFile(filepath.Join(junk, "a.bin"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(junk, "b.bin"), []byte("b"), 0o644)
	if code, _, errs := nzip(t, "trajectory", "append", "-q", run, junk); code != 1 || !strings.Contains(errs, "index.json") {
		t.Fatalf("append of a directory without a checkpoint: %d %s", code, errs)
	}
}

// TestTrajectoryShardedDamaged: a damaged frame of a sharded step leaves
// nothing under the step's names: no part of the step, and with -f no mix
// with the files of the step extracted there before.
func TestTrajectoryShardedDamaged(t *testing.T) {
	dir := t.TempDir()
	steps, dirs := writeShardedRun(t, dir, 3)
	run := filepath.Join(dir, "run.nztraj")
	if code, _, errs := nzip(t, append([]string{"trajectory", "pack", "-q", "-keyframe", "5", "-o", run}, dirs...)...); code != 0 {
		t.Fatalf("pack: %d %s", code, errs)
	}
	o := filepath.Join(dir, "out")
	if code, _, errs := nzip(t, "trajectory", "extract", "-q", "-o", o, run, "checkpoint-100"); code != 0 {
		t.Fatalf("extract: %d %s", code, errs)
	}
	// damage the end of the last frame (its last shard's blocks)
	code, out, _ := nzip(t, "trajectory", "ls", "-json", run)
	var ls struct {
		Frames []trajFrameJSON `json:"frames"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &ls) != nil {
		t.Fatalf("ls: %d %s", code, out)
	}
	b, _ := os.ReadFile(run)
	var off int64
	for _, fr := range ls.Frames[:2] {
		off += fr.Compressed
	}
	end := 16 + off + ls.Frames[2].Compressed // header, frames 0 and 1, frame 2
	for i := end - ls.Frames[2].Compressed/3; i < end-200; i += 7 {
		b[i] ^= 0x5a
	}
	bad := filepath.Join(dir, "bad.nztraj")
	os.WriteFile(bad, b, 0o644)
	if code, _, errs := nzip(t, "trajectory", "extract", "-q", "-f", "-o", o, bad, "checkpoint-300"); code != 1 || !strings.Contains(errs, "frame 2") {
		t.Fatalf("extract of a damaged sharded step: %d %s", code, errs)
	}
	sameFiles(t, o, steps[0]) // the step extracted before, whole and alone
	// a rename that fails part-way: the files already renamed over the
	// step there are put back (-f loses nothing)
	failRenameAt(t, 2)
	if code, _, errs := nzip(t, "trajectory", "extract", "-q", "-f", "-o", o, run, "checkpoint-300"); code != 1 || !strings.Contains(errs, "injected failure") {
		t.Fatalf("extract with a failing rename: %d %s", code, errs)
	}
	renameFile = os.Rename
	sameFiles(t, o, steps[0])
	fresh := filepath.Join(dir, "fresh")
	if code, _, _ := nzip(t, "trajectory", "extract", "-q", "-o", fresh, bad, "checkpoint-300"); code != 1 {
		t.Fatalf("extract of a damaged sharded step: %d", code)
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Fatal("a failed extract left its output directory")
	}
	all := filepath.Join(dir, "all")
	if code, _, _ := nzip(t, "trajectory", "extract", "-all", "-q", "-d", all, bad); code != 1 {
		t.Fatalf("extract -all of a damaged archive: %d", code)
	}
	if _, err := os.Stat(filepath.Join(all, "checkpoint-300")); err == nil {
		t.Fatal("extract -all left a part of the damaged step")
	}
}
