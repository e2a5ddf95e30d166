package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"neuralzip/serve/mount"
)

// inMounts reports whether dir is a mount point in /proc/mounts.
func inMounts(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == dir {
			return true
		}
	}
	return false
}

// TestMount runs "nzip mount" on the archive of stories260K BF16: the
// mounted file equals the original, nzip inspect and nzip generate read it
// as the original, and cancelling (as SIGINT does) unmounts it.
func TestMount(t *testing.T) {
	if err := mount.Available(); err != nil {
		t.Skipf("%v: skipping", err)
	}
	orig := sharedFile(t, "models/original/stories260K.bf16.safetensors")
	tok := sharedFile(t, "models/tokenizer/tok512.bin")
	dir := t.TempDir()
	arch := filepath.Join(dir, "m.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-o", arch, orig); code != 0 {
		t.Fatal(errs)
	}
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb lockedBuf
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"mount", mnt, arch}, &out, &errb) }()
	if code := <-done; code != 1 || !strings.Contains(errb.String(), "not a directory") {
		t.Errorf("mount onto a file: exit %d, %q", code, errb.String())
	}
	go func() { done <- run(ctx, []string{"mount", arch, mnt}, &out, &errb) }()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "mounted"); {
		select {
		case code := <-done:
			if strings.Contains(errb.String(), "FUSE needs root") {
				t.Skipf("%s: skipping", errb.String())
			}
			t.Fatalf("mount exited with %d: %s", code, errb.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("not mounted: %s %s", out.String(), errb.String())
		}
	}
	unmounted := false
	defer func() {
		if !unmounted { // a failed check: unmount before the process ends
			cancel()
			<-done
		}
	}()
	if !inMounts(t, mnt) {
		t.Errorf("%s is not in /proc/mounts", mnt)
	}
	file := filepath.Join(mnt, filepath.Base(orig))
	want, _ := os.ReadFile(orig)
	got, err := os.ReadFile(file)
	if err != nil || sha256.Sum256(got) != sha256.Sum256(want) {
		t.Errorf("mounted file: %d bytes, %v: differs", len(got), err)
	}
	code, o1, errs := nzip(t, "inspect", file)
	_, o2, _ := nzip(t, "inspect", orig)
	if code != 0 || o1 != o2 || !strings.Contains(o1, "safetensors") {
		t.Errorf("inspect of the mounted file: exit %d %s\n%s\noriginal:\n%s", code, errs, o1, o2)
	}
	g1 := generateJSON(t, "-temp", "0", "-n", "16", "-tokenizer", tok, file, "Once upon a time")
	g2 := generateJSON(t, "-temp", "0", "-n", "16", "-tokenizer", tok, orig, "Once upon a time")
	if g1.LogitsSHA256 != g2.LogitsSHA256 || g1.Text != g2.Text || len(g1.Tokens) == 0 {
		t.Errorf("generate on the mounted file: %+v\noriginal: %+v", g1, g2)
	}
	cancel()
	unmounted = true
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("mount exited with %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("mount did not return after cancelling")
	}
	if inMounts(t, mnt) {
		t.Errorf("%s is still mounted after cancelling", mnt)
	}
	if _, err := os.Stat(filepath.Join(mnt, filepath.Base(orig))); err == nil {
		t.Errorf("the file is still there after unmounting")
	}
	if b, _ := os.ReadDir(mnt); len(b) != 0 || !bytes.Contains([]byte(out.String()), []byte("read-only")) {
		t.Errorf("after unmounting: %d entries; output %q", len(b), out.String())
	}
}
