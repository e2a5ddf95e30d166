package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"neuralzip/codec"
	"neuralzip/trajectory"
)

const trajectoryUsage = `usage:
  nzip trajectory pack    -o RUN.nztraj [-f] [-keyframe K] [-plan=false] [-ref-mode prev|key] [-threads N] [-chunk N] [-best] [-q] STEP...
  nzip trajectory append  [-threads N] [-best] [-q] RUN.nztraj STEP...
  nzip trajectory ls      [-json] RUN.nztraj
  nzip trajectory extract [-o OUT] [-f] [-threads N] [-q] RUN.nztraj NAME|INDEX
  nzip trajectory extract -all [-d DIR] [-f] [-threads N] [-q] RUN.nztraj
  nzip trajectory verify  [-threads N] [-q] RUN.nztraj
  nzip trajectory repack  -o OUT.nztraj [-f] [-keyframe K] [-threads N] [-best] [-q] RUN.nztraj

A trajectory archive holds the checkpoints of a training run as frames:
keyframes are coded on their own, the others against the previous frame
(-ref-mode prev, the default) or their keyframe (key); no step decodes
through more than K frames. pack places the keyframes where they cost
least (it measures every step first, steps above 64 MB on a sample;
-plan=false: every K-th frame); append makes a keyframe when the chain
would grow beyond K; repack rewrites a run (e.g. one built by appends)
with the keyframes pack would place; verify checks every frame.
STEP arguments are taken in the order given; a quoted glob ('step_*') is
expanded and sorted naturally (step_2 before step_10). Appending never
rewrites the archive: an interrupted append leaves it as it was.
A STEP is a checkpoint file, a *.safetensors.index.json (the step is the
index and its shards, one frame) or a directory holding one such index
(e.g. checkpoint-500/) or one checkpoint file. A sharded step is named
after its directory, any other after its file; names must differ.
extract writes a sharded step's files into the directory -o DIR (default:
the step's name in the current directory); extract -all into DIR/NAME/.
extract takes a step's NAME as ls lists it, its INDEX, or the NAME without
its extensions when one step has it (step_000500).
Archives of format version 1 (single-file steps only) take sharded steps
after a repack.
`

// runTrajectory dispatches the trajectory subcommands.
func runTrajectory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runSubcommand(ctx, "trajectory", trajectoryUsage, map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"pack": runTrajPack, "append": runTrajAppend, "ls": runTrajLs, "extract": runTrajExtract, "repack": runTrajRepack, "verify": runTrajVerify,
	}, args, stdout, stderr)
}

// expandSteps expands quoted globs (natural order) and keeps the order of
// the other arguments.
func expandSteps(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if _, err := os.Stat(a); err == nil || !strings.ContainsAny(a, "*?[") {
			out = append(out, a)
			continue
		}
		m, err := filepath.Glob(a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no file matches", a)
		}
		sort.SliceStable(m, func(i, j int) bool { return naturalLess(m[i], m[j]) })
		out = append(out, m...)
	}
	return out, nil
}

// naturalLess orders strings with digit runs compared by value.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			x, y := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(x) != len(y) {
				return len(x) < len(y)
			}
			if x != y {
				return x < y
			}
			if da != db {
				return da < db
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digitRun(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// trajStep is one opened step of a trajectory: a checkpoint of one file or
// several (a sharded safetensors index and its shards).
type trajStep struct {
	path, name string
	files      []inputFile
}

func (s trajStep) inputs() []codec.Input {
	ins := make([]codec.Input, len(s.files))
	for k, f := range s.files {
		ins[k] = f.input()
	}
	return ins
}

func (s trajStep) size() int64 {
	var n int64
	for _, f := range s.files {
		n += f.size
	}
	return n
}

// stepModel resolves a STEP argument: a checkpoint file, a
// *.safetensors.index.json (the step is it and its shards), or a directory
// holding one such index (else one *.safetensors file, else one file). It
// returns the file to open and the step's name: the directory's base name
// for a sharded step, the file's base name otherwise.
func stepModel(path string) (model, name string, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", "", err
	}
	model = path
	if st.IsDir() {
		ents, err := os.ReadDir(path)
		if err != nil {
			return "", "", err
		}
		var index, shards, files []string
		for _, e := range ents {
			n := e.Name()
			if strings.HasPrefix(n, ".") || !e.Type().IsRegular() {
				continue
			}
			files = append(files, n)
			switch {
			case strings.HasSuffix(n, ".safetensors.index.json"):
				index = append(index, n)
			case strings.HasSuffix(n, ".safetensors"):
				shards = append(shards, n)
			}
		}
		pick := files
		if len(index) > 0 {
			pick = index
		} else if len(shards) > 0 {
			pick = shards
		}
		if len(pick) != 1 {
			return "", "", fmt.Errorf("%s: a step directory must hold one *.safetensors.index.json (or one checkpoint file); found %s; name the file instead", path, strings.Join(pick, ", "))
		}
		model = filepath.Join(path, pick[0])
	} else if !st.Mode().IsRegular() {
		return "", "", notRegular(path, st.Mode())
	}
	if !strings.HasSuffix(model, ".safetensors.index.json") {
		return model, filepath.Base(model), nil
	}
	abs, err := filepath.Abs(filepath.Dir(model))
	if err != nil {
		return "", "", err
	}
	return model, filepath.Base(abs), nil
}

// stepNames resolves the steps' names and checks that they differ from
// each other and from the frames already in the archive (a nil a: none).
func stepNames(paths []string, a *trajectory.Archive) error {
	seen := map[string]string{}
	if a != nil {
		for i, fr := range a.Frames {
			seen[fr.Name] = fmt.Sprintf("frame %d of the archive", i)
		}
	}
	for _, p := range paths {
		_, name, err := stepModel(p)
		if err != nil {
			return err
		}
		if prev, ok := seen[name]; ok {
			return fmt.Errorf("%s: step name %q is already taken by %s; steps must have distinct names", p, name, prev)
		}
		seen[name] = p
	}
	return nil
}

// openStep opens one step (see stepModel) for a trajectory frame.
func openStep(path string, stderr io.Writer) (trajStep, error) {
	model, name, err := stepModel(path)
	if err != nil {
		return trajStep{}, err
	}
	files, err := openModel(model, stderr)
	if err != nil {
		return trajStep{}, err
	}
	if len(files) == 1 && !strings.HasSuffix(model, ".safetensors.index.json") {
		name = files[0].name
	}
	return trajStep{path: path, name: name, files: files}, nil
}

func (f inputFile) input() codec.Input {
	return codec.Input{Name: f.name, R: f.f, Size: f.size, Format: f.format, Segments: f.segs}
}

// appendSteps appends every step to w through add (w.AppendFiles, or
// the step function of a Packer, which places the keyframes), keeping the
// files open while they may serve as references.
//
// Every file the frame being written reads (its step's files, the files of
// the step before that serve as its reference, and watch) must be as it
// was when opened until the frame is committed (size and modification
// time): otherwise the frame is cut off again with an error, since it
// would decode to neither the old nor the new bytes. read, when not nil,
// collects the paths of the files read.
func appendSteps(ctx context.Context, w *trajectory.Writer, paths []string, add trajectory.StepFunc, watch []inputFile, read *[]string, quiet bool, stderr io.Writer) error {
	var open []inputFile
	defer func() { closeInputs(open) }()
	w.BeforeCommit = func() error {
		for _, f := range append(open[:len(open):len(open)], watch...) {
			if err := f.unchanged(); err != nil {
				return err
			}
		}
		return nil
	}
	defer func() { w.BeforeCommit = nil }()
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		st, err := openStep(p, stderr)
		if err != nil {
			return err
		}
		open = append(open, st.files...)
		if read != nil {
			for _, f := range st.files {
				*read = append(*read, f.path)
			}
		}
		start := time.Now()
		fr, err := add(st.name, st.inputs())
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if !quiet {
			how := "keyframe"
			if fr.Ref >= 0 {
				how = fmt.Sprintf("against frame %d", fr.Ref)
			}
			of := ""
			if len(fr.Files) > 1 {
				of = fmt.Sprintf(" (step %s, %d files)", shown(fr.Name), len(fr.Files))
			}
			fmt.Fprintf(stderr, "%s%s: %s -> %s (%.3f of raw, %s) in %.2fs\n", shown(p), of, humanBytes(fr.Size), humanBytes(fr.Length),
				float64(fr.Length)/float64(max(fr.Size, 1)), how, time.Since(start).Seconds())
		}
		// files that can no longer be a reference are closed
		keep := open[:0]
		for _, f := range open {
			if w.Retains(f.f) {
				keep = append(keep, f)
			} else {
				f.f.Close()
			}
		}
		open = keep
	}
	return nil
}

// keyframeList lists the indexes of the keyframes, "0, 1, 11".
func keyframeList(keys []bool) string {
	var at []string
	for i, key := range keys {
		if key {
			at = append(at, strconv.Itoa(i))
		}
	}
	return strings.Join(at, ", ")
}

// measureSteps is a Packer's measuring pass: every step (or a sample of
// a large one) coded on its own and against the step before (measure),
// writing nothing. Loader warnings come once, from the writing pass.
func measureSteps(ctx context.Context, paths []string, measure trajectory.StepFunc, p *trajectory.Planner, quiet bool, stderr io.Writer) error {
	var prev trajStep
	defer func() { closeInputs(prev.files) }()
	for _, path := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		in, err := openStep(path, io.Discard)
		if err != nil {
			return err
		}
		_, err = measure(in.name, in.inputs())
		closeInputs(prev.files)
		prev = in
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if i := len(p.Independent) - 1; !quiet && i > 0 {
			ind, cond := p.Independent[i], p.Conditioned[i]
			of := ""
			if p.Sampled[i] {
				of = " (a sample of it)"
			}
			fmt.Fprintf(stderr, "plan: %s%s: %s on its own, %s against the step before (saves %.1f %%)\n", shown(path), of, humanBytes(ind), humanBytes(cond), 100*float64(ind-cond)/float64(max(ind, 1)))
		}
	}
	return nil
}

func runTrajPack(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("trajectory pack", "-o RUN.nztraj [-f] [-keyframe K] [-plan=false] [-ref-mode prev|key] [-threads N] [-chunk N] [-best] [-q] STEP...", stderr)
	out := fs.String("o", "", "output trajectory archive (required)")
	force := fs.Bool("f", false, "overwrite OUT if it exists")
	k := fs.Int("keyframe", trajectory.DefaultK, "keyframe interval: no step decodes through more than K frames (1: every frame on its own)")
	plan := fs.Bool("plan", true, "with more than K steps and -ref-mode prev, measure every step first and place the keyframes where they cost least; false: every K-th frame")
	mode := fs.String("ref-mode", "prev", "code frames against the previous frame (prev) or their keyframe (key)")
	threads := fs.Int("threads", 0, "blocks coded in parallel (default: all CPUs); the archive is the same for any value")
	chunk := fs.Int("chunk", 0, fmt.Sprintf("float values per block, %d..%d (default %d)", codec.MinChunkValues, codec.MaxChunkValues, codec.DefaultChunkValues))
	best := fs.Bool("best", false, "the smallest archive: also try range-coded difference blocks (about 2 % smaller frames; they decode about 30× slower, so extract takes that much longer)")
	quiet := fs.Bool("q", false, "print nothing on success")
	if err := parse(fs, args, 1, -1); err != nil {
		return err
	}
	m := trajectory.RefPrevious
	switch *mode {
	case "prev":
	case "key":
		m = trajectory.RefKeyframe
	default:
		fmt.Fprintf(stderr, "nzip trajectory pack: -ref-mode %q: want prev or key\n", *mode)
		return errUsage
	}
	if *out == "" || *k < 1 || *threads < 0 || (*chunk != 0 && (*chunk < codec.MinChunkValues || *chunk > codec.MaxChunkValues)) {
		fmt.Fprintln(stderr, "nzip trajectory pack: needs -o; -keyframe ≥ 1, -threads and -chunk in range")
		fs.Usage()
		return errUsage
	}
	paths, err := expandSteps(fs.Args())
	if err != nil {
		return err
	}
	if err := stepNames(paths, nil); err != nil {
		return err
	}
	inputs := slices.Clone(paths)
	for _, p := range paths {
		if model, _, err := stepModel(p); err == nil {
			inputs = append(inputs, model) // a step directory's checkpoint
		}
	}
	w, err := createOutput(*out, *force, inputs, 0o644)
	if err != nil {
		return err
	}
	defer w.Abort()
	tw, err := trajectory.Create(w.File, *k, m)
	if err != nil {
		return err
	}
	start := time.Now()
	opt := codec.EncodeOptions{Threads: *threads, ChunkValues: *chunk, Best: *best}
	pk := trajectory.Packer{Options: opt, Plan: *plan}
	var read []string
	err = pk.Pack(ctx, tw, len(paths), func(pass trajectory.Pass, fn trajectory.StepFunc) error {
		if pass == trajectory.PassMeasure {
			return measureSteps(ctx, paths, fn, &pk.Planner, *quiet, stderr)
		}
		if pk.Keys != nil && !*quiet {
			fmt.Fprintf(stderr, "planned keyframes (frames %s) in %.2fs\n", keyframeList(pk.Keys), time.Since(start).Seconds())
		}
		return appendSteps(ctx, tw, paths, fn, nil, &read, *quiet, stderr)
	})
	if err != nil {
		return err
	}
	w.inputs = append(w.inputs, read...) // a shard of a step is no output either
	if err := w.Commit(); err != nil {
		return err
	}
	if !*quiet {
		a := tw.Archive()
		var raw int64
		for _, f := range a.Frames {
			raw += f.Size
		}
		fmt.Fprintf(stderr, "%s: %d frames, %s -> %s (%.3f of raw) in %.2fs\n", *out, len(a.Frames), humanBytes(raw), humanBytes(a.End),
			float64(a.End)/float64(max(raw, 1)), time.Since(start).Seconds())
	}
	return nil
}

func runTrajAppend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("trajectory append", "[-threads N] [-best] [-drop-damaged-tail] [-q] RUN.nztraj STEP...", stderr)
	threads := fs.Int("threads", 0, "blocks coded in parallel (default: all CPUs)")
	best := fs.Bool("best", false, "the smallest archive: also try range-coded difference blocks (about 2 % smaller frames; they decode about 30× slower, so extract takes that much longer)")
	dropTail := fs.Bool("drop-damaged-tail", false, "when the archive ends in a damaged index (not an interrupted append), cut it off with the frames it held and append after the last valid index")
	quiet := fs.Bool("q", false, "print nothing on success")
	if err := parse(fs, args, 2, -1); err != nil {
		return err
	}
	if *threads < 0 {
		fmt.Fprintln(stderr, "nzip trajectory append: -threads must be ≥ 0")
		fs.Usage()
		return errUsage
	}
	path := fs.Arg(0)
	paths, err := expandSteps(fs.Args()[1:])
	if err != nil {
		return err
	}
	f, _, err := openRegular(path, os.O_RDWR)
	if err != nil {
		return err
	}
	defer f.Close()
	// one append at a time: a second would write over the first's frame
	if err := lockFile(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := notSameFile(st, paths); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	w, err := trajectory.OpenWriter(f, st.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := stepNames(paths, w.Archive()); err != nil {
		return err
	}
	if a := w.Archive(); a.Tail > 0 {
		switch {
		case a.TailTrailer && !*dropTail:
			return fmt.Errorf("%s: %w", path, damagedTail(a))
		case a.TailTrailer:
			fmt.Fprintf(stderr, "nzip: warning: %s: %v; cut off (-drop-damaged-tail)\n", path, damagedTail(a))
		case !*quiet:
			fmt.Fprintf(stderr, "nzip: warning: %s: %d bytes of an interrupted append after the last valid index are cut off\n", path, a.Tail)
		}
	}
	// the file the next step is coded against, if it is still on disk
	// beside a new step or the archive: hashing it is cheaper than
	// decoding its chain of frames
	var watch []inputFile
	if ref, ok := provideReference(w, path, paths, *quiet, stderr); ok {
		defer ref.f.Close()
		watch = append(watch, ref)
	}
	opt := codec.EncodeOptions{Threads: *threads, Best: *best}
	add := func(name string, ins []codec.Input) (trajectory.Frame, error) {
		return w.AppendFiles(ctx, name, ins, opt)
	}
	if err := appendSteps(ctx, w, paths, add, watch, nil, *quiet, stderr); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// damagedTail describes the bytes after the last valid index of an archive
// that end like a whole append (a trailer's magic): a damaged index, with
// the frames only it listed.
func damagedTail(a *trajectory.Archive) error {
	return fmt.Errorf("%w: %d bytes after the last valid index (frame %d) end like a complete append: the index that follows is damaged, and the frames it listed cannot be read", trajectory.ErrCorrupt, a.Tail, len(a.Frames)-1)
}

// notSameFile refuses steps that are the archive st itself.
func notSameFile(st os.FileInfo, paths []string) error {
	for _, p := range paths {
		if pst, err := os.Stat(p); err == nil && os.SameFile(st, pst) {
			return fmt.Errorf("%s is the archive itself", p)
		}
	}
	return nil
}

// provideReference looks for the original of the frame the next append is
// coded against (by its name, beside the steps and the archive) and gives
// it to w when its SHA-256 matches; the caller closes it.
func provideReference(w *trajectory.Writer, archive string, steps []string, quiet bool, stderr io.Writer) (inputFile, bool) {
	a := w.Archive()
	j := a.RefFor(len(a.Frames))
	if j < 0 || len(a.Frames[j].Files) != 1 {
		return inputFile{}, false // only single-file steps are provided
	}
	name := a.Frames[j].Files[0].Name
	if safeName(name) != nil || strings.ContainsAny(name, `/\`) {
		return inputFile{}, false
	}
	seen := map[string]bool{}
	for _, p := range append(steps[:1:1], archive) {
		c := filepath.Join(filepath.Dir(p), name)
		if seen[c] {
			continue
		}
		seen[c] = true
		if st, err := os.Stat(c); err != nil || !st.Mode().IsRegular() || st.Size() != a.Frames[j].Size {
			continue
		}
		files, err := openModel(c, io.Discard)
		if err != nil {
			continue
		}
		if len(files) != 1 {
			closeInputs(files)
			continue
		}
		in := files[0]
		if ok, err := w.Provide(j, in.input()); err == nil && ok {
			if !quiet {
				fmt.Fprintf(stderr, "%s: reference frame %d read from %s (SHA-256 matches) instead of decoded\n", archive, j, c)
			}
			return in, true
		}
		in.f.Close()
	}
	return inputFile{}, false
}

// openTraj opens a trajectory archive for reading. An nzip archive given
// instead gets an error that says which commands read it.
func openTraj(path string) (*trajectory.Archive, *os.File, error) {
	a, f, err := openWith(path, trajectory.Open)
	if errors.Is(err, trajectory.ErrNotTrajectory) && startsWith(path, codec.Magic[:]) {
		err = fmt.Errorf("%w: it is an nzip archive; read it with nzip inspect, decompress or verify", err)
	}
	return a, f, err
}

type trajFrameJSON struct {
	Index      int     `json:"index"`
	Name       string  `json:"name"`
	Files      int     `json:"files"` // files of the step (several: a sharded checkpoint)
	Size       int64   `json:"size"`
	Compressed int64   `json:"compressed"`
	OfRaw      float64 `json:"of_raw"`
	Ref        int     `json:"ref"`   // -1 for a keyframe
	Chain      int     `json:"chain"` // frames decoded to extract it (1 for a keyframe)
	SHA256     string  `json:"sha256"`
}

func runTrajLs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("trajectory ls", "[-json] RUN.nztraj", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, 1, 1); err != nil {
		return err
	}
	a, f, err := openTraj(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	var rows []trajFrameJSON
	var raw, comp int64
	keys, longest := 0, 0
	for i, fr := range a.Frames {
		chain := 1
		if fr.Ref >= 0 {
			chain = rows[fr.Ref].Chain + 1 // refs point backwards (checked when the index was read)
		} else {
			keys++
		}
		longest = max(longest, chain)
		rows = append(rows, trajFrameJSON{Index: i, Name: fr.Name, Files: len(fr.Files), Size: fr.Size, Compressed: fr.Length, OfRaw: float64(fr.Length) / float64(max(fr.Size, 1)), Ref: fr.Ref, Chain: chain, SHA256: fmt.Sprintf("%x", fr.SHA256)})
		raw += fr.Size
		comp += fr.Length
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Keyframe int             `json:"keyframe"`
			RefMode  string          `json:"ref_mode"`
			Bytes    int64           `json:"bytes"`
			Tail     int64           `json:"interrupted_tail"`
			Damaged  bool            `json:"damaged_tail,omitempty"` // the tail ends like a complete append: a damaged index
			Frames   []trajFrameJSON `json:"frames"`
		}{a.K, refModeName(a.Mode), a.End, a.Tail, a.TailTrailer, rows})
	}
	fmt.Fprintf(stdout, "%s: %d frames, %d keyframes, frames against the %s; appends keep chains within K = %d (longest now %d)\n", fs.Arg(0), len(a.Frames), keys, map[trajectory.RefMode]string{trajectory.RefPrevious: "previous frame", trajectory.RefKeyframe: "keyframe"}[a.Mode], a.K, longest)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "#\tname\tfiles\tsize\tframe\tof raw\tref\tchain\t")
	for _, r := range rows {
		ref := "key"
		if r.Ref >= 0 {
			ref = fmt.Sprint(r.Ref)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%.3f\t%s\t%d\t\n", r.Index, shown(r.Name), r.Files, r.Size, r.Compressed, r.OfRaw, ref, r.Chain)
	}
	fmt.Fprintf(tw, "\ttotal\t\t%d\t%d\t%.3f\t\t\t\n", raw, comp, float64(comp)/float64(max(raw, 1)))
	tw.Flush()
	fmt.Fprintf(stdout, "archive: %d bytes (frames, indexes and header)\n", a.End)
	switch {
	case a.TailTrailer:
		fmt.Fprintf(stdout, "warning: %v\n", damagedTail(a))
	case a.Tail > 0:
		fmt.Fprintf(stdout, "warning: %d bytes of an interrupted append follow the last valid index (the next append cuts them off)\n", a.Tail)
	}
	return nil
}

func runTrajRepack(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("trajectory repack", "-o OUT.nztraj [-f] [-keyframe K] [-threads N] [-best] [-tmpdir DIR] [-q] RUN.nztraj", stderr)
	out := fs.String("o", "", "output trajectory archive (required; never the input)")
	force := fs.Bool("f", false, "overwrite OUT if it exists")
	k := fs.Int("keyframe", 0, "keyframe interval: no step decodes through more than K frames (default: the archive's)")
	threads := fs.Int("threads", 0, "blocks coded in parallel (default: all CPUs); the archive is the same for any value")
	best := fs.Bool("best", false, "code every frame that has a reference again, also trying range-coded difference blocks (about 2 % smaller; they decode about 30× slower)")
	tmpdir := fs.String("tmpdir", "", "where steps above 128 MiB are decoded to, two or three at a time, while they are coded (default: OUT's directory)")
	quiet := fs.Bool("q", false, "print nothing on success")
	if err := parse(fs, args, 1, 1); err != nil {
		return err
	}
	if *out == "" || *k < 0 || *threads < 0 {
		fmt.Fprintln(stderr, "nzip trajectory repack: needs -o; -keyframe and -threads ≥ 0")
		fs.Usage()
		return errUsage
	}
	if *tmpdir != "" {
		if st, err := os.Stat(*tmpdir); err != nil || !st.IsDir() {
			return fmt.Errorf("-tmpdir %s: not a directory", *tmpdir)
		}
	}
	path := fs.Arg(0)
	a, f, err := openTraj(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if *k == 0 {
		*k = a.K
	}
	switch {
	case a.TailTrailer:
		fmt.Fprintf(stderr, "nzip: warning: %s: %v; repacking the %d frames before it\n", path, damagedTail(a), len(a.Frames))
	case a.Tail > 0 && !*quiet:
		fmt.Fprintf(stderr, "nzip: warning: %s: %d bytes of an interrupted append after the last valid index are left out\n", path, a.Tail)
	}
	w, err := createOutput(*out, *force, []string{path}, 0o644)
	if err != nil {
		return err
	}
	defer w.Abort()
	start := time.Now()
	opt := codec.EncodeOptions{Threads: *threads, Best: *best}
	var tw *trajectory.Writer
	if largestStep(a) <= stepInMemory {
		// small steps: decoded whole, two or three in memory
		tw, err = trajectory.Repack(ctx, a, w.File, *k, opt)
	} else {
		// large ones: decoded block by block into temporary files
		if *tmpdir == "" {
			*tmpdir = filepath.Dir(*out)
		}
		tw, err = trajectory.RepackFiles(ctx, a, w.File, *k, opt, *tmpdir)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := w.Commit(); err != nil {
		return err
	}
	if !*quiet {
		var keys []bool
		for _, fr := range tw.Archive().Frames {
			keys = append(keys, fr.Keyframe())
		}
		end := tw.Archive().End
		fmt.Fprintf(stderr, "%s: %d frames, %s -> %s (%.3f of the input), keyframes %s, in %.2fs\n", *out, len(a.Frames), humanBytes(a.End), humanBytes(end),
			float64(end)/float64(max(a.End, 1)), keyframeList(keys), time.Since(start).Seconds())
	}
	return nil
}

// extractAll writes every frame into dir (default: beside the archive)
// under its own name, decoding each frame once. Names are checked before
// anything is decoded; existing files are refused without force.
func extractAll(ctx context.Context, a *trajectory.Archive, path, dir string, force bool, opt codec.DecodeOptions, quiet bool, stderr io.Writer) error {
	if dir == "" {
		dir = filepath.Dir(path)
	}
	seen := map[string]int{}
	for i, fr := range a.Frames {
		if err := safeName(fr.Name); err != nil || strings.Contains(fr.Name, "/") {
			return fmt.Errorf("%s: frame %d has no usable file name (%q); extract it alone with -o", path, i, fr.Name)
		}
		if j, ok := seen[fr.Name]; ok {
			return fmt.Errorf("%s: frames %d and %d are both named %q; extract them one by one with -o", path, j, i, fr.Name)
		}
		seen[fr.Name] = i
		if len(fr.Files) > 1 {
			// DIR/NAME/: never through a link at NAME
			if err := subdirs(dir, fr.Name+"/file", nil); err != nil {
				return err
			}
			if err := checkStepFiles(path, i, fr, filepath.Join(dir, fr.Name), force); err != nil {
				return err
			}
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, fr.Name)); err == nil && !force {
			return fmt.Errorf("%s: already exists (use -f to overwrite)", filepath.Join(dir, fr.Name))
		}
	}
	// the directory is made (as for a sharded step) once the names check
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	start := time.Now()
	var total int64
	// Each frame is decoded once, in order, block by block as it is
	// written; a frame coded against an earlier one reads that frame's
	// files as just written (and checked), so memory stays bounded
	// whatever the steps' size. They stay open while a later frame needs
	// them.
	lastUse := make([]int, len(a.Frames))
	for j, fr := range a.Frames {
		lastUse[j] = -1
		if fr.Ref >= 0 {
			lastUse[fr.Ref] = j
		}
	}
	written := map[int][]*os.File{}
	closeFrame := func(j int) {
		for _, f := range written[j] {
			f.Close()
		}
		delete(written, j)
	}
	defer func() {
		for j := range written {
			closeFrame(j)
		}
	}()
	for j, fr := range a.Frames {
		if err := ctx.Err(); err != nil {
			return err
		}
		var ref []io.ReaderAt
		if fr.Ref >= 0 {
			for _, f := range written[fr.Ref] {
				ref = append(ref, f)
			}
		}
		s, err := a.StreamFrom(j, ref)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		dest := filepath.Join(dir, fr.Name)
		paths := []string{dest}
		if len(fr.Files) > 1 {
			if err = subdirs(dir, fr.Name+"/file", nil); err == nil {
				paths, err = writeStepFiles(ctx, dest, force, path, s, j, fr, opt)
			}
		} else {
			err = writeFrameFile(ctx, dest, force, path, nil, s, j, 0, fr, opt)
		}
		s.Close()
		if err != nil {
			return err
		}
		if fr.Ref >= 0 && lastUse[fr.Ref] == j {
			closeFrame(fr.Ref)
		}
		if lastUse[j] >= 0 {
			for _, p := range paths {
				f, _, err := openRegular(p, os.O_RDONLY)
				if err != nil {
					return fmt.Errorf("%s: reading back frame %d: %w", path, j, err)
				}
				written[j] = append(written[j], f)
			}
		}
		total += fr.Size
		if !quiet {
			fmt.Fprintf(stderr, "%s: frame %d -> %s (%s, SHA-256 verified)\n", path, j, shown(dest), humanBytes(fr.Size))
		}
	}
	if !quiet {
		fmt.Fprintf(stderr, "%s: %d frames, %s in %.2fs\n", path, len(a.Frames), humanBytes(total), time.Since(start).Seconds())
	}
	return nil
}

// stepInMemory is the largest step that trajectory verify and repack
// decode whole (trajectory.Archive.Walk: two or three steps in memory,
// every thread on each); beyond it, verify uses Archive.Verify (a few MiB
// per frame of a keyframe's group) and repack RepackFiles (the steps
// decoded into temporary files). On the 1.7 MB steps of the bf16 run Walk
// took 0.09 s and 23 MB, Verify 0.20 s and 49 MB; on four 200 MiB steps
// Walk 2.69 s and 833 MB, Verify 1.22 s and 36 MB.
var stepInMemory int64 = 128 << 20 // tests lower it

// largestStep is the size of a's largest step.
func largestStep(a *trajectory.Archive) int64 {
	var n int64
	for _, fr := range a.Frames {
		n = max(n, fr.Size)
	}
	return n
}

func runTrajVerify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("trajectory verify", "[-threads N] [-q] RUN.nztraj", stderr)
	threads := fs.Int("threads", 0, "blocks decoded in parallel (default: all CPUs)")
	quiet := fs.Bool("q", false, "print nothing on success")
	if err := parse(fs, args, 1, 1); err != nil {
		return err
	}
	path := fs.Arg(0)
	a, f, err := openTraj(path)
	if err != nil {
		return err
	}
	defer f.Close()
	start := time.Now()
	var total int64
	for _, fr := range a.Frames {
		total += fr.Size
	}
	opt := codec.DecodeOptions{Threads: *threads}
	if largestStep(a) <= stepInMemory {
		// small steps: each decoded whole, on every thread, against the
		// step before, which stays in memory (two steps at a time)
		err = a.Walk(ctx, opt, func(*trajectory.Decoded) error { return ctx.Err() })
	} else {
		// large ones: block by block in lock-step with the frames coded
		// against it, memory bounded whatever the steps' size
		err = a.Verify(ctx, opt, nil)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if a.TailTrailer {
		return fmt.Errorf("%s: %d frames check, but %w", path, len(a.Frames), damagedTail(a))
	}
	if !*quiet {
		msg := ""
		if a.Tail > 0 {
			msg = fmt.Sprintf("; %d bytes of an interrupted append follow the last valid index (the next append cuts them off)", a.Tail)
		}
		fmt.Fprintf(stdout, "%s: OK: %d frames, %s; every block CRC-32C and frame SHA-256 match (%.2fs)%s\n",
			path, len(a.Frames), humanBytes(total), time.Since(start).Seconds(), msg)
	}
	return nil
}

func refModeName(m trajectory.RefMode) string {
	if m == trajectory.RefKeyframe {
		return "key"
	}
	return "prev"
}

func runTrajExtract(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("trajectory extract", "[-o OUT] [-f] [-threads N] [-q] RUN.nztraj NAME|INDEX  |  -all [-d DIR] [-f] [-threads N] [-q] RUN.nztraj", stderr)
	out := fs.String("o", "", "output file, - for stdout (default: the step's file name beside the archive); for a step of several files the output directory (default: the step's name in the current directory)")
	all := fs.Bool("all", false, "extract every step (each frame decoded once) into -d DIR under its own name (a step of several files: into DIR/NAME/)")
	dir := fs.String("d", "", "with -all: the output directory (default: beside the archive)")
	force := fs.Bool("f", false, "overwrite OUT if it exists")
	threads := fs.Int("threads", 0, "blocks decoded in parallel (default: all CPUs)")
	quiet := fs.Bool("q", false, "print nothing on success")
	if err := parse(fs, args, 1, 2); err != nil {
		return err
	}
	if *all != (fs.NArg() == 1) || (*all && *out != "") || (!*all && *dir != "") {
		fmt.Fprintln(stderr, "nzip trajectory extract: give a step (NAME or INDEX), or -all without -o")
		fs.Usage()
		return errUsage
	}
	path := fs.Arg(0)
	a, f, err := openTraj(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if *all {
		return extractAll(ctx, a, path, *dir, *force, codec.DecodeOptions{Threads: *threads}, *quiet, stderr)
	}
	i, err := a.Find(fs.Arg(1))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fr := a.Frames[i]
	if len(fr.Files) > 1 {
		return extractStep(ctx, a, path, i, *out, *force, codec.DecodeOptions{Threads: *threads}, *quiet, stderr)
	}
	dest := *out
	if dest == "" {
		if err := safeName(fr.Name); err != nil || strings.Contains(fr.Name, "/") {
			return fmt.Errorf("%s: frame %d has no usable file name; name the output with -o", path, i)
		}
		dest = filepath.Join(filepath.Dir(path), fr.Name)
	}
	start := time.Now()
	// decoded block by block down the chain as it is written: memory
	// bounded whatever the step's size (the output goes to a temporary
	// file renamed into place once every block's CRC-32C and the file's
	// SHA-256 have checked)
	opt := codec.DecodeOptions{Threads: *threads}
	s, err := a.StreamWith(ctx, i, opt)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer s.Close()
	if err := writeFrameFile(ctx, dest, *force, path, stdout, s, i, 0, fr, opt); err != nil {
		return err
	}
	if !*quiet && dest != "-" {
		chain, _ := a.Chain(i)
		fmt.Fprintf(stderr, "%s: frame %d (%s, %s) decoded from %d frame(s) in %.2fs -> %s (SHA-256 verified)\n", path, i, shown(fr.Name),
			humanBytes(fr.Size), len(chain), time.Since(start).Seconds(), shown(dest))
	}
	return nil
}

// checkStepFiles checks, before anything is decoded, that the files of
// frame i (a step of several files) can be written into dir: safe,
// distinct names, none there already unless force.
func checkStepFiles(path string, i int, fr trajectory.Frame, dir string, force bool) error {
	seen := map[string]bool{}
	for _, ff := range fr.Files {
		if err := safeName(ff.Name); err != nil || strings.Contains(ff.Name, "/") {
			return fmt.Errorf("%s: frame %d (%s) holds a file without a usable name (%q)", path, i, fr.Name, ff.Name)
		}
		if seen[ff.Name] {
			return fmt.Errorf("%s: frame %d (%s) holds two files named %q", path, i, fr.Name, ff.Name)
		}
		seen[ff.Name] = true
		if _, err := os.Lstat(filepath.Join(dir, ff.Name)); err == nil && !force {
			return fmt.Errorf("%s: already exists (use -f to overwrite)", filepath.Join(dir, ff.Name))
		}
	}
	return nil
}

// writeFrameFile writes file k of frame i (fr, open as s) to dest (- for
// stdout) through writeOutput, decoded block by block as it is written;
// an error names the frame, and the file for a step of several.
func writeFrameFile(ctx context.Context, dest string, force bool, path string, stdout io.Writer, s *trajectory.Stream, i, k int, fr trajectory.Frame, opt codec.DecodeOptions) error {
	return writeOutput(dest, force, []string{path}, stdout, func(w io.Writer) error {
		if err := s.WriteFile(ctx, w, k, opt); err != nil {
			if len(fr.Files) > 1 {
				return fmt.Errorf("frame %d (%s), file %s: %w", i, fr.Name, fr.Files[k].Name, err)
			}
			return fmt.Errorf("frame %d (%s): %w", i, fr.Name, err)
		}
		return nil
	})
}

// writeStepFiles writes the files of frame i (fr, a step of several,
// open as s) into dir, each decoded block by block into a temporary file
// and checked; only when all have checked do they take their names, all
// or none (commitAll), so a damaged frame or a failed rename leaves no
// part of the step (nor a mix with files already there) under them. It
// returns the files' paths.
func writeStepFiles(ctx context.Context, dir string, force bool, path string, s *trajectory.Stream, i int, fr trajectory.Frame, opt codec.DecodeOptions) ([]string, error) {
	var outs []*atomicFile
	var made []string
	ok := false
	defer func() {
		for _, w := range outs {
			w.Abort()
		}
		if !ok {
			removeMade(made) // made here, and empty again
		}
	}()
	if err := mkdirAll(dir, &made); err != nil {
		return nil, err
	}
	var paths []string
	for k, ff := range fr.Files {
		p := filepath.Join(dir, ff.Name)
		w, err := createOutput(p, force, []string{path}, 0o644)
		if err != nil {
			return nil, err
		}
		outs = append(outs, w)
		bw := bufio.NewWriterSize(w, 1<<20)
		if err := s.WriteFile(ctx, bw, k, opt); err != nil {
			return nil, fmt.Errorf("%s: frame %d (%s), file %s: %w", path, i, fr.Name, ff.Name, err)
		}
		if err := bw.Flush(); err != nil {
			return nil, err
		}
		if err := w.finish(); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	// all or none: a failed rename puts back what was there (-f)
	if err := commitAll(outs); err != nil {
		return nil, err
	}
	ok = true
	return paths, nil
}

// extractStep writes frame i, a step of several files, into the
// directory out (default: the step's name in the current directory).
func extractStep(ctx context.Context, a *trajectory.Archive, path string, i int, out string, force bool, opt codec.DecodeOptions, quiet bool, stderr io.Writer) error {
	fr := a.Frames[i]
	if out == "-" {
		return fmt.Errorf("%s: frame %d (%s) is a step of %d files; give -o DIR, not -", path, i, fr.Name, len(fr.Files))
	}
	if out == "" {
		if err := safeName(fr.Name); err != nil || strings.Contains(fr.Name, "/") {
			return fmt.Errorf("%s: frame %d has no usable name; name the output directory with -o", path, i)
		}
		out = fr.Name
	}
	if st, err := os.Stat(out); err == nil && !st.IsDir() {
		return fmt.Errorf("%s: exists and is not a directory (frame %d, %s, is a step of %d files)", out, i, fr.Name, len(fr.Files))
	}
	if err := checkStepFiles(path, i, fr, out, force); err != nil {
		return err
	}
	start := time.Now()
	s, err := a.StreamWith(ctx, i, opt) // block by block, as for a single file
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer s.Close()
	if _, err := writeStepFiles(ctx, out, force, path, s, i, fr, opt); err != nil {
		return err
	}
	if !quiet {
		chain, _ := a.Chain(i)
		fmt.Fprintf(stderr, "%s: frame %d (%s, %d files, %s) decoded from %d frame(s) in %.2fs -> %s%c (SHA-256 verified)\n", path, i, shown(fr.Name),
			len(fr.Files), humanBytes(fr.Size), len(chain), time.Since(start).Seconds(), shown(out), filepath.Separator)
	}
	return nil
}

// loadRef opens the reference model for -ref; paths are its files (no
// output may overwrite them).
func loadRef(path string, stderr io.Writer) (ref *codec.Reference, paths []string, done func(), err error) {
	files, err := openModel(path, stderr)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("-ref: %w", err)
	}
	var ins []codec.Input
	for _, f := range files {
		ins = append(ins, f.input())
		paths = append(paths, f.path)
	}
	ref, err = codec.NewReference(ins)
	if err != nil {
		closeInputs(files)
		return nil, nil, nil, fmt.Errorf("-ref %s: %w", path, err)
	}
	return ref, paths, func() { closeInputs(files) }, nil
}

// useRef gives a reader the reference of -ref, or reports a missing one,
// before anything is decoded or written. It returns the reference's files.
func useRef(rd *codec.Reader, archive, refPath string, stderr io.Writer) ([]string, func(), error) {
	refs := rd.RefFiles()
	if refPath == "" {
		if len(refs) > 0 && rd.UsesRef() {
			return nil, func() {}, fmt.Errorf("%s: %w: the archive was coded against %s (%d bytes, SHA-256 %x); pass it with -ref FILE",
				archive, codec.ErrRefMissing, refs[0].Name, refs[0].Size, refs[0].SHA256)
		}
		return nil, func() {}, nil
	}
	ref, paths, done, err := loadRef(refPath, stderr)
	if err != nil {
		return nil, func() {}, err
	}
	if len(refs) == 0 {
		fmt.Fprintf(stderr, "nzip: warning: %s was not coded against a reference; -ref %s is not needed\n", archive, refPath)
	}
	if err := rd.UseRef(ref); err != nil {
		done()
		return nil, func() {}, fmt.Errorf("%s: %w", archive, err)
	}
	return paths, done, nil
}
