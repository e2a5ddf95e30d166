package main

import (
	"strings"
	"testing"

	"fyne.io/fyne/v2/test"
)

// TestGenerateScreen generates from the embedded demo model: the greedy
// story appears after the prompt, the gauge shows less than the
// uncompressed weights and the logits match the uncompressed run.
func TestGenerateScreen(t *testing.T) {
	wb := newTestBench(t)
	wb.selectTab("Generate")
	s := wb.generate
	s.length.SetSelected("16")
	test.Tap(s.runBtn)
	wb.wait()
	out := s.output.Text
	if !strings.HasPrefix(out, "Once upon a time, there was a little girl") {
		t.Errorf("output %q", out)
	}
	if s.check.Text != "✓ logits identical to the uncompressed run" {
		t.Errorf("check %q", s.check.Text)
	}
	if v := s.gauge.Value; !(v > 0.5 && v < 0.8) {
		t.Errorf("gauge %v (resident / uncompressed)", v)
	}
	if !strings.Contains(s.speed.Text, "tokens/s") || s.runBtn.Disabled() {
		t.Errorf("speed %q, button disabled %v", s.speed.Text, s.runBtn.Disabled())
	}
	// a bad seed is refused with a message, nothing runs
	s.seed.SetText("x")
	test.Tap(s.runBtn)
	wb.wait()
	if s.runs != 1 || !strings.Contains(wb.status.Text, "seed") {
		t.Errorf("runs %d, status %q", s.runs, wb.status.Text)
	}
}
