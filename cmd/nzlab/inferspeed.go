package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/infer"
)

// runInferSpeed prints the two tables of docs/inference.md ("Memory and
// speed"). The first: per model, the resident weight bytes and tokens/s
// from the original file and from its archive made for running
// (infer.ArchiveOptions), without and with prefetching, in wall-clock time
// and per CPU-second, and both with one processor (GOMAXPROCS=1, where
// prefetching is off). The second: archives made other ways (default
// options, chunk sizes, the built-in Gaussian setup), with their size,
// resident peak and speed, and whether their logits equal the original's.
// Greedy, 100 tokens after the prompt, the best of interleaved runs (the
// shared machine's speed swings from run to run).
func runInferSpeed(args []string) error {
	fs := flag.NewFlagSet("infer-speed", flag.ExitOnError)
	shared := fs.String("shared", "../shared", "the corpus directory (models/, trajectories/)")
	runs := fs.Int("runs", 7, "interleaved runs of every variant; the best counts")
	fs.Parse(args)
	if runtime.GOMAXPROCS(0) < 2 {
		return fmt.Errorf("the table compares one processor with several: run it with GOMAXPROCS ≥ 2")
	}
	tok512, err := os.ReadFile(filepath.Join(*shared, "models/tokenizer/tok512.bin"))
	if err != nil {
		return err
	}
	gptDir := filepath.Join(*shared, "trajectories/tinygpt-fortunes")
	gptConf, err := os.ReadFile(filepath.Join(gptDir, "config.json"))
	if err != nil {
		return err
	}
	models := []struct {
		file   string
		config []byte
		llama  bool
		prompt string
	}{
		{filepath.Join(*shared, "models/original/stories260K.bf16.safetensors"), nil, true, "Once upon a time"},
		{filepath.Join(*shared, "models/original/stories260K.f32.safetensors"), nil, true, "Once upon a time"},
		{filepath.Join(gptDir, "step_001000.bf16.safetensors"), gptConf, false, "A fool and his money"},
		{filepath.Join(gptDir, "step_001000.f32.safetensors"), gptConf, false, "A fool and his money"},
	}
	gauss := codec.GaussianSetup()
	variants := []struct {
		name string
		opt  codec.EncodeOptions
	}{
		// the first is the archive of the first table
		{"Gaussian setup, `-chunk 8192`", infer.ArchiveOptions()},
		{"default (`-chunk 65536`)", codec.EncodeOptions{}},
		{"`-chunk 16384`", codec.EncodeOptions{ChunkValues: 16384}},
		{"Gaussian setup", codec.EncodeOptions{Setup: gauss}},
		{"Gaussian setup, `-chunk 16384`", codec.EncodeOptions{Setup: gauss, ChunkValues: 16384}},
	}
	var main, vars strings.Builder
	main.WriteString("| model | weights | archive | resident peak | tokens/s original | archive | × | archive, prefetch | × | tokens per CPU-second original | archive | × | archive, prefetch | × | GOMAXPROCS=1 tokens/s original | archive | × |\n")
	main.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	vars.WriteString("| model | archive made with | archive bytes | resident peak / weights | tokens per CPU-second × original | tokens/s × original | prefetch: tokens/s × | logits identical |\n")
	vars.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, c := range models {
		orig, err := os.ReadFile(c.file)
		if err != nil {
			return err
		}
		open := func(b []byte, opt infer.Options) (*infer.Model, error) {
			opt.Config = c.config
			return infer.Open(bytes.NewReader(b), int64(len(b)), opt)
		}
		om, err := open(orig, infer.Options{})
		if err != nil {
			return err
		}
		defer om.Close()
		var tok infer.Tokenizer = infer.ByteTokenizer{}
		if c.llama {
			if tok, err = infer.ParseLlama2cTokenizer(tok512, om.Config().Vocab); err != nil {
				return err
			}
		}
		o := &speedRun{m: om}
		o1 := &speedRun{m: om, procs: 1}
		vs := []*speedRun{o, o1}
		type archived struct {
			bytes            int
			plain, ahead, p1 *speedRun
		}
		as := make([]archived, len(variants))
		for i, v := range variants {
			a, err := compressModel(orig, v.opt)
			if err != nil {
				return err
			}
			m, err := open(a, infer.Options{})
			if err != nil {
				return err
			}
			defer m.Close()
			mp, err := open(a, infer.Options{Prefetch: true})
			if err != nil {
				return err
			}
			defer mp.Close()
			as[i] = archived{bytes: len(a), plain: &speedRun{m: m}, ahead: &speedRun{m: mp}}
			vs = append(vs, as[i].plain, as[i].ahead)
			if i == 0 {
				as[i].p1 = &speedRun{m: m, procs: 1}
				vs = append(vs, as[i].p1)
			}
		}
		if err := measureRuns(tok, c.prompt, *runs, vs); err != nil {
			return err
		}
		name := filepath.Base(c.file)
		d := as[0]
		mem := d.plain.m.Memory()
		fmt.Fprintf(&main, "| %s | %d | %d | %d (%.1f %%) | %.0f | %.0f | %.2f | %.0f | %.2f | %.0f | %.0f | %.2f | %.0f | %.2f | %.0f | %.0f | %.2f |\n",
			name, mem.Weights, mem.Compressed, mem.Peak, 100*float64(mem.Peak)/float64(mem.Weights),
			o.wall, d.plain.wall, d.plain.wall/o.wall, d.ahead.wall, d.ahead.wall/o.wall,
			o.cpu, d.plain.cpu, d.plain.cpu/o.cpu, d.ahead.cpu, d.ahead.cpu/o.cpu,
			o1.wall, d.p1.wall, d.p1.wall/o1.wall)
		for i, v := range variants {
			a := as[i]
			mem := a.plain.m.Memory()
			same := "yes"
			for _, r := range []*speedRun{a.plain, a.ahead} {
				if r.sha != o.sha || r.tokens != o.tokens {
					same = "**no**"
					fmt.Fprintf(os.Stderr, "nzlab: %s, %s: logits %s, original %s\n", name, v.name, r.sha, o.sha)
				}
			}
			fmt.Fprintf(&vars, "| %s | %s | %d | %.1f %% | %.2f | %.2f | %.2f | %s |\n",
				name, v.name, a.bytes, 100*float64(mem.Peak)/float64(mem.Weights),
				a.plain.cpu/o.cpu, a.plain.wall/o.wall, a.ahead.wall/o.wall, same)
		}
	}
	fmt.Print(main.String() + "\n" + vars.String())
	return nil
}

// speedRun is one way of running a model in the tables.
type speedRun struct {
	m      *infer.Model
	procs  int // GOMAXPROCS while it runs (0: as set)
	wall   float64
	cpu    float64 // tokens per CPU-second
	sha    string
	tokens string
}

// measureRuns runs every variant runs times, interleaved, keeping each
// one's best tokens/s of wall-clock time and of CPU time (the process's,
// all threads: a prefetching worker's time counts).
func measureRuns(tok infer.Tokenizer, prompt string, runs int, vs []*speedRun) error {
	for range runs {
		for _, v := range vs {
			prev := 0
			if v.procs > 0 {
				prev = runtime.GOMAXPROCS(v.procs)
			}
			start, cpu := time.Now(), processCPU()
			res, err := infer.Generate(v.m, tok, prompt, infer.GenerateOptions{N: 100})
			wall, used := time.Since(start), processCPU()-cpu
			if prev > 0 {
				runtime.GOMAXPROCS(prev)
			}
			if err != nil {
				return err
			}
			v.wall = max(v.wall, float64(res.Positions)/wall.Seconds())
			if used > 0 {
				v.cpu = max(v.cpu, float64(res.Positions)/used.Seconds())
			}
			v.sha, v.tokens = res.LogitsSHA256, fmt.Sprint(res.Tokens)
		}
	}
	return nil
}

// compressModel codes an original checkpoint held in memory.
func compressModel(b []byte, opt codec.EncodeOptions) ([]byte, error) {
	l, err := checkpoint.Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	return codec.CompressBytes(context.Background(), b, l.Segments, opt)
}
