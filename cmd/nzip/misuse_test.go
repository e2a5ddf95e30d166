package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
