// Command nzip compresses neural-network checkpoints losslessly.
//
//	nzip compress   [-o OUT] [-f] [-threads N] [-chunk N] [-level N] [-setup S.nzsetup [-setup-external] [-setup-threshold X]] [-ref REF] [-best] [-no-sparse] [-q] IN
//	nzip decompress [-o OUT] [-f] [-threads N] [-tensor NAME] [-setup S.nzsetup] [-ref REF] [-lossy] [-q] IN.nzip
//	nzip verify     [-threads N] [-setup S.nzsetup] [-ref REF] IN.nzip
//	nzip inspect    [-json] [-programs] [-setup S.nzsetup] [-ref REF] FILE
//	nzip bench      [-json] [-codecs LIST] [-threads N] [-runs N] [-chunk N] [-setup S.nzsetup [-setup-external] [-setup-threshold X]] FILE...
//	nzip setup build   -o OUT.nzsetup [-f] [-k K] [-max-k N] [-min-gain X] [-cluster M] [-chunk N] [-sample F] [-pair-bias X] [-pairs=false] [-plane-min-gain X] [-q] FILE...
//	nzip setup show    [-json] FILE.nzsetup
//	nzip setup compare [-json] -setups S1,S2,... [-threads N] [-runs N] [-setup-external] FILE...
//	nzip trajectory pack    -o RUN.nztraj [-f] [-keyframe K] [-plan=false] [-ref-mode prev|key] [-threads N] [-chunk N] [-best] [-q] STEP...
//	nzip trajectory append  [-threads N] [-best] [-q] RUN.nztraj STEP...
//	nzip trajectory ls      [-json] RUN.nztraj
//	nzip trajectory extract [-o OUT] [-f] [-threads N] [-q] RUN.nztraj NAME|INDEX
//	nzip trajectory extract -all [-d DIR] [-f] [-threads N] [-q] RUN.nztraj
//	nzip trajectory verify  [-threads N] [-q] RUN.nztraj
//	nzip trajectory repack  -o OUT.nztraj [-f] [-keyframe K] [-threads N] [-best] [-q] RUN.nztraj
//	nzip generate   [-n N] [-temp T] [-topp P] [-seed S] [-tokenizer FILE] [-config FILE] [-setup S.nzsetup] [-prefetch] [-json] MODEL PROMPT
//	nzip store      init|add|get|ls|rm|gc|repack|verify|stats STORE ...
//	nzip serve      [-addr 127.0.0.1:8080] [-token-file F] [-threads N] [-max-decodes N] [-cache-bytes N] [-cache-dir D] [ORG/NAME=]SOURCE... [ORG=]STORE...
//	nzip mount      [-allow-other] [-cache-bytes N] [-threads N] SOURCE MOUNTPOINT   (Linux, FUSE)
//	nzip rd         [-json] [-methods LIST] [-bits LIST] [-per-tensor] [-tokens N] [-config FILE] [-tokenizer FILE] MODEL
//	nzip quantize   -method M [-bits B] -o OUT [-f] [-q] MODEL
//
// quantize writes a LOSSY archive (package lossy; its own magic and a
// header that says so): generate runs it, inspect shows its measured
// error, verify fails on it (not bit-exact), and decompress writes its
// dequantized model only with -lossy. Nothing else writes anything lossy.
//
// compress, decompress and verify take -ref REF: the archive is coded
// against (and decoded with) the reference model REF.
//
// Exit status: 0 success, 1 failure (message on stderr starting with
// "nzip:"), 2 usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `nzip: lossless compression of neural-network checkpoints

usage:
  nzip compress   [-o OUT] [-f] [-threads N] [-chunk N] [-level N]
                  [-setup S.nzsetup [-setup-external] [-setup-threshold X]] [-ref REF] [-best] [-no-sparse] [-q] IN
  nzip decompress [-o OUT] [-f] [-threads N] [-tensor NAME] [-setup S.nzsetup] [-ref REF] [-lossy] [-q] IN.nzip
  nzip verify     [-threads N] [-setup S.nzsetup] [-ref REF] IN.nzip
  nzip inspect    [-json] [-programs] [-setup S.nzsetup] [-ref REF] FILE
  nzip bench      [-json] [-codecs LIST] [-threads N] [-runs N] [-chunk N]
                  [-setup S.nzsetup [-setup-external] [-setup-threshold X]] FILE...
  nzip setup build   -o OUT.nzsetup [-f] [-k K] [-max-k N] [-min-gain X] [-cluster M] [-chunk N] [-sample F]
                     [-pair-bias X] [-pairs=false] [-plane-min-gain X] [-q] FILE...
  nzip setup show    [-json] FILE.nzsetup
  nzip setup compare [-json] -setups S1,S2,... [-threads N] [-runs N] [-setup-external] FILE...
  nzip trajectory pack    -o RUN.nztraj [-f] [-keyframe K] [-plan=false] [-ref-mode prev|key] [-threads N] [-chunk N] [-best] [-q] STEP...
  nzip trajectory append  [-threads N] [-best] [-q] RUN.nztraj STEP...
  nzip trajectory ls      [-json] RUN.nztraj
  nzip trajectory extract [-o OUT] [-f] [-threads N] [-q] RUN.nztraj NAME|INDEX
  nzip trajectory extract -all [-d DIR] [-f] [-threads N] [-q] RUN.nztraj
  nzip trajectory verify  [-threads N] [-q] RUN.nztraj
  nzip trajectory repack  -o OUT.nztraj [-f] [-keyframe K] [-threads N] [-best] [-q] RUN.nztraj
  nzip generate   [-n N] [-temp T] [-topp P] [-seed S] [-tokenizer FILE] [-config FILE] [-setup S.nzsetup]
                  [-prefetch] [-json] MODEL PROMPT
  nzip store      init|add|get|ls|rm|gc|repack|verify|stats STORE ...   (a hub store: "nzip store -h")
  nzip serve      [-addr 127.0.0.1:8080] [-token-file F] [-threads N] [-max-decodes N] [-cache-bytes N] [-cache-dir D]
                  [ORG/NAME=]SOURCE... [ORG=]STORE... (archives, stores, directories over HTTP, with the Hugging Face download API;
                  a store stays writable by nzip store, and models added or removed show without a restart)
  nzip mount      [-allow-other] [-cache-bytes N] [-threads N] SOURCE MOUNTPOINT
                  (an archive, a store or a directory as a read-only file system; Linux, FUSE; Ctrl-C unmounts;
                  a store stays writable by nzip store, and models added or removed show in its tree)
  nzip rd         [-json] [-methods LIST] [-bits LIST] [-per-tensor] [-tokens N] MODEL
                  (the lossy lab: bits per parameter and error of NF4, int8/int4, FP8, E8 lattice, low rank, Kronecker sums; never in archives)
  nzip quantize   -method M [-bits B] -o OUT [-f] [-q] MODEL
                  (writes a LOSSY archive, never an .nzip: nf4, int8, int4, fp8, fp8row, fp8e5, fp8e5row, fp8h, fp8hd, e8; generate runs it,
                  decompress -lossy writes its dequantized model)

Run "nzip COMMAND -h" (or "nzip setup SUBCOMMAND -h") for the flags of a command.
`

// errUsage marks a usage error (exit status 2); the message has been printed.
var errUsage = errors.New("usage")

type command struct {
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{
	"compress":   {runCompress},
	"decompress": {runDecompress},
	"verify":     {runVerify},
	"inspect":    {runInspect},
	"bench":      {runBench},
	"setup":      {runSetup},
	"trajectory": {runTrajectory},
	"generate":   {runGenerate},
	"store":      {runStore},
	"serve":      {runServe},
	"rd":         {runRD},
	"quantize":   {runQuantize},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// the first signal cancels (the command removes its temporary files
	// and exits); a second one ends the process at once
	go func() { <-ctx.Done(); stop() }()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "nzip: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	err := c.run(ctx, args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, flag.ErrHelp):
		return 0
	}
	fmt.Fprintf(stderr, "nzip: %s\n", termSafe(err.Error()))
	return 1
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: nzip %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags; wrong flags and a wrong number of arguments are usage
// errors.
func parse(fs *flag.FlagSet, args []string, minArgs, maxArgs int) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp
		}
		return errUsage
	}
	if n := fs.NArg(); n < minArgs || (maxArgs >= 0 && n > maxArgs) {
		fmt.Fprintf(fs.Output(), "nzip %s: wrong number of arguments\n", fs.Name())
		fs.Usage()
		return errUsage
	}
	clampThreads(fs)
	return nil
}
