package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/store"
)

// hubFiles are the hub's model files, F32 first (casts find their F32),
// and its tokenizer.
var hubFiles = []string{
	"base/model.f32.safetensors",
	"ft-fortunes-full/model.f32.safetensors",
	"ft-fortunes-lora/model.f32.safetensors",
	"ft-frozen-embed/model.f32.safetensors",
	"ft-continued/model.f32.safetensors",
	"base/model.bf16.safetensors",
	"ft-fortunes-full/model.bf16.safetensors",
	"ft-fortunes-full/model.f16.gguf",
	"ft-fortunes-lora/model.bf16.safetensors",
	"ft-frozen-embed/model.bf16.safetensors",
	"ft-continued/model.bf16.safetensors",
	"tok512.bin",
}

// runStoreNumbers prints the "Numbers" table of docs/store.md: the hub
// alone, then the hub with every model of models/original and the
// tinygpt run's F32 and BF16 steps, added to a fresh directory store on
// two threads as nzip store add adds them (in batches); store bytes against every file's own nzip archive; add and
// get speed (wall-clock, and per two CPU-seconds); the most chunk bytes a
// get read per byte of its model's units and base chains; bytes decoded
// per byte restored. Every file restores bit for bit or it fails.
func runStoreNumbers(args []string) error {
	fs := flag.NewFlagSet("store-numbers", flag.ExitOnError)
	shared := fs.String("shared", "../shared", "the corpus directory (hub/, models/, trajectories/)")
	order := fs.Bool("order", false, "print the upload-order table instead: the hub's files in sorted order (16-bit exports first) and F32 first")
	repack := fs.Bool("repack", false, "print the repack table instead: the hub's files added in three orders, then nzip store repack")
	maxDecode := fs.String("max-decode", "", "print the decode bound table instead: the hub added to stores made with each of these bounds (comma-separated; 0: unbounded), e.g. 0,3,2,1.5,1")
	fs.Parse(args)
	if *order {
		return storeOrder(*shared)
	}
	if *maxDecode != "" {
		return storeBounds(*shared, *maxDecode)
	}
	if *repack {
		return storeRepack(*shared)
	}
	fmt.Println("| set | files | raw bytes | nzip alone | store bytes | store / nzip alone | add MB/s | get MB/s | read / chain | decoded / restored |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, all := range []bool{false, true} {
		files, err := corpusSet(*shared, all)
		if err != nil {
			return err
		}
		r, err := storeRow(files, 0)
		if err != nil {
			return err
		}
		label := "../shared/hub"
		if all {
			label = "hub + models/original + tinygpt f32 and bf16 steps"
		}
		fmt.Printf("| %s | %d | %d | %d | %d | %.3f | %.0f (%.0f) | %.0f (%.0f) | %.3f | %.2f |\n", label, len(files), r.raw, r.alone, r.stored, float64(r.stored)/float64(r.alone),
			r.addMBs, r.addCPUMBs, r.getMBs, r.getCPUMBs, r.worstRead, float64(r.decoded)/float64(r.raw))
	}
	return nil
}

// storeBounds prints the decode bound table: the hub's files added (as
// the main table adds them) to stores made with each bound of list.
func storeBounds(shared, list string) error {
	files, err := corpusSet(shared, false)
	if err != nil {
		return err
	}
	fmt.Println("| max decode | store bytes | store / nzip alone | decoded / restored | worst model | casts, deltas, coded alone | add MB/s | get MB/s |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, f := range strings.Split(list, ",") {
		var bound float64
		if _, err := fmt.Sscan(f, &bound); err != nil {
			return fmt.Errorf("-max-decode %q: %v", f, err)
		}
		r, err := storeRow(files, bound)
		if err != nil {
			return err
		}
		label := "unbounded"
		if bound > 0 {
			label = fmt.Sprint(bound)
		}
		fmt.Printf("| %s | %d | %.3f | %.2f | %.2f | %d, %d, %d | %.0f (%.0f) | %.0f (%.0f) |\n", label, r.stored, float64(r.stored)/float64(r.alone),
			float64(r.decoded)/float64(r.raw), r.worstDecoded, r.units["cast"], r.units["delta"], r.units["nzip"]+r.units["raw"],
			r.addMBs, r.addCPUMBs, r.getMBs, r.getCPUMBs)
	}
	return nil
}

// storeMeasure is one store's row: bytes, speeds (wall, and per two
// CPU-seconds), the largest chunk bytes read per chain byte and bytes
// decoded per byte restored over the models, and the units by kind.
type storeMeasure struct {
	raw, alone, stored, decoded int64
	addMBs, addCPUMBs           float64
	getMBs, getCPUMBs           float64
	worstRead, worstDecoded     float64
	units                       map[string]int
}

// storeRow adds files to a fresh directory store of decode bound bound
// and gets every model back on a fresh read-only open.
func storeRow(files []string, bound float64) (storeMeasure, error) {
	var r storeMeasure
	dir, err := os.MkdirTemp("", "nzlab-store-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	if err := store.InitWith(dir, store.InitOptions{MaxDecode: bound}); err != nil {
		return r, err
	}
	s, err := store.Open(dir, store.Options{Threads: 2})
	if err != nil {
		return r, err
	}
	// added as nzip store add adds them: in batches (store.Batcher)
	var addTime time.Duration
	cpu0 := processCPU()
	var raw int64
	b := &store.Batcher{Store: s, Added: func(m *store.Manifest, _ store.AddStats) { raw += m.Raw }}
	timed := func(f func() error) error {
		t0 := time.Now()
		err := f()
		addTime += time.Since(t0)
		return err
	}
	for _, f := range files {
		ins, err := storeInputs(f)
		if err != nil {
			return r, err
		}
		if err := timed(func() error { return b.Add(f, ins, nil, nil) }); err != nil {
			return r, err
		}
	}
	if err := timed(b.Flush); err != nil {
		return r, err
	}
	addCPU := processCPU() - cpu0
	// the independent archives, measured apart from the add speed
	var alone int64
	for _, f := range files {
		ins, err := storeInputs(f)
		if err != nil {
			return r, err
		}
		for _, in := range ins {
			res, err := codec.Encode(context.Background(), io.Discard, []codec.Input{{Name: in.Name, R: in.R, Size: in.Size, Format: in.Format, Segments: in.Segments}}, codec.EncodeOptions{})
			if err != nil {
				return r, err
			}
			alone += res.Compressed
		}
	}
	st, err := s.Stats()
	if err != nil {
		return r, err
	}
	s.Close()
	// get speed and bytes read, on a fresh read-only open
	if s, err = store.Open(dir, store.Options{Threads: 2, ReadOnly: true}); err != nil {
		return r, err
	}
	defer s.Close()
	var getTime time.Duration
	cpu0 = processCPU()
	worst, worstDec := 0.0, 0.0
	for _, f := range files {
		m, err := s.Model(f)
		if err != nil {
			return r, err
		}
		before, dec0 := s.BytesRead(), s.BytesDecoded()
		var got [][]byte
		t0 := time.Now()
		for fi := range m.Files {
			var buf bytes.Buffer
			if err := s.WriteFile(m, fi, &buf); err != nil {
				return r, err
			}
			got = append(got, buf.Bytes())
		}
		getTime += time.Since(t0)
		if err := sameFiles(f, got); err != nil {
			return r, err
		}
		need, err := s.ChainBytes(f)
		if err != nil {
			return r, err
		}
		if need > 0 {
			worst = max(worst, float64(s.BytesRead()-before)/float64(need))
		}
		if m.Raw > 0 {
			d := float64(s.BytesDecoded()-dec0) / float64(m.Raw)
			if bound > 0 && d > bound {
				return r, fmt.Errorf("%s: a get decoded %.3f bytes per byte restored, bound %v", f, d, bound)
			}
			worstDec = max(worstDec, d)
		}
	}
	getCPU := processCPU() - cpu0
	if s.BytesDecoded() != st.Decoded {
		return r, fmt.Errorf("gets decoded %d bytes, the index says %d", s.BytesDecoded(), st.Decoded)
	}
	r = storeMeasure{raw: raw, alone: alone, stored: st.Stored, decoded: st.Decoded,
		addMBs: float64(raw) / addTime.Seconds() / 1e6, addCPUMBs: 2 * float64(raw) / addCPU.Seconds() / 1e6,
		getMBs: float64(raw) / getTime.Seconds() / 1e6, getCPUMBs: 2 * float64(raw) / getCPU.Seconds() / 1e6,
		worstRead: worst, worstDecoded: worstDec, units: st.Units}
	return r, nil
}

// corpusSet lists the files of one row, F32 files first within each group
// so that casts find their F32 unit.
func corpusSet(shared string, all bool) ([]string, error) {
	hub := filepath.Join(shared, "hub/stories260K")
	var files []string
	for _, f := range hubFiles {
		files = append(files, filepath.Join(hub, f))
	}
	if !all {
		return files, nil
	}
	orig := filepath.Join(shared, "models/original")
	var rest []string
	err := filepath.WalkDir(orig, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && !strings.HasSuffix(p, ".json") {
			rest = append(rest, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	// TF.js models enter through their model.json (which names the .bin)
	for _, d := range []string{"faceres-deep", "handtrack", "movenet-thunder"} {
		rest = slices.DeleteFunc(rest, func(p string) bool { return strings.Contains(p, d) })
		rest = append(rest, filepath.Join(orig, d, d+".json"))
	}
	traj := filepath.Join(shared, "trajectories/tinygpt-fortunes")
	steps, _ := filepath.Glob(filepath.Join(traj, "step_*.f32.safetensors"))
	bf, _ := filepath.Glob(filepath.Join(traj, "step_*.bf16.safetensors"))
	rest = append(rest, steps...)
	rest = append(rest, bf...)
	slices.SortStableFunc(rest, func(a, b string) int { return widthRank(a) - widthRank(b) })
	return append(files, rest...), nil
}

// widthRank orders F32 files before 16-bit ones (by name; only an order of
// adds, never a correctness matter).
func widthRank(p string) int {
	b := strings.ToLower(filepath.Base(p))
	switch {
	case strings.Contains(b, "f32") || strings.Contains(b, "fp32"):
		return 0
	case strings.Contains(b, "bf16") || strings.Contains(b, "f16") || strings.Contains(b, "fp16"):
		return 2
	}
	return 1
}

// storeInputs opens a model as nzip store add does: the loader's files and
// layouts as codec segments, or one opaque file when no loader knows it.
func storeInputs(path string) ([]store.Input, error) {
	m, err := checkpoint.OpenPath(path)
	if err != nil {
		b, rerr := os.ReadFile(path)
		if rerr != nil {
			return nil, rerr
		}
		return []store.Input{{Name: filepath.Base(path), R: bytes.NewReader(b), Size: int64(len(b)), Format: "unknown"}}, nil
	}
	var out []store.Input
	for _, f := range m.Files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			return nil, err
		}
		in := store.Input{Name: f.Name, R: bytes.NewReader(b), Size: int64(len(b))}
		if f.Layout != nil {
			in.Format = f.Layout.Format
			in.Segments = f.Layout.Segments
		}
		out = append(out, in)
	}
	return out, nil
}

// sameFiles checks the restored files of model path against the originals.
func sameFiles(path string, got [][]byte) error {
	ins, err := storeInputs(path)
	if err != nil {
		return err
	}
	if len(ins) != len(got) {
		return fmt.Errorf("%s: %d files restored, want %d", path, len(got), len(ins))
	}
	for i, in := range ins {
		want := make([]byte, in.Size)
		if _, err := in.R.ReadAt(want, 0); err != nil && err != io.EOF {
			return err
		}
		if !bytes.Equal(got[i], want) {
			return fmt.Errorf("%s: file %d restores to other bytes", path, i)
		}
	}
	return nil
}

// orderModels are the upload-order check's models: a base and three
// fine-tunes of the hub, F32 and BF16 of each.
var orderModels = []string{"base", "ft-fortunes-full", "ft-fortunes-lora", "ft-frozen-embed"}

// storeOrder prints the upload-order table of docs/store.md: the store's
// payload against the files' own nzip archives when the files come in
// sorted order (each BF16 export before its F32 original, as a hub
// receives them) and F32 first; and the payload of the base with its BF16
// export added first against after its F32. Added in batches, as nzip
// store add adds them, to an in-memory store on two threads.
func storeOrder(shared string) error {
	hub := filepath.Join(shared, "hub/stories260K")
	var sorted, f32First []string
	for _, m := range orderModels {
		for _, d := range []string{"f32", "bf16"} {
			sorted = append(sorted, filepath.Join(hub, m, "model."+d+".safetensors"))
		}
	}
	slices.Sort(sorted)
	f32First = slices.Clone(sorted)
	slices.SortStableFunc(f32First, func(a, b string) int { return widthRank(a) - widthRank(b) })
	fmt.Println("| files | order | own archives | store payload | store / own archives |")
	fmt.Println("|---|---|---|---|---|")
	for _, row := range []struct {
		label string
		files []string
	}{{"sorted (16-bit first)", sorted}, {"F32 first", f32First}} {
		stored, alone, err := orderPayload(row.files)
		if err != nil {
			return err
		}
		fmt.Printf("| base + 3 fine-tunes, F32 and BF16 | %s | %d | %d | %.3f |\n", row.label, alone, stored, float64(stored)/float64(alone))
	}
	base := []string{filepath.Join(hub, "base/model.bf16.safetensors"), filepath.Join(hub, "base/model.f32.safetensors")}
	first, _, err := orderPayload(base)
	if err != nil {
		return err
	}
	after, alone, err := orderPayload([]string{base[1], base[0]})
	if err != nil {
		return err
	}
	fmt.Printf("| base, F32 and BF16 | BF16 first | %d | %d | %.3f |\n", alone, first, float64(first)/float64(alone))
	fmt.Printf("| base, F32 and BF16 | F32 first | %d | %d | %.3f |\n", alone, after, float64(after)/float64(alone))
	fmt.Printf("\nBF16 first costs %+.2f %% against F32 first\n", 100*(float64(first)/float64(after)-1))
	return nil
}

// orderPayload adds files in the order given to a new in-memory store and
// returns its payload bytes and the files' own nzip archives' bytes.
func orderPayload(files []string) (stored, alone int64, err error) {
	s := store.NewMem(store.Options{Threads: 2})
	defer s.Close()
	b := &store.Batcher{Store: s}
	for _, f := range files {
		ins, err := storeInputs(f)
		if err != nil {
			return 0, 0, err
		}
		for _, in := range ins {
			res, err := codec.Encode(context.Background(), io.Discard, []codec.Input{{Name: in.Name, R: in.R, Size: in.Size, Format: in.Format, Segments: in.Segments}}, codec.EncodeOptions{})
			if err != nil {
				return 0, 0, err
			}
			alone += res.Compressed
		}
		if err := b.Add(f, ins, nil, nil); err != nil {
			return 0, 0, err
		}
	}
	if err := b.Flush(); err != nil {
		return 0, 0, err
	}
	for _, f := range files {
		m, err := s.Model(f)
		if err != nil {
			return 0, 0, err
		}
		var got [][]byte
		for fi := range m.Files {
			var buf bytes.Buffer
			if err := s.WriteFile(m, fi, &buf); err != nil {
				return 0, 0, err
			}
			got = append(got, buf.Bytes())
		}
		if err := sameFiles(f, got); err != nil {
			return 0, 0, err
		}
	}
	st, err := s.Stats()
	if err != nil {
		return 0, 0, err
	}
	return st.Stored, alone, nil
}

// storeRepack prints the repack table of docs/store.md: the hub's files
// added in batches to a fresh directory store in three orders (F32 first,
// sorted: each model's 16-bit exports before its F32 file, 16-bit first:
// every 16-bit file before every F32 file), then repacked (store.Repack);
// payload before and after against the F32-first store's, and bytes
// decoded per byte restored, measured by a get of every model on a fresh
// read-only open (and checked against Stats.Decoded, from the index).
func storeRepack(shared string) error {
	hub := filepath.Join(shared, "hub/stories260K")
	var f32First []string
	for _, f := range hubFiles {
		f32First = append(f32First, filepath.Join(hub, f))
	}
	sorted := slices.Sorted(slices.Values(f32First))
	var first, last []string
	for _, f := range sorted {
		if widthRank(f) == 0 {
			last = append(last, f)
		} else {
			first = append(first, f)
		}
	}
	fmt.Println("| order | payload | after repack | against F32 first, before / after repack | decoded / restored before | after | units recast, re-coded, nearer | repack s |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	var refBefore, refAfter int64
	for _, row := range []struct {
		label string
		files []string
	}{{"F32 first", f32First}, {"sorted (each model's 16-bit exports first)", sorted}, {"16-bit first (every 16-bit file, then every F32 file)", append(first, last...)}} {
		r, err := repackRow(row.files)
		if err != nil {
			return fmt.Errorf("%s: %w", row.label, err)
		}
		if refAfter == 0 {
			refBefore, refAfter = r.Before, r.After
		}
		fmt.Printf("| %s | %d | %d | %+.2f %% / %+.2f %% | %.2f | %.2f | %d, %d, %d | %.2f |\n", row.label, r.Before, r.After,
			100*(float64(r.Before)/float64(refBefore)-1), 100*(float64(r.After)/float64(refAfter)-1),
			float64(r.DecodedBefore)/float64(r.Restored), float64(r.DecodedAfter)/float64(r.Restored),
			r.Recast, r.Moved, r.Nearer, r.secs)
	}
	return nil
}

type repackResult struct {
	store.RepackStats
	secs float64
}

// repackRow adds files to a fresh directory store, measures the bytes a
// get of every model decodes, repacks, and measures again.
func repackRow(files []string) (repackResult, error) {
	var r repackResult
	dir, err := os.MkdirTemp("", "nzlab-repack-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	if err := store.Init(dir); err != nil {
		return r, err
	}
	s, err := store.Open(dir, store.Options{Threads: 2})
	if err != nil {
		return r, err
	}
	b := &store.Batcher{Store: s}
	for _, f := range files {
		ins, err := storeInputs(f)
		if err != nil {
			s.Close()
			return r, err
		}
		if err := b.Add(f, ins, nil, nil); err != nil {
			s.Close()
			return r, err
		}
	}
	if err := b.Flush(); err != nil {
		s.Close()
		return r, err
	}
	s.Close()
	before, err := decodedByGets(dir, files)
	if err != nil {
		return r, err
	}
	if s, err = store.Open(dir, store.Options{Threads: 2}); err != nil {
		return r, err
	}
	t0 := time.Now()
	rs, err := s.Repack()
	r.secs = time.Since(t0).Seconds()
	s.Close()
	if err != nil {
		return r, err
	}
	r.RepackStats = rs
	after, err := decodedByGets(dir, files)
	if err != nil {
		return r, err
	}
	if before != rs.DecodedBefore || after != rs.DecodedAfter {
		return r, fmt.Errorf("gets decoded %d and %d bytes, the index says %d and %d", before, after, rs.DecodedBefore, rs.DecodedAfter)
	}
	return r, nil
}

// decodedByGets gets every model of the store at dir (fresh read-only
// open), checks them against files, and returns the bytes decoded.
func decodedByGets(dir string, files []string) (int64, error) {
	s, err := store.Open(dir, store.Options{Threads: 2, ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	for _, f := range files {
		m, err := s.Model(f)
		if err != nil {
			return 0, err
		}
		var got [][]byte
		for fi := range m.Files {
			var buf bytes.Buffer
			if err := s.WriteFile(m, fi, &buf); err != nil {
				return 0, err
			}
			got = append(got, buf.Bytes())
		}
		if err := sameFiles(f, got); err != nil {
			return 0, err
		}
	}
	n := s.BytesDecoded()
	if bad, err := s.Verify(); err != nil || len(bad) > 0 {
		return 0, fmt.Errorf("verify: %v %v", err, bad)
	}
	return n, nil
}
