package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"neuralzip/codec"
)

// writeRawArchive writes an archive of opaque files with the given names
// (any names: the CLI's compress would not write some of them) to path.
func writeRawArchive(t *testing.T, path string, names ...string) {
	t.Helper()
	var ins []codec.Input
	for i, n := range names {
		b := bytes.Repeat([]byte{byte('a' + i)}, 100+i)
		ins = append(ins, codec.Input{Name: n, R: bytes.NewReader(b), Size: int64(len(b))})
	}
	var buf bytes.Buffer
	if _, err := codec.Encode(context.Background(), &buf, ins, codec.EncodeOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// treeOf lists every entry below dir (relative, slash-separated; symbolic
// links not followed), with the contents of regular files.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			m[rel] = "link"
		case d.IsDir():
			m[rel] = "dir"
		default:
			b, _ := os.ReadFile(p)
			m[rel] = string(b)
		}
		return nil
	})
	return m
}

func sameTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: holds %d entries %v, want %d", what, len(got), keysOf(got), len(want))
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Fatalf("%s: %s is %.40q, want %.40q", what, k, g, v)
		}
	}
}

func keysOf(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// No output overwrites a file the command reads, with -f or without: not
// the reference (-ref), not the setup (-setup), not a shard of a step,
// under its own name or another (a hard link).
func TestOutputNeverAnInput(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.safetensors")
	baseB := writeStep(t, base, 3000, 0)
	step := filepath.Join(dir, "step.safetensors")
	writeStep(t, step, 3000, 1)
	setup := filepath.Join(dir, "s.nzsetup")
	refArc := filepath.Join(dir, "ref.nzip")
	setupArc := filepath.Join(dir, "setup.nzip")
	for _, args := range [][]string{
		{"setup", "build", "-q", "-o", setup, base},
		{"compress", "-q", "-ref", base, "-o", refArc, step},
		{"compress", "-q", "-setup", setup, "-setup-external", "-o", setupArc, step},
	} {
		if code, _, errs := nzip(t, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	setupB, _ := os.ReadFile(setup)
	linked := filepath.Join(dir, "base-link.safetensors")
	if err := os.Link(base, linked); err != nil {
		t.Logf("no hard links: %v", err)
		linked = base
	}
	shards := filepath.Join(dir, "shards")
	shardFiles := writeShardedStep(t, shards, 1000, 0)
	shard := filepath.Join(shards, "model-00002-of-00002.safetensors")
	for _, c := range []struct {
		args  []string
		input string
	}{
		{[]string{"decompress", "-q", "-f", "-ref", base, "-o", base, refArc}, base},
		{[]string{"decompress", "-q", "-f", "-ref", base, "-o", linked, refArc}, base},
		{[]string{"decompress", "-q", "-ref", base, "-o", base, refArc}, base},
		{[]string{"compress", "-q", "-f", "-ref", base, "-o", base, step}, base},
		{[]string{"compress", "-q", "-f", "-setup", setup, "-o", setup, step}, setup},
		{[]string{"decompress", "-q", "-f", "-setup", setup, "-o", setup, setupArc}, setup},
		{[]string{"decompress", "-q", "-f", "-setup", setup, "-tensor", "a.weight", "-o", setup, setupArc}, setup},
		{[]string{"trajectory", "pack", "-q", "-f", "-o", shard, shards}, shard},
		{[]string{"trajectory", "pack", "-q", "-f", "-o", shard, step, filepath.Join(shards, "model.safetensors.index.json")}, shard},
	} {
		code, _, errs := nzip(t, c.args...)
		if code != 1 || !strings.Contains(errs, "overwrite the input") {
			t.Errorf("%v: exit %d, %q; want: output would overwrite the input", c.args, code, errs)
		}
	}
	if b, _ := os.ReadFile(base); !bytes.Equal(b, baseB) {
		t.Error("the reference was overwritten")
	}
	if b, _ := os.ReadFile(setup); !bytes.Equal(b, setupB) {
		t.Error("the setup was overwritten")
	}
	sameFiles(t, shards, shardFiles)
}

// An output file that appears while nzip writes (another nzip writing the
// same -o, say) is not replaced without -f: the command fails and the
// file is left as it is, with no temporary file; with -f it is replaced.
// Also where the file system has no hard links.
func TestOutputAppearedMeanwhile(t *testing.T) {
	for _, links := range []bool{true, false} {
		if !links {
			linkFile = func(string, string) error { return errors.New("no links here") }
		}
		dir := t.TempDir()
		m := filepath.Join(dir, "m.safetensors")
		writeStep(t, m, 2000, 0)
		arc := filepath.Join(dir, "m.nzip")
		run := filepath.Join(dir, "run.nztraj")
		multi := filepath.Join(dir, "multi.nzip")
		writeRawArchive(t, multi, "one.bin", "sub/two.bin")
		for _, args := range [][]string{{"compress", "-q", "-o", arc, m}, {"trajectory", "pack", "-q", "-o", run, m}} {
			if code, _, errs := nzip(t, args...); code != 0 {
				t.Fatalf("%v: %s", args, errs)
			}
		}
		out := filepath.Join(dir, "out")
		os.Mkdir(out, 0o755)
		for _, c := range []struct {
			args []string
			dest string
		}{
			{[]string{"compress", "-q", "-o", filepath.Join(out, "x"), m}, "x"},
			{[]string{"decompress", "-q", "-o", filepath.Join(out, "x"), arc}, "x"},
			{[]string{"decompress", "-q", "-tensor", "a.weight", "-o", filepath.Join(out, "x"), arc}, "x"},
			{[]string{"setup", "build", "-q", "-o", filepath.Join(out, "x"), m}, "x"},
			{[]string{"trajectory", "pack", "-q", "-o", filepath.Join(out, "x"), m}, "x"},
			{[]string{"trajectory", "repack", "-q", "-o", filepath.Join(out, "x"), run}, "x"},
			{[]string{"trajectory", "extract", "-q", "-o", filepath.Join(out, "x"), run, "0"}, "x"},
			{[]string{"decompress", "-q", "-o", out, multi}, "one.bin"},
			{[]string{"decompress", "-q", "-o", out, multi}, "sub/two.bin"},
		} {
			intruder := filepath.Join(out, filepath.FromSlash(c.dest))
			beforePublish = func(dest string) {
				if dest == intruder {
					os.WriteFile(intruder, []byte("written meanwhile"), 0o644)
				}
			}
			code, _, errs := nzip(t, c.args...)
			beforePublish = nil
			if code != 1 || !strings.Contains(errs, "already exists") {
				t.Errorf("links %v: %v: exit %d, %q; want a refusal", links, c.args, code, errs)
			}
			want := map[string]string{c.dest: "written meanwhile"}
			if strings.Contains(c.dest, "/") {
				want["sub"] = "dir"
			}
			sameTree(t, "links "+map[bool]string{true: "on", false: "off"}[links]+": "+strings.Join(c.args, " "), treeOf(t, out), want)
			os.RemoveAll(out)
			os.Mkdir(out, 0o755)
		}
		// with -f the file that appeared is replaced
		x := filepath.Join(out, "x")
		beforePublish = func(dest string) { os.WriteFile(dest, []byte("written meanwhile"), 0o644) }
		code, _, errs := nzip(t, "compress", "-q", "-f", "-o", x, m)
		beforePublish = nil
		if b, _ := os.ReadFile(x); code != 0 || string(b) == "written meanwhile" {
			t.Errorf("links %v: compress -f over a file that appeared: exit %d %s", links, code, errs)
		}
		// and without anything appearing, every command writes its output
		os.Remove(x)
		if code, _, errs := nzip(t, "decompress", "-q", "-o", out, multi); code != 0 {
			t.Errorf("links %v: decompress: %s", links, errs)
		}
		if code, _, errs := nzip(t, "compress", "-q", "-o", x, m); code != 0 {
			t.Errorf("links %v: compress: %s", links, errs)
		}
		sameTree(t, "clean run", treeOf(t, out), map[string]string{"x": treeOf(t, out)["x"], "one.bin": strings.Repeat("a", 100), "sub": "dir", "sub/two.bin": strings.Repeat("b", 101)})
		linkFile = os.Link
	}
}

// A symbolic link at the output path, even a dangling one, is an existing
// output: refused without -f, and left as it is.
func TestOutputDanglingLink(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "m.safetensors")
	writeStep(t, m, 2000, 0)
	arc := filepath.Join(dir, "m.nzip")
	multi := filepath.Join(dir, "multi.nzip")
	writeRawArchive(t, multi, "one.bin", "two.bin")
	if code, _, errs := nzip(t, "compress", "-q", "-o", arc, m); code != 0 {
		t.Fatal(errs)
	}
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	target := filepath.Join(dir, "nowhere")
	for _, c := range []struct {
		args []string
		link string
	}{
		{[]string{"compress", "-q", "-o", filepath.Join(out, "x"), m}, "x"},
		{[]string{"decompress", "-q", "-o", filepath.Join(out, "x"), arc}, "x"},
		{[]string{"decompress", "-q", "-o", out, multi}, "two.bin"},
	} {
		if err := os.Symlink(target, filepath.Join(out, c.link)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
		code, _, errs := nzip(t, c.args...)
		if code != 1 || !strings.Contains(errs, "already exists") {
			t.Errorf("%v: exit %d, %q; want: already exists", c.args, code, errs)
		}
		sameTree(t, strings.Join(c.args, " "), treeOf(t, out), map[string]string{c.link: "link"})
		if _, err := os.Lstat(target); err == nil {
			t.Fatalf("%v: wrote through the link", c.args)
		}
		// with -f the link (not its target) is replaced
		if code, _, errs := nzip(t, append([]string{c.args[0], "-f"}, c.args[1:]...)...); code != 0 {
			t.Errorf("%v -f: %s", c.args, errs)
		}
		if st, err := os.Lstat(filepath.Join(out, c.link)); err != nil || !st.Mode().IsRegular() {
			t.Errorf("%v -f: the link was not replaced by the output", c.args)
		}
		if _, err := os.Lstat(target); err == nil {
			t.Fatalf("%v -f: wrote through the link", c.args)
		}
		os.RemoveAll(out)
		os.Mkdir(out, 0o755)
	}
}

// A multi-file archive never writes through a symbolic link below the
// output directory (a member sub/x with DIR/sub -> elsewhere), with -f or
// without; a link at the output directory itself is the user's choice.
func TestOutputSymlinkedSubdir(t *testing.T) {
	dir := t.TempDir()
	multi := filepath.Join(dir, "multi.nzip")
	writeRawArchive(t, multi, "one.bin", "sub/deeper/x.bin")
	elsewhere := filepath.Join(dir, "elsewhere")
	os.Mkdir(elsewhere, 0o755)
	for _, link := range []string{"sub", "sub/deeper"} {
		out := filepath.Join(dir, "out")
		at := filepath.Join(out, filepath.FromSlash(link))
		os.MkdirAll(filepath.Dir(at), 0o755)
		if err := os.Symlink(elsewhere, at); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
		before := treeOf(t, out)
		for _, f := range []bool{false, true} {
			args := []string{"decompress", "-q", "-o", out, multi}
			if f {
				args = []string{"decompress", "-q", "-f", "-o", out, multi}
			}
			code, _, errs := nzip(t, args...)
			if code != 1 || !strings.Contains(errs, "symbolic link") {
				t.Errorf("%s a link: %v: exit %d, %q; want a refusal", link, args, code, errs)
			}
			sameTree(t, link+" a link", treeOf(t, out), before)
			if got := treeOf(t, elsewhere); len(got) != 0 {
				t.Fatalf("%s a link: written through it: %v", link, keysOf(got))
			}
		}
		os.RemoveAll(out)
	}
	// trajectory extract -all writes a sharded step into DIR/NAME/: not
	// through a link there either
	writeShardedStep(t, filepath.Join(dir, "step_1"), 500, 1)
	run := filepath.Join(dir, "run.nztraj")
	if code, _, errs := nzip(t, "trajectory", "pack", "-q", "-o", run, filepath.Join(dir, "step_1")); code != 0 {
		t.Fatal(errs)
	}
	out := filepath.Join(dir, "all")
	os.Mkdir(out, 0o755)
	os.Symlink(elsewhere, filepath.Join(out, "step_1"))
	for _, args := range [][]string{{"trajectory", "extract", "-all", "-q", "-d", out, run}, {"trajectory", "extract", "-all", "-q", "-f", "-d", out, run}} {
		if code, _, errs := nzip(t, args...); code != 1 || !strings.Contains(errs, "symbolic link") {
			t.Errorf("%v: exit %d, %q; want a refusal", args, code, errs)
		}
		if got := treeOf(t, elsewhere); len(got) != 0 {
			t.Fatalf("%v: written through the link: %v", args, keysOf(got))
		}
	}
	// the output directory itself may be a link
	linkDir := filepath.Join(dir, "via-link")
	if err := os.Symlink(elsewhere, linkDir); err != nil {
		t.Skip(err)
	}
	if code, _, errs := nzip(t, "decompress", "-q", "-o", linkDir, multi); code != 0 {
		t.Fatalf("decompress into a linked directory: %s", errs)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "sub", "deeper", "x.bin")); err != nil {
		t.Fatal(err)
	}
}

// Name sets that cannot be written all or none are refused before
// anything is written: a name that is another's directory ("a" and
// "a/b", in either order), a path thousands of directories deep; nothing
// is left behind: no temporary or backup file, no directory.
func TestDecompressNamesRefused(t *testing.T) {
	dir := t.TempDir()
	deep := strings.Repeat("d/", 3000) + "x.bin"
	for _, c := range []struct {
		names []string
		want  string
	}{
		{[]string{"a", "a/b"}, "inside it"},
		{[]string{"a/b", "a"}, "inside it"},
		{[]string{"x.bin", "a/b/c", "a/b"}, "inside it"},
		{[]string{"x.bin", deep}, "directories deep"},
		{[]string{"x.bin", strings.Repeat("n", 200) + "/" + strings.Repeat("m", 200) + "/" + strings.Repeat("o", 200) + "/" + strings.Repeat("p", 200) + "/" + strings.Repeat("q", 200) + "/" + strings.Repeat("r", 200)}, "bytes"},
	} {
		arc := filepath.Join(dir, "bad.nzip")
		writeRawArchive(t, arc, c.names...)
		for _, f := range []bool{false, true} {
			out := filepath.Join(dir, "out")
			os.Mkdir(out, 0o755)
			os.WriteFile(filepath.Join(out, "keep"), []byte("kept"), 0o644)
			args := []string{"decompress", "-q", "-o", out, arc}
			if f {
				args = []string{"decompress", "-q", "-f", "-o", out, arc}
			}
			code, _, errs := nzip(t, args...)
			if code != 1 || !strings.Contains(errs, c.want) {
				t.Errorf("%.60q: %v: exit %d, %.300q; want a refusal (%s)", c.names, args[:3], code, errs, c.want)
			}
			sameTree(t, "after "+strings.Join(args[:3], " "), treeOf(t, out), map[string]string{"keep": "kept"})
			// a fresh output directory is not even made
			fresh := filepath.Join(dir, "fresh")
			nzip(t, "decompress", "-q", "-o", filepath.Join(fresh, "out"), arc)
			if _, err := os.Lstat(fresh); err == nil {
				t.Errorf("%.60q: left %s", c.names, fresh)
				os.RemoveAll(fresh)
			}
			os.RemoveAll(out)
		}
	}
	// compress refuses to write what decompress would refuse: TF.js
	// weights 70 directories below model.json
	model := filepath.Join(dir, "model")
	wp := strings.Repeat("d/", 70) + "w.bin"
	os.MkdirAll(filepath.Join(model, filepath.Dir(filepath.FromSlash(wp))), 0o755)
	os.WriteFile(filepath.Join(model, filepath.FromSlash(wp)), make([]byte, 16), 0o644)
	mj := filepath.Join(model, "model.json")
	os.WriteFile(mj, []byte(`{"format":"graph-model","modelTopology":{},"weightsManifest":[{"paths":["`+wp+`"],"weights":[{"name":"w","shape":[4],"dtype":"float32"}]}]}`), 0o644)
	if code, _, errs := nzip(t, "compress", "-q", mj); code != 1 || !strings.Contains(errs, "directories deep") {
		t.Errorf("compress of a model with weights 70 directories deep: exit %d, %.300q", code, errs)
	}
}
