package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"neuralzip/store"
)

const storeUsage = `usage:
  nzip store init   [-max-decode R] STORE
  nzip store add    [-name NAME] [-compare] [-threads N] [-q] STORE FILE...
  nzip store get    [-o OUT] [-f] [-threads N] STORE NAME
  nzip store ls     [-json] STORE
  nzip store rm     STORE NAME...
  nzip store gc     STORE
  nzip store repack [-threads N] STORE
  nzip store verify [-threads N] STORE
  nzip store stats  [-json] STORE
  nzip store migrate [-threads N] STORE

STORE is a directory made by init, or s3://bucket/prefix on S3-compatible
storage (endpoint and keys from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_REGION). A model's name is its path as given to
add (or -name for one model). add stores its models in batches of up to
256 MiB, each committed whole: a batch is all there or none of it (after
a crash, or when one of its models fails). get restores a model's files
byte for byte. rm drops models, gc removes the chunk files nothing uses
any more and rewrites those that are mostly unused. Order does not
matter: a BF16/F16 export added before its F32 original becomes its cast
when the F32 file is added. repack re-plans a directory store in place
(crash-safe): every 16-bit unit that is the cast of a stored F32 unit
becomes that cast, deltas move to nearer bases where that is smaller,
then gc runs (within the store's decode bound). init makes a version 2
store (units addressed by BLAKE3); -max-decode R bounds the bytes a get
decodes per byte restored (casts decode their F32 unit, deltas their
base): under 3 no casts, under 2 no deltas.
a version 1 store (made by earlier builds: SHA-256) keeps working, and
migrate rewrites it as version 2 in place (crash-safe: the old store is
whole until the new one is complete and switched in: one rename of a
directory store's index, one conditional write of an s3:// store's root).
`

// storeMigrateHelp is what nzip store migrate -h adds to the flags.
const storeMigrateHelp = `
migrate rewrites a version 1 store (units addressed by SHA-256, made by
earlier builds) as version 2 (BLAKE3): every model is restored from the
old store, each unit and file checked, and added to a new index built
beside the old one; then the new index replaces the old one at once and
gc removes the old chunk files. Until then the old store is whole and
usable; a crash leaves the old store or the new one, whole (orphans at
most, which gc removes), and migrate run again completes it.

A directory store is locked while it migrates (writers wait; the switch
is a rename). An s3://bucket/prefix store has no lock: writers may go on
adding to the old store, and the switch is one conditional write of the
index's root (If-Match the ETag read at the start). If a writer changed
the store meanwhile, the switch fails and nothing is lost: migrate brings
the new index up to the store as it is now and tries again (3 tries in
all; then it says so, and a migrate run again starts over). A process that had the old store open fails its next
write, and its reads once it reads the index again, with "migrated ...
open it again": it never mixes the versions (a get running across the
switch may fail when gc removes the old chunk files, never give other
bytes). Old chunk files written in the last 10 minutes, and the objects
of a failed migration, are left for a later gc. gc and add may run
meanwhile: while a migration is in flight they delete nothing.
`

func runStore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runSubcommand(ctx, "store", storeUsage, map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"init": runStoreInit, "add": runStoreAdd, "get": runStoreGet, "ls": runStoreLs,
		"rm": runStoreRm, "gc": runStoreGC, "repack": runStoreRepack, "verify": runStoreVerify, "stats": runStoreStats,
		"migrate": runStoreMigrate,
	}, args, stdout, stderr)
}

// parseMixed parses flags placed before, between or after the arguments
// ("get STORE NAME -o OUT").
func parseMixed(fs *flag.FlagSet, args []string, minArgs, maxArgs int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, flag.ErrHelp
			}
			return nil, errUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if n := len(pos); n < minArgs || (maxArgs >= 0 && n > maxArgs) {
		fmt.Fprintf(fs.Output(), "nzip %s: wrong number of arguments\n", fs.Name())
		fs.Usage()
		return nil, errUsage
	}
	clampThreads(fs)
	return pos, nil
}

func runStoreInit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("store init", "[-max-decode R] STORE", stderr)
	maxDecode := fs.Float64("max-decode", 0, "bytes a get may decode per byte restored, per unit (at least 1; 0: unbounded): fewer casts and deltas, more bytes stored")
	pos, err := parseMixed(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if r := *maxDecode; r != 0 && !(r >= 1) || math.IsInf(r, 0) {
		fmt.Fprintf(stderr, "nzip store init: -max-decode %v: want a number at least 1 (0: unbounded)\n", r)
		return errUsage
	}
	if err := store.InitWith(pos[0], store.InitOptions{MaxDecode: *maxDecode}); err != nil {
		return err
	}
	if *maxDecode > 0 {
		fmt.Fprintf(stdout, "%s: empty store (a get decodes at most %g bytes per byte restored)\n", pos[0], *maxDecode)
		return nil
	}
	fmt.Fprintf(stdout, "%s: empty store\n", pos[0])
	return nil
}

func runStoreAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("store add", "[-name NAME] [-compare] [-threads N] [-q] STORE FILE...", stderr)
	name := fs.String("name", "", "the model's name (one FILE only; default: FILE as given)")
	compare := fs.Bool("compare", false, "also compress each file alone with nzip and record its size (stats compares the store with it)")
	threads := fs.Int("threads", 0, "units coded in parallel (default: all CPUs)")
	quiet := fs.Bool("q", false, "print nothing on success")
	pos, err := parseMixed(fs, args, 2, -1)
	if err != nil {
		return err
	}
	files := pos[1:]
	if *name != "" && len(files) != 1 {
		fmt.Fprintln(stderr, "nzip store add: -name names one model; give one FILE")
		return errUsage
	}
	s, err := store.Open(pos[0], store.Options{Threads: *threads})
	if err != nil {
		return err
	}
	defer s.Close()
	// Models are added in batches (store.Batcher: coded together, one
	// commit, all of a batch or none of it after a crash) of at most
	// store.BatchBytes of files and store.BatchModels models; a model
	// larger than that is added alone (mapped, through AddBatch, where
	// its files map and it fits in half the memory; else store.Add, which
	// holds one tensor at a time).
	b := &store.Batcher{Store: s, Opt: store.AddOptions{Compare: *compare}}
	if !*quiet {
		b.Added = func(m *store.Manifest, st store.AddStats) {
			fmt.Fprintf(stdout, "%s: %s → %s stored (%d units: %d already stored, %d casts, %d deltas, %d coded)",
				shown(m.Name), humanBytes(m.Raw), humanBytes(m.Added), st.Units, st.Dedup, st.Casts, st.Deltas, st.Coded)
			if len(m.Bases) > 0 {
				fmt.Fprintf(stdout, "; bases: %s", shownList(m.Bases))
			}
			fmt.Fprintln(stdout)
		}
	}
	defer b.Discard()
	for _, p := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := filepath.ToSlash(p)
		if *name != "" {
			n = *name
		}
		in, err := openModel(p, stderr)
		if err != nil {
			return err
		}
		ins := make([]store.Input, len(in))
		for i, f := range in {
			ins[i] = store.Input{Name: f.name, R: f.f, Size: f.size, Format: f.format, Segments: f.segs}
		}
		unchanged := func() error {
			for _, f := range in {
				if err := f.unchanged(); err != nil {
					return err
				}
			}
			return nil
		}
		if err := b.Add(n, ins, unchanged, func() { closeInputs(in) }); err != nil {
			return err
		}
	}
	return b.Flush()
}

func runStoreGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("store get", "[-o OUT] [-f] [-threads N] STORE NAME", stderr)
	out := fs.String("o", "", "output file, - for standard output (a directory for a model of several files; default: the file's name here)")
	force := fs.Bool("f", false, "overwrite existing files")
	threads := fs.Int("threads", 0, "units decoded in parallel (default: all CPUs)")
	pos, err := parseMixed(fs, args, 2, 2)
	if err != nil {
		return err
	}
	s, err := store.Open(pos[0], store.Options{Threads: *threads, ReadOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	m, err := s.Model(pos[1])
	if err != nil {
		return err
	}
	if *out == "-" {
		// as decompress -o -: the bytes as they are restored (each unit
		// checked before it is written; a failure mid-way exits 1)
		if len(m.Files) != 1 {
			return fmt.Errorf("%s: a model of %d files cannot go to standard output: give -o a directory", pos[1], len(m.Files))
		}
		bw := bufio.NewWriterSize(stdout, 1<<20)
		if err := s.WriteFile(m, 0, bw); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return bw.Flush()
	}
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Name)
	}
	var dests []string
	dir := *out
	if len(m.Files) == 1 {
		d := *out
		if d == "" {
			d = path.Base(m.Files[0].Name)
		}
		dests = []string{d}
	} else {
		if dir == "" {
			dir = "."
		}
		if err := checkOutputNames(pos[1], dir, names, *force); err != nil {
			return err
		}
		for _, n := range names {
			dests = append(dests, filepath.Join(dir, filepath.FromSlash(n)))
		}
	}
	var outs []*atomicFile
	var made []string
	defer func() {
		for _, o := range outs {
			o.Abort()
		}
	}()
	for fi, d := range dests {
		if len(m.Files) > 1 {
			if err := subdirs(dir, names[fi], &made); err != nil {
				removeMade(made)
				return err
			}
		}
		w, err := createOutput(d, *force, nil, 0o644)
		if err != nil {
			removeMade(made)
			return err
		}
		outs = append(outs, w)
		if err := s.WriteFile(m, fi, w); err != nil {
			removeMade(made)
			return err
		}
		if err := ctx.Err(); err != nil {
			removeMade(made)
			return err
		}
	}
	if err := commitAll(outs); err != nil {
		removeMade(made)
		return err
	}
	return nil
}

func runStoreLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return storeStats(args, stdout, stderr, "ls", true)
}

func runStoreStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return storeStats(args, stdout, stderr, "stats", false)
}

func storeStats(args []string, stdout, stderr io.Writer, cmd string, models bool) error {
	fs := newFlags("store "+cmd, "[-json] STORE", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseMixed(fs, args, 1, 1)
	if err != nil {
		return err
	}
	s, err := store.Open(pos[0], store.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.Stats()
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		if models {
			return enc.Encode(st.Models)
		}
		return enc.Encode(st)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	if models {
		fmt.Fprintln(tw, "raw\tadded\tnzip alone\t\tmodel (bases)")
		for _, m := range st.Models {
			alone := "-"
			if m.Alone > 0 {
				alone = fmt.Sprint(m.Alone)
			}
			// (a name from a store written before names were checked,
			// or by another tool, may hold control characters)
			b := ""
			if len(m.Bases) > 0 {
				b = " (" + shownList(m.Bases) + ")"
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t\t%s\n", m.Raw, m.Added, alone, shown(m.Name)+b)
		}
		return tw.Flush()
	}
	fmt.Fprintf(stdout, "format       version %d (units addressed by %s)\n", st.Version, map[int]string{1: "SHA-256", 2: "BLAKE3"}[st.Version])
	fmt.Fprintf(stdout, "models       %d\n", len(st.Models))
	fmt.Fprintf(stdout, "raw          %d bytes\n", st.Raw)
	fmt.Fprintf(stdout, "stored       %d bytes (%.3f of raw)\n", st.Stored, ratio(st.Stored, st.Raw))
	if st.Alone > 0 {
		fmt.Fprintf(stdout, "nzip alone   %d bytes (the store is %.3f of it)\n", st.Alone, ratio(st.Stored, st.Alone))
	}
	fmt.Fprintf(stdout, "chunk files  %d, %d bytes\n", st.Chunks, st.ChunkBytes)
	bound := "unbounded"
	if st.MaxDecode > 0 {
		bound = fmt.Sprintf("at most %g", st.MaxDecode)
	}
	fmt.Fprintf(stdout, "decoded      %d bytes per get of every model (%.3f per byte restored; %s)\n", st.Decoded, ratio(st.Decoded, st.Raw), bound)
	for _, k := range []string{"raw", "nzip", "delta", "cast"} {
		fmt.Fprintf(stdout, "units %-6s %d (%d original bytes)\n", k, st.Units[k], st.UnitBytes[k])
	}
	return nil
}

func runStoreRm(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("store rm", "STORE NAME...", stderr)
	pos, err := parseMixed(fs, args, 2, -1)
	if err != nil {
		return err
	}
	s, err := store.Open(pos[0], store.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	for _, n := range pos[1:] {
		if err := s.Remove(n); err != nil {
			return err
		}
	}
	return nil
}

func runStoreGC(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("store gc", "STORE", stderr)
	pos, err := parseMixed(fs, args, 1, 1)
	if err != nil {
		return err
	}
	s, err := store.Open(pos[0], store.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.GC()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %d chunk files (%d bytes), %d temporary files; %d bytes in use, %d unused bytes in chunk files still in use\n",
		st.Packs, st.PackBytes, st.Temps, st.LiveBytes, st.DeadBytes)
	if st.Released > 0 {
		fmt.Fprintf(stdout, "removed %d units no model uses any more (old bases of units that became casts)\n", st.Released)
	}
	if st.Repacked > 0 {
		fmt.Fprintf(stdout, "rewrote %d chunk files holding mostly unused bytes, saving %d bytes\n", st.Repacked, st.RepackedBytes)
	}
	if st.Young > 0 {
		fmt.Fprintf(stdout, "kept %d unused chunk files written in the last minutes (an add may be committing them); a later gc removes them\n", st.Young)
	}
	if st.Migrating > 0 {
		fmt.Fprintf(stdout, "kept %d unused chunk files: a migration of the store is in flight (they may be its new ones); a gc after it removes those still unused\n", st.Migrating)
	}
	return nil
}

func runStoreMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("store migrate", "[-threads N] STORE", stderr)
	threads := fs.Int("threads", 0, "units coded in parallel (default: all CPUs)")
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(stderr, storeMigrateHelp)
	}
	pos, err := parseMixed(fs, args, 1, 1)
	if err != nil {
		return err
	}
	st, err := store.Migrate(pos[0], store.Options{Threads: *threads})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "migrated %d models (%s) to version 2: payload %s → %s; removed %d old chunk files\n",
		st.Models, humanBytes(st.Raw), humanBytes(st.Before), humanBytes(st.After), st.GC.Packs)
	return nil
}

func runStoreRepack(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("store repack", "[-threads N] STORE", stderr)
	threads := fs.Int("threads", 0, "units coded in parallel (default: all CPUs)")
	pos, err := parseMixed(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if store.IsS3(pos[0]) {
		return errors.New("store repack: s3:// stores are not repacked (no lock: a reader holding the old index would read payloads that are gone); repack a directory store")
	}
	s, err := store.Open(pos[0], store.Options{Threads: *threads})
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.Repack()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "recast %d units as casts of stored F32 units", st.Recast)
	if st.Declined > 0 {
		fmt.Fprintf(stdout, " (%d left: coding their dependants again would cost more)", st.Declined)
	}
	fmt.Fprintf(stdout, "; coded %d dependants again to keep chains within 3 deltas, %d units against nearer bases; %d records switched\n", st.Moved, st.Nearer, st.Changed)
	pct := 0.0
	if st.Before > 0 {
		pct = 100 * float64(st.After-st.Before) / float64(st.Before)
	}
	fmt.Fprintf(stdout, "payload %d -> %d bytes (%+.2f %%)\n", st.Before, st.After, pct)
	if st.Restored > 0 {
		fmt.Fprintf(stdout, "bytes decoded per byte restored (a get of every model): %.2f -> %.2f\n",
			float64(st.DecodedBefore)/float64(st.Restored), float64(st.DecodedAfter)/float64(st.Restored))
	}
	g := st.GC
	fmt.Fprintf(stdout, "gc: removed %d units no model uses, %d chunk files (%d bytes); rewrote %d chunk files, saving %d bytes; %d unused bytes in chunk files still in use\n",
		g.Released, g.Packs, g.PackBytes, g.Repacked, g.RepackedBytes, g.DeadBytes)
	return nil
}

func runStoreVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("store verify", "[-threads N] STORE", stderr)
	threads := fs.Int("threads", 0, "units decoded in parallel (default: all CPUs)")
	pos, err := parseMixed(fs, args, 1, 1)
	if err != nil {
		return err
	}
	s, err := store.Open(pos[0], store.Options{Threads: *threads, ReadOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	bad, err := s.Verify()
	for _, b := range bad {
		fmt.Fprintf(stderr, "nzip: %s\n", termSafe(b.Error()))
	}
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: %d damaged models", pos[0], len(bad))
	}
	names, _ := s.Names()
	fmt.Fprintf(stdout, "%s: %d models restore byte for byte\n", pos[0], len(names))
	return nil
}

// shownList is names as text output shows them (shown), comma-separated.
func shownList(names []string) string {
	var s []string
	for _, n := range names {
		s = append(s, shown(n))
	}
	return strings.Join(s, ", ")
}
