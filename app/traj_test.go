package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"neuralzip/codec"
	"neuralzip/trajectory"
)

// writeRunStep writes step s of a small "training run" (one BF16 tensor
// whose values move a little each step) as a safetensors file.
func writeRunStep(t *testing.T, dir string, s int) string {
	t.Helper()
	const n = 20000
	var data []byte
	for i := 0; i < n; i++ {
		x := float32(math.Sin(float64(i)*0.7))*0.05*float32(1+i%7) + float32(s)*3e-4*float32(math.Cos(float64(i)))
		data = binary.LittleEndian.AppendUint16(data, uint16(math.Float32bits(x)>>16))
	}
	hdr := fmt.Sprintf(`{"w":{"dtype":"BF16","shape":[%d],"data_offsets":[0,%d]}}`, n, len(data))
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	file = append(append(file, hdr...), data...)
	p := filepath.Join(dir, fmt.Sprintf("step_%03d.safetensors", s))
	if err := os.WriteFile(p, file, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The Trajectory screen analyses the open checkpoints as steps of a run.
func TestTrajectoryScreen(t *testing.T) {
	wb := newTestBench(t)
	dir := t.TempDir()
	for s := 0; s < 3; s++ {
		wb.open(writeRunStep(t, dir, s))
		wb.wait()
	}
	if len(wb.models) != 3 {
		t.Fatalf("%d models open", len(wb.models))
	}
	wb.selectTab("Trajectory")
	test.Tap(wb.traj.analyze)
	wb.wait()
	st := wb.traj.steps
	if len(st) != 3 {
		t.Fatalf("%d steps analysed (status %q)", len(st), wb.traj.status.Text)
	}
	for i, s := range st[1:] {
		if s.Conditioned >= s.Independent || len(s.Changed) != 16 {
			t.Errorf("step %d: conditioned %d, independent %d, %d bit planes", i+1, s.Conditioned, s.Independent, len(s.Changed))
		}
	}
	if !strings.HasPrefix(wb.traj.status.Text, "3 steps: conditioned on the step before") || wb.traj.ratio.plot == nil || wb.traj.changed.plot == nil {
		t.Fatalf("status %q, charts %v %v", wb.traj.status.Text, wb.traj.ratio.plot != nil, wb.traj.changed.plot != nil)
	}
	// more steps than the keyframe interval: the status gives the pack
	for s := 3; s < 12; s++ {
		wb.open(writeRunStep(t, dir, s))
		wb.wait()
	}
	for m := range wb.traj.modelSel {
		wb.traj.modelSel[m] = true
	}
	test.Tap(wb.traj.analyze)
	wb.wait()
	if len(wb.traj.steps) != 12 || !strings.Contains(wb.traj.status.Text, "packed with K = 10 (no step decodes through more than 10 frames), keyframes at steps 0, ") {
		t.Fatalf("%d steps, status %q", len(wb.traj.steps), wb.traj.status.Text)
	}
	// Save .nztraj: the analysed steps as a trajectory
	var packed []byte
	wb.traj.pack(func(b []byte) { packed = b })
	wb.wait()
	a, err := trajectory.Open(bytes.NewReader(packed), int64(len(packed)))
	if err != nil || len(a.Frames) != 12 || !strings.HasPrefix(wb.traj.status.Text, "Packed 12 steps") {
		t.Fatalf("pack: %v (status %q)", err, wb.traj.status.Text)
	}
	d, err := a.Extract(context.Background(), 11, codec.DecodeOptions{})
	if want, _ := os.ReadFile(filepath.Join(dir, "step_011.safetensors")); err != nil || !bytes.Equal(d.Data, want) {
		t.Fatalf("packed step 11: %v", err)
	}
	// nothing checked: fewer than two steps
	for m := range wb.traj.modelSel {
		wb.traj.modelSel[m] = false
	}
	test.Tap(wb.traj.analyze)
	if !strings.Contains(wb.traj.status.Text, "at least two") {
		t.Errorf("status %q", wb.traj.status.Text)
	}
}
