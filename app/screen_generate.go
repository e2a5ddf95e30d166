package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"neuralzip/app/core"
)

// generateScreen runs the embedded demo language model (stories260K)
// from its archive, weights kept compressed in memory: the text as it is
// generated, a memory gauge, tokens/s and the check that the logits equal
// a run on the uncompressed weights.
type generateScreen struct {
	wb      *workbench
	content fyne.CanvasObject
	gen     *core.Generator // built on the first run
	prompt  *widget.Entry
	length  *widget.Select
	temp    *widget.Select
	seed    *widget.Entry
	runBtn  *widget.Button
	output  *widget.Label
	gauge   *widget.ProgressBar
	memory  *widget.Label
	speed   *widget.Label
	check   *widget.Label
	runs    int
	cancel  context.CancelFunc
}

var (
	genLengths = []string{"16", "64", "128", "256"}
	genTemps   = []string{"0 (greedy)", "0.5", "0.8", "1.0"}
)

func newGenerateScreen(wb *workbench) *generateScreen {
	s := &generateScreen{wb: wb}
	s.prompt = widget.NewEntry()
	s.prompt.SetText("Once upon a time")
	s.length = widget.NewSelect(genLengths, nil)
	s.length.SetSelected("64")
	s.temp = widget.NewSelect(genTemps, nil)
	s.temp.SetSelected(genTemps[0])
	s.seed = widget.NewEntry()
	s.seed.SetText("42")
	s.runBtn = widget.NewButtonWithIcon("Generate", theme.MediaPlayIcon(), s.start)
	s.runBtn.Importance = widget.HighImportance
	s.output = widget.NewLabel("The story appears here, token by token.")
	s.output.Wrapping = fyne.TextWrapWord
	s.gauge = widget.NewProgressBar()
	s.gauge.TextFormatter = func() string {
		return fmt.Sprintf("%.1f %% of the uncompressed weights resident", 100*s.gauge.Value)
	}
	s.memory = widget.NewLabel("")
	s.memory.Wrapping = fyne.TextWrapWord
	s.speed = widget.NewLabel("")
	s.check = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	model := widget.NewLabel("stories260K: a Llama-2 of 260,032 weights (BF16, 0.5 MB, MIT) trained on TinyStories, with its tokenizer; embedded")
	model.Wrapping = fyne.TextWrapWord
	form := container.New(layoutForm(),
		widget.NewLabel("Model"), model,
		widget.NewLabel("Prompt"), s.prompt,
		widget.NewLabel("Tokens"), s.length,
		widget.NewLabel("Temperature"), s.temp,
		widget.NewLabel("Seed"), s.seed,
	)
	note := widget.NewLabel("The weights stay compressed in memory: each tensor is decoded just before its matmul " +
		"into a small reusable buffer (with two or more processors, on a second goroutine while the matmuls run). " +
		"A second run on the uncompressed weights checks that the logits are identical, bit for bit.")
	note.Wrapping = fyne.TextWrapWord
	controls := container.NewVBox(heading("Generate text from compressed weights"), form, container.NewHBox(s.runBtn), note)
	result := container.NewVBox(heading("Memory and speed"), s.gauge, s.memory, s.speed, s.check)
	top := container.NewGridWithColumns(2, container.NewPadded(controls), container.NewPadded(result))
	s.content = container.NewBorder(top, nil, nil, nil, container.NewPadded(container.NewVScroll(s.output)))
	return s
}

// request reads the form.
func (s *generateScreen) request() (core.GenerateRequest, error) {
	n, _ := strconv.Atoi(s.length.Selected)
	temp := 0.0
	if t := s.temp.Selected; t != genTemps[0] {
		temp, _ = strconv.ParseFloat(t, 64)
	}
	seed, err := strconv.ParseUint(strings.TrimSpace(s.seed.Text), 10, 64)
	if err != nil || seed == 0 {
		return core.GenerateRequest{}, fmt.Errorf("the seed must be a whole number above 0, not %q", s.seed.Text)
	}
	return core.GenerateRequest{Prompt: s.prompt.Text, N: max(n, 1), Temperature: float32(temp), TopP: 0.9, Seed: seed, Check: true}, nil
}

func (s *generateScreen) start() {
	req, err := s.request()
	if err != nil {
		s.wb.showError(err)
		return
	}
	if s.cancel != nil {
		s.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.runBtn.Disable()
	s.output.SetText(req.Prompt)
	s.check.SetText("")
	s.speed.SetText("Generating…")
	text := req.Prompt
	gen := s.gen
	var yielded time.Time
	s.wb.go_(func() func() {
		if gen == nil {
			g, err := core.DemoGenerator()
			if err != nil {
				return func() { s.done(core.GenerateResult{}, err) }
			}
			gen = g
		}
		res, err := gen.Generate(ctx, req, func(piece string) {
			text += piece
			t := text
			if s.wb.inline {
				s.output.SetText(t)
			} else {
				fyne.Do(func() { s.output.SetText(t) })
			}
			// WebAssembly has one thread and no preemption: let the page
			// draw the text now and then (rarely, so tokens/s stay honest)
			if hostBrowser && time.Since(yielded) > 100*time.Millisecond {
				time.Sleep(time.Millisecond)
				yielded = time.Now()
			}
		})
		return func() {
			s.gen = gen
			s.done(res, err)
		}
	})
}

// done shows a finished run.
func (s *generateScreen) done(res core.GenerateResult, err error) {
	s.runBtn.Enable()
	s.cancel = nil
	if err != nil {
		s.speed.SetText("")
		s.wb.showError(err)
		hostReport("gen_error", err.Error())
		return
	}
	s.runs++
	m := res.Memory
	s.output.SetText(s.prompt.Text + res.Text)
	s.gauge.SetValue(float64(m.Peak) / float64(max(m.Weights, 1)))
	s.memory.SetText(fmt.Sprintf("Resident %s (archive %s held + %s decoded buffers) of %s uncompressed: %.1f %% less.",
		kib(m.Peak), kib(m.Compressed), kib(m.Buffers), kib(m.Weights), 100*(1-float64(m.Peak)/float64(max(m.Weights, 1)))))
	s.speed.SetText(fmt.Sprintf("%.0f tokens/s from the archive, %.0f from the uncompressed weights (%d positions)",
		res.TokensPerS, res.OriginalTokensPerS, res.Positions))
	verdict := "✗ logits differ from the uncompressed run"
	if res.Identical {
		verdict = "✓ logits identical to the uncompressed run"
	}
	s.check.SetText(glyphs(verdict))
	hostReport("gen_text", res.Text)
	hostReport("gen_identical", strconv.FormatBool(res.Identical))
	hostReport("gen_logits_sha256", res.LogitsSHA256)
	hostReport("gen_tokens_per_s", fmt.Sprintf("%.1f", res.TokensPerS))
	hostReport("gen_resident_bytes", fmt.Sprint(m.Peak))
	hostReport("gen_weights_bytes", fmt.Sprint(m.Weights))
	hostReport("gen_count", strconv.Itoa(s.runs))
}

func kib(n int64) string { return fmt.Sprintf("%.1f KiB", float64(n)/1024) }
