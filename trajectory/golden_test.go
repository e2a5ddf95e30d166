package trajectory

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/codec"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// TestGolden pins the trajectory format: packing the synthetic run (six
// steps, K = 2, keyframes planned by Packer, then one append) must give
// the golden bytes, and the golden archive must decode to the steps. A
// change of either is a format change (of the trajectory or of the codec
// archives its frames are): bump the version that changed and regenerate
// with `go test ./trajectory -run Golden -update`, keeping the previous
// golden as a decode-only test.
func TestGolden(t *testing.T) {
	path := filepath.Join("testdata", "golden-v2.nztraj")
	steps := synthSteps(7)
	f := &memFile{}
	w, err := Create(f, 2, RefPrevious)
	if err != nil {
		t.Fatal(err)
	}
	opt := codec.EncodeOptions{Threads: 2, ChunkValues: 1024}
	pk := Packer{Options: opt, Plan: true}
	err = pk.Pack(context.Background(), w, 6, func(_ Pass, fn StepFunc) error {
		for _, s := range steps[:6] {
			if _, err := fn(s.name, []codec.Input{s.input()}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(context.Background(), steps[6].input(), opt); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, f.b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	a := checkAll(t, &memFile{b: golden}, steps)
	if a.Version != Version {
		t.Fatalf("golden archive of version %d, want %d", a.Version, Version)
	}
	keys := 0
	for _, fr := range a.Frames {
		if fr.Keyframe() {
			keys++
		}
	}
	if keys < 2 {
		t.Fatalf("%d keyframes: the golden does not exercise keyframes after the first", keys)
	}
	if !bytes.Equal(f.b, golden) {
		t.Fatalf("packing gives %d bytes that differ from the golden's %d: a format change (see the comment)", len(f.b), len(golden))
	}
}
