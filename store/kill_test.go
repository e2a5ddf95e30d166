//go:build !js

package store

import (
	"os"
	"os/exec"
	"path"
	"testing"
	"time"
)

// TestKillChild is the child of TestKill: it adds hub models to the store
// NZ_STORE_CHILD (one by one, or in one AddBatch when NZ_STORE_BATCH is
// set) and kills itself (SIGKILL) at phase NZ_STORE_KILL.
func TestKillChild(t *testing.T) {
	dir := os.Getenv("NZ_STORE_CHILD")
	if dir == "" {
		t.Skip("the child process of TestKill (NZ_STORE_CHILD not set)")
	}
	phase := os.Getenv("NZ_STORE_KILL")
	testHook = func(p string) {
		if p == phase {
			pr, _ := os.FindProcess(os.Getpid())
			pr.Kill()
			time.Sleep(time.Minute)
		}
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hub := shared(t, "hub/stories260K")
	if os.Getenv("NZ_STORE_BATCH") != "" {
		var bms []BatchModel
		for _, f := range hubFiles {
			bms = append(bms, BatchModel{Name: f, Files: inputs(t, path.Join(hub, f))})
		}
		if _, _, err := s.AddBatch(bms, AddOptions{}); err != nil {
			t.Fatal(err)
		}
	} else {
		for _, f := range hubFiles {
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
// the same for a batch (AddBatch: all its models or none).
func TestKill(t *testing.T) {
	shared(t, "hub/stories260K")
	if testing.Short() {
		t.Skip("-short: the kill test runs child processes")
	}
	dir := t.TempDir()
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
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
	for _, phase := range []string{"pack-written", "packed"} {
		run(phase, 0)
		if gs := check("killed at " + phase); gs.Packs+int64(gs.Temps) != 1 {
			t.Fatalf("killed at %s: gc removed %d chunk and %d temporary files, want the dead add's one", phase, gs.Packs, gs.Temps)
		}
		// the first model never lands: the child dies in its add
		s, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		names, _ := s.Names()
		s.Close()
		if len(names) != 0 {
			t.Fatalf("killed at %s: %d models present", phase, len(names))
		}
	}
	for _, d := range []time.Duration{30, 80, 150, 250} {
		run("", d*time.Millisecond)
		check("killed after " + (d * time.Millisecond).String())
		// the next child resumes: adds of models present fail, so start over
		os.RemoveAll(dir)
		if err := Init(dir); err != nil {
			t.Fatal(err)
		}
	}
	run("", 0)
	check("complete")

	// a batch: killed before its commit, none of its models is there
	batch = "1"
	os.RemoveAll(dir)
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"pack-written", "packed"} {
		run(phase, 0)
		if gs := check("batch killed at " + phase); gs.Packs+int64(gs.Temps) == 0 {
			t.Fatalf("batch killed at %s: gc removed nothing, want the dead batch's chunk files", phase)
		}
		s, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		names, _ := s.Names()
		s.Close()
		if len(names) != 0 {
			t.Fatalf("batch killed at %s: %d models present", phase, len(names))
		}
	}
	for _, d := range []time.Duration{40, 120} {
		run("", d*time.Millisecond)
		check("batch killed after " + (d * time.Millisecond).String())
		os.RemoveAll(dir)
		if err := Init(dir); err != nil {
			t.Fatal(err)
		}
	}
	run("", 0)
	s, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	names, _ := s.Names()
	s.Close()
	if len(names) != len(hubFiles) {
		t.Fatalf("complete batch: %d models, want %d", len(names), len(hubFiles))
	}
	check("batch complete")
}
