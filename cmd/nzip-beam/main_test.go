package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/minio/minio-go/v7"

	"neuralzip/internal/weedtest"
	"neuralzip/store"
)

func TestMain(m *testing.M) {
	flag.Parse()
	beam.Init()
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	code := m.Run()
	weedtest.Stop()
	os.Exit(code)
}

// shared is a directory of ../shared (the real models), or a skip.
func shared(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "shared", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not present (real models from ../shared): %v", rel, err)
	}
	return p
}

// addAll is the reference: nzip store add of the models one by one, in
// order, into a new directory store.
func addAll(t *testing.T, models []modelRef) string {
	return addAllWith(t, models, store.InitOptions{})
}

// addAllWith is addAll into a store made with settings o.
func addAllWith(t *testing.T, models []modelRef, o store.InitOptions) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "add")
	if err := store.InitWith(dir, o); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, m := range models {
		files, err := openModel(m.Path, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		ins := make([]store.Input, len(files))
		for i, f := range files {
			ins[i] = store.Input{Name: f.Name, R: f.R, Size: f.Size, Format: f.Format, Segments: f.Segs}
		}
		_, _, err = s.Add(m.Name, ins, store.AddOptions{})
		closeFiles(files)
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func statsJSON(t *testing.T, dir string) string {
	t.Helper()
	s, err := store.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(st, "", " ")
	return string(b)
}

// checkRestores restores every model of the store and compares it with
// the files it came from, byte for byte, and verifies the store.
func checkRestores(t *testing.T, dir string, models []modelRef) {
	t.Helper()
	s, err := store.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, m := range models {
		man, err := s.Model(m.Name)
		if err != nil {
			t.Fatal(err)
		}
		files, err := openModel(m.Path, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		for fi, f := range files {
			want, err := readSpan(f.Src, 0, f.Size)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := s.WriteFile(man, fi, &got); err != nil {
				t.Fatalf("%s: %v", m.Name, err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("%s file %s: restores to other bytes", m.Name, f.Name)
			}
		}
		closeFiles(files)
	}
	if bad, err := s.Verify(); err != nil || len(bad) > 0 {
		t.Fatalf("verify: %v %v", bad, err)
	}
}

func newStore(t *testing.T) string { return newStoreWith(t, store.InitOptions{}) }

// newStoreWith is newStore made with settings o.
func newStoreWith(t *testing.T, o store.InitOptions) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "beam")
	if err := store.InitWith(dir, o); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestIngestMatchesAdd runs the pipeline on Prism, in this process, over
// the hub (fine-tunes of one base in F32, BF16 and F16: deduplicated
// tensors, casts, deltas) and over the real models of every format, and
// compares the store with the one nzip store add makes of the same files
// in the same order: the same stats (units by kind, stored bytes, chunk
// files, every model's added bytes and bases), every file restored byte
// for byte; and the sorted hub in stores with a decode bound of 3 and 2
// (fewer casts and deltas, recasts refused).
func TestIngestMatchesAdd(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	for _, tc := range []struct {
		name   string
		inputs []string
		maxDec float64 // the stores' decode bound
	}{
		// F32 before its casts, so casts are met
		{"hub-f32-first", []string{filepath.Join(hub, "base/model.f32.safetensors"), hub}, 0},
		// in sorted order, each model's 16-bit exports before its F32
		// original: every cast is a recast at the F32's commit, and
		// later models are planned on the recast units
		{"hub-sorted", []string{hub}, 0},
		{"original", []string{shared(t, "models/original")}, 0},
		{"hub-sorted-max3", []string{hub}, 3},
		{"hub-f32-first-max2", []string{filepath.Join(hub, "base/model.f32.safetensors"), hub}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.name == "original" {
				t.Skip("-short: the 67 MB of real models")
			}
			models, err := expand(context.Background(), tc.inputs)
			if err != nil {
				t.Fatal(err)
			}
			o := store.InitOptions{MaxDecode: tc.maxDec}
			ref := addAllWith(t, models, o)
			dir := newStoreWith(t, o)
			sum, err := ingest(context.Background(), config{store: dir, runner: "prism", inputs: tc.inputs})
			if err != nil {
				t.Fatal(err)
			}
			if a, b := statsJSON(t, ref), statsJSON(t, dir); a != b {
				t.Fatalf("stats differ:\nstore add:\n%s\nnzip-beam:\n%s", a, b)
			}
			c := sum.counters
			if c["models_committed"] != int64(len(models)) || c["files"] == 0 || c["units"] == 0 {
				t.Fatalf("metrics: %v for %d models", c, len(models))
			}
			if tc.name == "hub-f32-first" && (c["units_cast"] == 0 || c["units_delta"] == 0 || c["units_deduplicated"] == 0) {
				t.Fatalf("the hub gave no casts, deltas or duplicates: %v", c)
			}
			if tc.name == "hub-sorted" && !strings.Contains(statsJSON(t, dir), `"cast": `) {
				t.Fatalf("the sorted hub made no recasts")
			}
			if tc.maxDec > 0 {
				var st store.Stats
				if err := json.Unmarshal([]byte(statsJSON(t, dir)), &st); err != nil {
					t.Fatal(err)
				}
				if st.MaxDecode != tc.maxDec || float64(st.Decoded) > tc.maxDec*float64(st.Raw) {
					t.Fatalf("bound %v: %d bytes decoded for %d restored (bound read back: %v)", tc.maxDec, st.Decoded, st.Raw, st.MaxDecode)
				}
			}
			var out bytes.Buffer
			sum.print(&out)
			t.Logf("%s", out.String())
			checkRestores(t, dir, models)
		})
	}
}

// TestIngestKilled ends a run, its context cancelled and a worker dying,
// at two points: while it commits (after two models) and while it writes
// chunk files (after three, before any commit). Running it again skips
// the models committed, finishes the rest, and makes the store a single
// run makes: the same index and the same chunk files (the first run's
// chunks are the ones the second writes again, content-addressed), so
// nothing is lost or stored twice.
func TestIngestKilled(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	inputs := []string{hub}
	models, err := expand(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	whole := newStore(t)
	if _, err := ingest(context.Background(), config{store: whole, runner: "prism", inputs: inputs}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		hook *func(int) error
		at   int
		left int // models committed by the killed run
	}{{"commit", &commitHook, 2, 2}, {"pack", &packHook, 3, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newStore(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			killed := errors.New("killed")
			packsWritten.Store(0)
			var mu sync.Mutex
			*tc.hook = func(done int) error {
				mu.Lock()
				defer mu.Unlock()
				if done >= tc.at {
					cancel()
					return killed
				}
				return nil
			}
			_, err = ingest(ctx, config{store: dir, runner: "prism", inputs: inputs})
			*tc.hook = nil
			if err == nil {
				t.Fatal("the killed run reported success")
			}
			s, err := store.Open(dir, store.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			names, _ := s.Names()
			s.Close()
			if len(names) != tc.left {
				t.Fatalf("the killed run left %d models, want the %d committed before it died", len(names), tc.left)
			}
			sum, err := ingest(context.Background(), config{store: dir, runner: "prism", inputs: inputs})
			if err != nil {
				t.Fatal(err)
			}
			if len(sum.skipped) != tc.left || sum.counters["models_committed"] != int64(len(models)-tc.left) {
				t.Fatalf("rerun: skipped %v, committed %d of %d", sum.skipped, sum.counters["models_committed"], len(models))
			}
			if a, b := statsJSON(t, whole), statsJSON(t, dir); a != b {
				t.Fatalf("stats differ:\none run:\n%s\nkilled and run again:\n%s", a, b)
			}
			checkRestores(t, dir, models)
			// a third run has nothing to do
			sum, err = ingest(context.Background(), config{store: dir, runner: "prism", inputs: inputs})
			if err != nil || len(sum.skipped) != len(models) {
				t.Fatalf("third run: %v, skipped %d of %d", err, len(sum.skipped), len(models))
			}
		})
	}
}

// TestUsage: the command line's refusals.
func TestUsage(t *testing.T) {
	dir := newStore(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage"},
		{[]string{"add"}, 2, "usage"},
		{[]string{"ingest", "-store", dir}, 2, "at least one FILE"},
		{[]string{"ingest", "-store", dir, "-runner", "flink", "x"}, 1, "s3:// store"},
		{[]string{"ingest", "-store", dir, "-runner", "nope", "x"}, 1, "want prism"},
		{[]string{"ingest", "-store", filepath.Join(dir, "none"), "x"}, 1, "not a store"},
		{[]string{"ingest", "-store", dir, filepath.Join(dir, "missing")}, 1, "no such file"},
	} {
		*flagRunner, *flagStore, *flagBatch = "prism", "", 0
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%q: exit %d, %q; want %d and %q", tc.args, code, errb.String(), tc.code, tc.want)
		}
	}
}

// BenchmarkIngest: the pipeline on Prism over the real models and the hub
// (bytes: the files' bytes).
func BenchmarkIngest(b *testing.B) {
	orig := filepath.Join("..", "..", "..", "shared", "models", "original")
	hub := filepath.Join("..", "..", "..", "shared", "hub", "stories260K")
	for _, p := range []string{orig, hub} {
		if _, err := os.Stat(p); err != nil {
			b.Skipf("%s not present: %v", p, err)
		}
	}
	var size int64
	for _, p := range []string{orig, hub} {
		filepath.WalkDir(p, func(_ string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if st, err := d.Info(); err == nil {
					size += st.Size()
				}
			}
			return nil
		})
	}
	b.SetBytes(size)
	for b.Loop() {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "s")
		if err := store.Init(dir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := ingest(context.Background(), config{store: dir, runner: "prism", inputs: []string{orig, hub}}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestIngestS3: models read from s3:// objects into an s3:// store on a
// real S3 server (SeaweedFS): the same units, kinds and bytes as nzip
// store add of the same files from disk, every file restored byte for
// byte from the bucket.
func TestIngestS3(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	bucket := weedtest.Bucket(t)
	cl, _, _, err := store.S3Client("s3://" + bucket)
	if err != nil {
		t.Fatal(err)
	}
	local, err := expand(context.Background(), []string{hub})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range local {
		rel, _ := filepath.Rel(hub, m.Path)
		if _, err := cl.FPutObject(context.Background(), bucket, "in/"+filepath.ToSlash(rel), m.Path, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	loc := "s3://" + bucket + "/store"
	if err := store.Init(loc); err != nil {
		t.Fatal(err)
	}
	in := []string{"s3://" + bucket + "/in"}
	sum, err := ingest(context.Background(), config{store: loc, runner: "prism", inputs: in})
	if err != nil {
		t.Fatal(err)
	}
	if sum.counters["models_committed"] != int64(len(local)) {
		t.Fatalf("committed %d of %d models", sum.counters["models_committed"], len(local))
	}
	models, err := expand(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	ref := addAll(t, local)
	a, err := store.Open(ref, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := store.Open(loc, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sa, err := a.Stats()
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if sa.Stored != sb.Stored || sa.Raw != sb.Raw || sa.Chunks != sb.Chunks || fmt.Sprint(sa.Units, sa.UnitBytes) != fmt.Sprint(sb.Units, sb.UnitBytes) {
		t.Fatalf("store add: %+v\nnzip-beam from s3: %+v", sa, sb)
	}
	for _, m := range models {
		man, err := b.Model(m.Name)
		if err != nil {
			t.Fatal(err)
		}
		for fi, f := range man.Files {
			want, err := readSpan(m.Path, 0, f.Size)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := b.WriteFile(man, fi, &got); err != nil || !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("%s: restores to other bytes (%v)", m.Name, err)
			}
		}
	}
}

// benchModels are the real models and the hub, for the per-step benchmarks.
func benchModels(b *testing.B) ([]modelRef, int64) {
	orig := filepath.Join("..", "..", "..", "shared", "models", "original")
	hub := filepath.Join("..", "..", "..", "shared", "hub", "stories260K")
	for _, p := range []string{orig, hub} {
		if _, err := os.Stat(p); err != nil {
			b.Skipf("%s not present: %v", p, err)
		}
	}
	ms, err := expand(context.Background(), []string{orig, hub})
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, m := range ms {
		d, err := describe(m)
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range d.files {
			size += f.Entry.Size
		}
	}
	return ms, size
}

// BenchmarkDescribe: the describe step alone (read, SHA-256 of units and
// files, fingerprints, cast hashes) on one goroutine: its rate per core.
func BenchmarkDescribe(b *testing.B) {
	ms, size := benchModels(b)
	b.SetBytes(size)
	for b.Loop() {
		for _, m := range ms {
			if _, err := describe(m); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkCode: the code step alone on one goroutine, every unit coded
// on its own (a delta try adds one more coding of the unit): its rate
// per core.
func BenchmarkCode(b *testing.B) {
	ms, size := benchModels(b)
	var plans []store.Plan
	for _, m := range ms {
		d, _ := describe(m)
		for _, u := range d.units {
			plans = append(plans, store.Plan{Unit: u, Kind: store.KindNzip})
		}
	}
	b.SetBytes(size)
	for b.Loop() {
		for _, p := range plans {
			if _, _, err := codeUnit("", p); err != nil {
				b.Fatal(err)
			}
		}
	}
}
