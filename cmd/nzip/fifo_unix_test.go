//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe given as any input (the model, -ref, -setup, an archive, a
// step, a shard of a sharded model) is refused at once with a clear
// error: opening one blocks until a writer comes, deaf to Ctrl-C, and
// trajectory pack left its temporary file when killed.
func TestFIFOInputRefused(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, "m.safetensors")
	writeSafetensors(t, m, 2000)
	arc := filepath.Join(dir, "m.nzip")
	setup := filepath.Join(dir, "s.nzsetup")
	run := filepath.Join(dir, "run.nztraj")
	for _, args := range [][]string{
		{"compress", "-q", "-o", arc, m},
		{"setup", "build", "-q", "-o", setup, m},
		{"trajectory", "pack", "-q", "-o", run, m},
	} {
		if code, _, errs := nzip(t, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	// a sharded model whose shard is a named pipe
	sharded := filepath.Join(dir, "sharded")
	os.Mkdir(sharded, 0o755)
	writeSafetensors(t, filepath.Join(sharded, "model-00001-of-00002.safetensors"), 1000)
	if err := syscall.Mkfifo(filepath.Join(sharded, "model-00002-of-00002.safetensors"), 0o644); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(sharded, "model.safetensors.index.json")
	os.WriteFile(idx, []byte(`{"metadata":{},"weight_map":{"a.weight":"model-00001-of-00002.safetensors","b.weight":"model-00002-of-00002.safetensors"}}`), 0o644)
	o := filepath.Join(dir, "out")
	for _, args := range [][]string{
		{"compress", "-q", "-o", o, fifo},
		{"compress", "-q", "-o", o, "-ref", fifo, m},
		{"compress", "-q", "-o", o, "-setup", fifo, m},
		{"compress", "-q", "-o", o, idx},
		{"decompress", "-q", "-o", o, fifo},
		{"decompress", "-q", "-o", o, "-ref", fifo, arc},
		{"decompress", "-q", "-o", o, "-setup", fifo, arc},
		{"verify", fifo},
		{"verify", "-ref", fifo, arc},
		{"inspect", fifo},
		{"inspect", "-ref", fifo, arc},
		{"bench", "-codecs", "nzip", fifo},
		{"setup", "build", "-q", "-o", o, fifo},
		{"setup", "show", fifo},
		{"setup", "compare", "-setups", setup + "," + fifo, m},
		{"trajectory", "pack", "-q", "-o", o, m, fifo},
		{"trajectory", "pack", "-q", "-o", o, sharded},
		{"trajectory", "append", "-q", run, fifo},
		{"trajectory", "append", "-q", fifo, m},
		{"trajectory", "ls", fifo},
		{"trajectory", "extract", "-q", "-o", o, fifo, "0"},
		{"trajectory", "verify", fifo},
		{"trajectory", "repack", "-q", "-o", o, fifo},
	} {
		code, errs, hung := nzipFIFO(t, fifo, args...)
		if hung {
			t.Errorf("%v: still blocked after 5 s", args)
			continue
		}
		if code != 1 || !strings.Contains(errs, "not a regular file") {
			t.Errorf("%v: exit %d, %q; want a refusal: not a regular file", args, code, errs)
		}
		if _, err := os.Lstat(o); err == nil {
			t.Errorf("%v: wrote %s", args, o)
			os.Remove(o)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// nzipFIFO runs nzip with args and, when it has not returned after 5
// seconds, reports it hung and opens fifo for writing (and closes it) to
// release an open of it blocked in the command; it waits at most 2
// seconds more for it (a read blocked forever is left).
func nzipFIFO(t *testing.T, fifo string, args ...string) (code int, errs string, hung bool) {
	t.Helper()
	type result struct {
		code int
		errs string
	}
	done := make(chan result, 1)
	go func() {
		code, _, errs := nzip(t, args...)
		done <- result{code, errs}
	}()
	select {
	case r := <-done:
		return r.code, r.errs, false
	case <-time.After(5 * time.Second):
	}
	deadline := time.After(2 * time.Second)
	for {
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		select {
		case r := <-done:
			return r.code, r.errs, true
		case <-deadline:
			return -1, "", true
		case <-time.After(50 * time.Millisecond):
		}
	}
}
