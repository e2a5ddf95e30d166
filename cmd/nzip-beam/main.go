// Command nzip-beam ingests a corpus of models into a NeuralZip store
// (nzip store) as an Apache Beam pipeline: on the Prism runner in this
// process by default, unchanged on Flink, Spark or Google Dataflow.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	// the cluster runners -runner names
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/flink"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/spark"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"

	"neuralzip/store"
)

const usage = `usage:
  nzip-beam ingest -store STORE [-runner prism|flink|spark|dataflow|universal] [-batch N] [-q] [runner flags] FILE|PREFIX...

Ingests model files into a store made by nzip store init (a directory, or
s3://bucket/prefix) as an Apache Beam pipeline: read and segment the files,
fingerprint their tensors, group them by hash (deduplication) and by
family, plan each family's bases, code the units (casts, deltas, alone),
write one chunk file per model and commit the models in order. The store is
the one nzip store add of the same files in the same order makes.

A FILE is one model, named by its path as given. A PREFIX (a directory, or
s3://bucket/prefix) holds one model per file under it, in lexical order
(symbolic links are not followed), except the files another model there
names as its own (shards, TF.js weights, ONNX external data). Models already in the store are skipped, so
an interrupted ingest is finished by running it again.

The default runner, prism, runs the pipeline in this process. Cluster
runners take Beam's own flags after ingest (for example --endpoint for a
Flink or Spark job server, --project, --region and --temp_location for
Dataflow) and need an s3:// store (and s3:// inputs) that every worker
reaches; docs/beam.md shows the commands.
`

// warnings receives the loaders' warnings (files stored as opaque bytes).
var warnings io.Writer = os.Stderr

var (
	flagStore  = flag.String("store", "", "the store: a directory made by nzip store init, or s3://bucket/prefix")
	flagRunner = flag.String("runner", "prism", "Beam runner: prism (in this process), flink, spark, dataflow or universal")
	flagBatch  = flag.Int("batch", 0, "models committed per index write (default: 1 for a directory store, 64 for s3://)")
	flagQuiet  = flag.Bool("q", false, "print nothing on success")
)

func main() {
	flag.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	flag.Parse()
	beam.Init() // a worker started by a cluster runner runs here and exits
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command line: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "ingest" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	flag.CommandLine.SetOutput(stderr)
	if err := flag.CommandLine.Parse(args[1:]); err != nil {
		return 2
	}
	inputs := flag.Args()
	if *flagStore == "" || len(inputs) == 0 {
		fmt.Fprintln(stderr, "nzip-beam ingest: give -store STORE and at least one FILE or PREFIX")
		fmt.Fprint(stderr, usage)
		return 2
	}
	sum, err := ingest(ctx, config{store: *flagStore, runner: *flagRunner, batch: *flagBatch, inputs: inputs})
	if err != nil {
		fmt.Fprintf(stderr, "nzip-beam: %v\n", err)
		return 1
	}
	if !*flagQuiet {
		sum.print(stdout)
	}
	return 0
}

type config struct {
	store  string
	runner string
	batch  int
	inputs []string
}

// summary is what an ingest did, from the pipeline's metrics.
type summary struct {
	store    string
	runner   string
	skipped  []string // models already stored before the run
	counters map[string]int64
	wall     time.Duration
}

func (s summary) print(w io.Writer) {
	c := s.counters
	if len(s.skipped) > 0 {
		fmt.Fprintf(w, "%s: %d models already stored, skipped (%s", s.store, len(s.skipped), s.skipped[0])
		if len(s.skipped) > 1 {
			fmt.Fprintf(w, " … %s", s.skipped[len(s.skipped)-1])
		}
		fmt.Fprintln(w, ")")
	}
	if s.wall == 0 {
		return // nothing else to do
	}
	fmt.Fprintf(w, "%s: %d models committed (%d files, %s) in %.1f s on %s (%.1f MB/s)\n", s.store, c["models_committed"], c["files"],
		human(c["bytes"]), s.wall.Seconds(), s.runner, float64(c["bytes"])/1e6/max(s.wall.Seconds(), 1e-9))
	fmt.Fprintf(w, "  units %d: %d deduplicated (%s), %d casts (%s), %d deltas, %d coded alone; %d families planned\n",
		c["units"], c["units_deduplicated"], human(c["bytes_deduplicated"]), c["units_cast"], human(c["bytes_cast"]), c["units_delta"], c["units_coded"], c["families"])
	fmt.Fprintf(w, "  added %s, saved %s (%.3f of the files' bytes stored)\n", human(c["bytes_added"]), human(c["bytes"]-c["bytes_added"]),
		float64(c["bytes_added"])/float64(max(c["bytes"], 1)))
	if n := c["models_already_stored"]; n > 0 {
		fmt.Fprintf(w, "  %d models were committed by an earlier try of this run\n", n)
	}
}

func human(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// ingest runs the pipeline.
func ingest(ctx context.Context, cfg config) (summary, error) {
	sum := summary{store: cfg.store, runner: cfg.runner, counters: map[string]int64{}}
	start := time.Now()
	switch cfg.runner {
	case "prism", "flink", "spark", "dataflow", "universal":
	default:
		return sum, fmt.Errorf("-runner %q: want prism, flink, spark, dataflow or universal", cfg.runner)
	}
	if !store.IsS3(cfg.store) && cfg.runner != "prism" {
		return sum, fmt.Errorf("-store %s: a directory store is one machine's; a cluster runner needs an s3:// store its workers reach", cfg.store)
	}
	if cfg.batch <= 0 {
		cfg.batch = 1
		if store.IsS3(cfg.store) {
			cfg.batch = 64
		}
	}
	s, err := store.Open(cfg.store, store.Options{Threads: 1})
	if err != nil {
		return sum, err
	}
	defer s.Close()
	if s.Version() != store.Version2 {
		// units are described (addressed) as a version 2 store addresses them
		return sum, fmt.Errorf("%s: a version %d store: nzip-beam writes version 2 stores (nzip store init makes one)", cfg.store, s.Version())
	}
	defer holdStore(cfg.store, s)()
	models, err := expand(ctx, cfg.inputs)
	if err != nil {
		return sum, err
	}
	have, err := s.Names()
	if err != nil {
		return sum, err
	}
	stored := map[string]bool{}
	for _, n := range have {
		stored[n] = true
	}
	var todo []modelRef
	for _, m := range models {
		if stored[m.Name] {
			sum.skipped = append(sum.skipped, m.Name)
			continue
		}
		m.Seq = len(todo)
		todo = append(todo, m)
	}
	if len(todo) == 0 {
		return sum, nil
	}
	p := build(cfg.store, todo, cfg.batch)
	var res beam.PipelineResult
	if cfg.runner == "prism" {
		res, err = prism.Execute(ctx, p)
	} else {
		res, err = beam.Run(ctx, cfg.runner, p)
	}
	sum.wall = time.Since(start)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return sum, fmt.Errorf("ingest: %w (models committed before it stopped stay; run it again to finish)", err)
	}
	if res != nil {
		for _, c := range res.Metrics().AllMetrics().Counters() {
			if c.Namespace() == "nzip" {
				sum.counters[c.Name()] += c.Result()
			}
		}
	}
	return sum, nil
}
