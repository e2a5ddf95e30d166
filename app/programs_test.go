package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"

	"neuralzip/app/core"
	"neuralzip/codec"
)

// The Tensors screen's program panel: tapping a tensor shows its program
// tree and the alternatives; "Use for its cluster" chooses the picked
// one for the tensor's cluster, and the setup made of the choices codes
// them so.
func TestProgramsPanel(t *testing.T) {
	wb := newTestBench(t)
	m := openDemo(t, wb, "silero-vad")
	wb.selectTab("Tensors")
	s := wb.tensors
	p := s.prog
	// tap the largest float tensor's row
	big := largestFloat(m)
	for r, row := range s.rows {
		if row.tensor == big {
			s.tap(r)
		}
	}
	wb.wait()
	if p.tensor != big || len(p.list) < 4 || p.root == nil || p.pick < 0 || !p.list[p.pick].Chosen || p.list[p.pick].Program != codec.ProgramAuto {
		t.Fatalf("panel: tensor %d (want %d), %d alternatives, pick %d, status %q", p.tensor, big, len(p.list), p.pick, p.status.Text)
	}
	if !strings.HasPrefix(p.nodeText("r"), "tensor, auto") || len(p.childIDs("r")) == 0 || p.altText(0, 6) == "" {
		t.Fatalf("tree %q, row %q", p.nodeText("r"), p.altText(0, 1))
	}
	// pick "planes" and use it for the cluster
	k := -1
	for j, a := range p.list {
		if a.Program == codec.ProgramPlanes {
			k = j
		}
	}
	if k < 0 {
		t.Fatal("no planes alternative")
	}
	p.show(k)
	test.Tap(p.useAll)
	wb.wait()
	cluster := m.ProgramCluster(big)
	if len(p.chosen) != len(cluster) || p.list[k].Program != codec.ProgramPlanes || !p.list[k].Chosen {
		t.Fatalf("chosen %v for a cluster of %d; pick %d", p.chosenNames(), len(cluster), p.pick)
	}
	if !strings.Contains(p.nodeText("r"), "planes") {
		t.Errorf("tree after choosing: %q", p.nodeText("r"))
	}
	ns, err := p.programSetup()
	if err != nil {
		t.Fatal(err)
	}
	if wb.setups[len(wb.setups)-1].Name != ns.Name || len(ns.Setup.Programs) != len(cluster) {
		t.Fatalf("setup %q with %d programs", ns.Name, len(ns.Setup.Programs))
	}
	var buf bytes.Buffer
	if _, err := codec.Encode(context.Background(), &buf, m.Inputs(nil), codec.EncodeOptions{Setup: ns.Setup}); err != nil {
		t.Fatal(err)
	}
	rd, err := codec.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for _, i := range cluster {
		tree, err := core.ArchiveTensorProgram(rd, m.Tensors[i].File, m.Tensors[i].Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range tree.Nodes {
			if !strings.HasPrefix(b.Op, "float byte planes") {
				t.Errorf("%s: block %q", m.Tensors[i].Name, b.Op)
			}
		}
	}
	// a chunk size: the tensor's blocks follow it, and a setup of
	// programs only takes it
	p.chunk.SetSelected(core.ChunkLabel(4096))
	wb.wait()
	n := 0
	for _, b := range p.root.Nodes {
		n += b.Blocks
	}
	if int64(n) != (m.Tensors[big].Bytes/4+4095)/4096 {
		t.Errorf("at 4 Ki values per block: %d blocks of %d bytes of F32", n, m.Tensors[big].Bytes)
	}
	if ns, err := p.programSetup(); err != nil || ns.Setup.ChunkValues != 4096 {
		t.Errorf("setup at 4 Ki: %v", err)
	}
	test.Tap(p.clearB)
	wb.wait()
	if len(p.chosen) != 0 || !p.list[0].Chosen {
		t.Error("Clear choices left choices")
	}
}

// fixProgramTimes makes the program panel's speeds constant (goldens:
// they depend on the machine).
func fixProgramTimes(wb *workbench) {
	p := wb.tensors.prog
	for k := range p.list {
		p.list[k].CompressMBs, p.list[k].DecompressMBs = 100, 200
	}
	p.alts.Refresh()
}
