package infer

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"neuralzip/codec"
)

// speedRun is one way of running a model in the speed tables.
type speedRun struct {
	m      *Model
	procs  int // GOMAXPROCS while it runs (0: as set)
	wall   float64
	cpu    float64 // tokens per CPU-second
	sha    string
	tokens string
}

// measure runs every variant runs times, interleaved (the shared
// machine's speed swings from run to run), keeping each one's best
// tokens/s of wall-clock time and of CPU time (the process's user +
// system time, all threads: a prefetching worker's time counts).
func measure(t *testing.T, c exactCase, runs int, vs []*speedRun) {
	t.Helper()
	for range runs {
		for _, v := range vs {
			prev := 0
			if v.procs > 0 {
				prev = runtime.GOMAXPROCS(v.procs)
			}
			start, cpu := time.Now(), cpuTime()
			res, err := Generate(v.m, c.tok, c.prompt, GenerateOptions{N: 100})
			if err != nil {
				t.Fatal(err)
			}
			wall, used := time.Since(start), cpuTime()-cpu
			if prev > 0 {
				runtime.GOMAXPROCS(prev)
			}
			v.wall = max(v.wall, float64(res.Positions)/wall.Seconds())
			if used > 0 {
				v.cpu = max(v.cpu, float64(res.Positions)/used.Seconds())
			}
			v.sha, v.tokens = res.LogitsSHA256, fmt.Sprint(res.Tokens)
		}
	}
}

// TestSpeedTable prints the tables of docs/inference.md. The first: per
// model, the resident weight bytes and tokens/s from the original file
// and from its archive made for running (nzip compress -setup gaussian
// -chunk 8192), without and with prefetching, in wall-clock time and per
// CPU-second, and both with one processor (GOMAXPROCS=1, where
// prefetching is off). The second: archives made other ways (default
// options, chunk sizes, the built-in Gaussian setup), with their size, resident peak and speed, and whether their
// logits equal the original's. Greedy, 100 tokens after the prompt, the
// best of interleaved runs. Run it with
// NZ_INFER_SPEED=1 go test ./infer -run TestSpeedTable -v
// (NZ_INFER_RUNS sets the runs per variant, default 7).
func TestSpeedTable(t *testing.T) {
	if os.Getenv("NZ_INFER_SPEED") == "" {
		t.Skip("a measurement, not a test: set NZ_INFER_SPEED=1")
	}
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("the table compares one processor with several: run it with GOMAXPROCS ≥ 2")
	}
	runs := 7
	fmt.Sscan(os.Getenv("NZ_INFER_RUNS"), &runs)
	var main, vars strings.Builder
	main.WriteString("| model | weights | archive | resident peak | tokens/s original | archive | × | archive, prefetch | × | tokens per CPU-second original | archive | × | archive, prefetch | × | GOMAXPROCS=1 tokens/s original | archive | × |\n")
	main.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	vars.WriteString("| model | archive made with | archive bytes | resident peak / weights | tokens per CPU-second × original | tokens/s × original | prefetch: tokens/s × | logits identical |\n")
	vars.WriteString("|---|---|---|---|---|---|---|---|\n")
	gauss := codec.GaussianSetup()
	variants := []struct {
		name string
		opt  codec.EncodeOptions
	}{
		// the first is the archive of the first table
		{"Gaussian setup, `-chunk 8192`", codec.EncodeOptions{Setup: gauss, ChunkValues: 8192}},
		{"default (`-chunk 65536`)", codec.EncodeOptions{}},
		{"`-chunk 16384`", codec.EncodeOptions{ChunkValues: 16384}},
		{"Gaussian setup", codec.EncodeOptions{Setup: gauss}},
		{"Gaussian setup, `-chunk 16384`", codec.EncodeOptions{Setup: gauss, ChunkValues: 16384}},
	}
	for _, c := range benchModels(t) {
		orig := readFile(t, needFile(t, c.file))
		name := c.file[strings.LastIndex(c.file, "/")+1:]
		o := &speedRun{m: openBytes(t, orig, Options{Config: c.config})}
		o1 := &speedRun{m: o.m, procs: 1}
		vs := []*speedRun{o, o1}
		type archived struct {
			bytes   int
			plain   *speedRun
			ahead   *speedRun
			oneProc *speedRun
		}
		as := make([]archived, len(variants))
		for i, v := range variants {
			a := compress(t, orig, v.opt)
			m := openBytes(t, a, Options{Config: c.config})
			as[i] = archived{bytes: len(a), plain: &speedRun{m: m},
				ahead: &speedRun{m: openBytes(t, a, Options{Config: c.config, Prefetch: true})}}
			vs = append(vs, as[i].plain, as[i].ahead)
			if i == 0 {
				as[i].oneProc = &speedRun{m: m, procs: 1}
				vs = append(vs, as[i].oneProc)
			}
		}
		measure(t, c, runs, vs)
		d := as[0]
		mem := d.plain.m.Memory()
		fmt.Fprintf(&main, "| %s | %d | %d | %d (%.1f %%) | %.0f | %.0f | %.2f | %.0f | %.2f | %.0f | %.0f | %.2f | %.0f | %.2f | %.0f | %.0f | %.2f |\n",
			name, mem.Weights, mem.Compressed, mem.Peak, 100*float64(mem.Peak)/float64(mem.Weights),
			o.wall, d.plain.wall, d.plain.wall/o.wall, d.ahead.wall, d.ahead.wall/o.wall,
			o.cpu, d.plain.cpu, d.plain.cpu/o.cpu, d.ahead.cpu, d.ahead.cpu/o.cpu,
			o1.wall, d.oneProc.wall, d.oneProc.wall/o1.wall)
		for i, v := range variants {
			a := as[i]
			mem := a.plain.m.Memory()
			same := "yes"
			for _, r := range []*speedRun{a.plain, a.ahead} {
				if r.sha != o.sha || r.tokens != o.tokens {
					same = "**no**"
					t.Errorf("%s, %s: logits %s, original %s", name, v.name, r.sha, o.sha)
				}
			}
			fmt.Fprintf(&vars, "| %s | %s | %d | %.1f %% | %.2f | %.2f | %.2f | %s |\n",
				name, v.name, a.bytes, 100*float64(mem.Peak)/float64(mem.Weights),
				a.plain.cpu/o.cpu, a.plain.wall/o.wall, a.ahead.wall/o.wall, same)
		}
	}
	t.Log("\n" + main.String() + "\n" + vars.String())
}
