//go:build !js

package store

import (
	"os"
	"os/exec"
	"path"
	"slices"
	"testing"
	"time"
)

// TestKillChild is the child of TestKill: it adds hub models to the store
// NZ_STORE_CHILD (one by one, or in one AddBatch when NZ_STORE_BATCH is
// "batch"; one by one in sorted order, each BF16 export before its F32
// original, so that the F32 adds recast stored units, when it is
// "sorted") and kills itself (SIGKILL) at phase NZ_STORE_KILL.
func TestKillChild(t *testing.T) {
	dir := os.Getenv("NZ_STORE_CHILD")
	if dir == "" {
		t.Skip("the child process of TestKill (NZ_STORE_CHILD not set)")
	}
	phase := os.Getenv("NZ_STORE_KILL")
	killAt(phase)
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hub := shared(t, "hub/stories260K")
	files := hubFiles
	if os.Getenv("NZ_STORE_BATCH") == "sorted" {
		files = slices.Sorted(slices.Values(hubFiles))
	}
	if os.Getenv("NZ_STORE_BATCH") == "batch" {
		var bms []BatchModel
		for _, f := range hubFiles {
			bms = append(bms, BatchModel{Name: f, Files: inputs(t, path.Join(hub, f))})
		}
		if _, _, err := s.AddBatch(bms, AddOptions{}); err != nil {
			t.Fatal(err)
		}
	} else {
		for _, f := range files {
			if _, _, err := s.Add(f, inputs(t, path.Join(hub, f)), AddOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.Close()
}

// TestKill kills an adding process (kill -9) at each point of an add and
// at random times, then checks that the store verifies, that gc removes
// what the dead add left, and that a new add completes the store; then
// the same for a batch (AddBatch: all its models or none) and for single
// adds in sorted order (whose F32 adds recast stored BF16 units).
func TestKill(t *testing.T) {
	shared(t, "hub/stories260K")
	if testing.Short() {
		t.Skip("-short: the kill test runs child processes")
	}
	dir := t.TempDir()
	batch := ""
	run := func(phase string, after time.Duration) {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "NZ_STORE_CHILD="+dir, "NZ_STORE_KILL="+phase, "NZ_STORE_BATCH="+batch)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if after > 0 {
			time.Sleep(after)
			cmd.Process.Kill()
		}
		cmd.Wait()
	}
	check := func(what string) (gs GCStats) {
		s, err := Open(dir, Options{LockWait: 10 * time.Second})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer s.Close()
		bad, err := s.Verify()
		if err != nil || len(bad) > 0 {
			t.Fatalf("%s: verify: %v %v", what, err, bad)
		}
		if gs, err = s.GC(); err != nil {
			t.Fatalf("%s: gc: %v", what, err)
		}
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.ChunkBytes != st.Stored {
			t.Fatalf("%s: after gc the chunk files hold %d bytes, the index uses %d", what, st.ChunkBytes, st.Stored)
		}
		ents, _ := os.ReadDir(path.Join(dir, "tmp"))
		if len(ents) != 0 {
			t.Fatalf("%s: gc left %d temporary files", what, len(ents))
		}
		t.Logf("%s: %d models verify; gc removed %d chunk files, %d temporary files", what, len(st.Models), gs.Packs, gs.Temps)
		return gs
	}
	present := func() int {
		s, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		names, _ := s.Names()
		return len(names)
	}
	fresh := func() {
		os.RemoveAll(dir)
		if err := Init(dir); err != nil {
			t.Fatal(err)
		}
	}
	for _, batch = range []string{"", "batch", "sorted"} {
		lbl := "add"
		if batch != "" {
			lbl = batch
		}
		fresh()
		for _, phase := range []string{"pack-written", "packed"} {
			run(phase, 0)
			gs := check(lbl + " killed at " + phase)
			// one add leaves its one chunk (or temporary) file; a batch
			// leaves those written when it died
			if n := gs.Packs + int64(gs.Temps); n == 0 || (batch != "batch" && n != 1) {
				t.Fatalf("%s killed at %s: gc removed %d chunk and %d temporary files, want the dead add's", lbl, phase, gs.Packs, gs.Temps)
			}
			// the first model (a batch: every model) never lands
			if n := present(); n != 0 {
				t.Fatalf("%s killed at %s: %d models present", lbl, phase, n)
			}
		}
		for _, d := range []time.Duration{30, 80, 150, 250} {
			run("", d*time.Millisecond)
			check(lbl + " killed after " + (d * time.Millisecond).String())
			// the next child resumes: adds of models present fail, so start over
			fresh()
		}
		run("", 0)
		check(lbl + " complete")
		if n := present(); n != len(hubFiles) {
			t.Fatalf("%s complete: %d models, want %d", lbl, n, len(hubFiles))
		}
	}
}
