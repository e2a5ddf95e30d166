package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"neuralzip/codec"
	"neuralzip/store"
	"neuralzip/store/storetest"
)

// runStoreScale prints the scale table of docs/store.md: the hub's 10
// real F32 and BF16 safetensors files, then -models synthetic fine-tunes
// of them (store/storetest: each a real file or an earlier synthetic
// model with 1–3 tensors perturbed, sometimes one swapped for another
// fine-tune's), added one model per Add to a fresh directory store on two
// threads, once with the fingerprints' index and once with the
// exhaustive search. It reports the add time per model when a store
// holds 10, 100 and 10 + models − 20 models (scaleRow: median and mean
// wall time of 20 adds, taken in turns, and CPU time per add), the large
// store's payload and index sizes, the get speed of every model on a
// fresh read-only open (each checked against its bytes), and the indexed
// store's payload against the exhaustive one's.
func runStoreScale(args []string) error {
	fs := flag.NewFlagSet("store-scale", flag.ExitOnError)
	shared := fs.String("shared", "../shared", "the corpus directory (hub/)")
	models := fs.Int("models", 1000, "synthetic models to add after the 10 real files (at least 110)")
	exhaustive := fs.Bool("exhaustive", true, "also build the store with the exhaustive search, for its bytes and times")
	fs.Parse(args)
	if *models < 110 {
		return fmt.Errorf("store-scale: -models %d: at least 110", *models)
	}
	var src []storetest.File
	for _, ty := range []string{"f32", "bf16"} {
		for _, d := range []string{"base", "ft-fortunes-full", "ft-fortunes-lora", "ft-frozen-embed", "ft-continued"} {
			name := d + "/model." + ty + ".safetensors"
			ins, err := storeInputs(filepath.Join(*shared, "hub", "stories260K", name))
			if err != nil {
				return err
			}
			b := make([]byte, ins[0].Size)
			if _, err := ins[0].R.ReadAt(b, 0); err != nil {
				return err
			}
			src = append(src, storetest.File{Name: name, Data: b, Segs: ins[0].Segments})
		}
	}
	modes := []bool{false}
	if *exhaustive {
		modes = append(modes, true)
	}
	fmt.Println("| search | models | add ms/model at 10 | at 100 | at N | at N / at 10 | add CPU ms/model at 10 / 100 / N | payload bytes | index.db bytes | raw bytes | get MB/s |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	var payload []int64
	for _, exh := range modes {
		p, err := scaleRow(src, *models, exh)
		if err != nil {
			return err
		}
		payload = append(payload, p)
	}
	if len(payload) == 2 {
		fmt.Printf("\nindexed payload / exhaustive payload: %d / %d = %.4f\n", payload[0], payload[1], float64(payload[0])/float64(payload[1]))
	}
	return nil
}

// scaleStore is a directory store being filled with the hub's models.
type scaleStore struct {
	dir       string
	s         *store.Store
	hub       *storetest.Hub
	raw       int64
	wall, cpu []time.Duration // of the timed adds
}

func newScaleStore(src []storetest.File, exh bool) (*scaleStore, error) {
	dir, err := os.MkdirTemp("", "nzlab-scale-")
	if err != nil {
		return nil, err
	}
	if err := store.Init(dir); err != nil {
		return nil, err
	}
	s, err := store.Open(dir, store.Options{Threads: 2, Exhaustive: exh})
	if err != nil {
		return nil, err
	}
	x := &scaleStore{dir: dir, s: s, hub: storetest.NewHub(src)}
	for _, f := range src {
		if err := x.add(f.Name, f.Data, f.Segs, false); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func (x *scaleStore) add(name string, data []byte, segs []codec.Segment, timed bool) error {
	in := store.Input{Name: "model.safetensors", R: bytes.NewReader(data), Size: int64(len(data)), Format: "safetensors", Segments: segs}
	c0, t0 := processCPU(), time.Now()
	m, _, err := x.s.Add(name, []store.Input{in}, store.AddOptions{})
	if timed {
		x.wall, x.cpu = append(x.wall, time.Since(t0)), append(x.cpu, processCPU()-c0)
	}
	if err == nil {
		x.raw += m.Raw
	}
	return err
}

// next adds the hub's next synthetic model.
func (x *scaleStore) next(timed bool) error {
	m, err := x.hub.Next()
	if err != nil {
		return err
	}
	return x.add(m.Name, m.Data, m.Segs, timed)
}

// scaleRow builds one store of the 10 real files and n synthetic models
// and prints its row; it returns the payload. The add times at 10, 100
// and 1,000 models are taken in turns, so that the load of other work on
// the machine falls on the three alike: once the large store holds
// 10 + n − 10 models, a store of the 10 real files and one of those and
// 90 synthetic models are made, and then each of the three adds its next
// model in turn, 20 times (the large store's last 20 models).
func scaleRow(src []storetest.File, n int, exh bool) (int64, error) {
	big, err := newScaleStore(src, exh)
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(big.dir)
	const window = 20
	for range n - window {
		if err := big.next(false); err != nil {
			return 0, err
		}
	}
	small, err := newScaleStore(src, exh)
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(small.dir)
	mid, err := newScaleStore(src, exh)
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(mid.dir)
	for range 90 {
		if err := mid.next(false); err != nil {
			return 0, err
		}
	}
	turns := []*scaleStore{small, mid, big}
	for range window {
		for _, x := range turns {
			if err := x.next(true); err != nil {
				return 0, err
			}
		}
	}
	small.s.Close()
	mid.s.Close()
	s := big.s
	st, err := s.Stats()
	if err != nil {
		return 0, err
	}
	s.Close()
	fi, err := os.Stat(filepath.Join(big.dir, "index.db"))
	if err != nil {
		return 0, err
	}
	// get every model on a fresh read-only open, checked against its bytes
	if s, err = store.Open(big.dir, store.Options{Threads: 2, ReadOnly: true}); err != nil {
		return 0, err
	}
	defer s.Close()
	var getTime time.Duration
	check := func(name string, want []byte) error {
		m, err := s.Model(name)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		t0 := time.Now()
		if err := s.WriteFile(m, 0, &buf); err != nil {
			return err
		}
		getTime += time.Since(t0)
		if !bytes.Equal(buf.Bytes(), want) {
			return fmt.Errorf("%s restores to other bytes", name)
		}
		return nil
	}
	for _, f := range src {
		if err := check(f.Name, f.Data); err != nil {
			return 0, err
		}
	}
	again := storetest.NewHub(src)
	for range n {
		m, err := again.Next()
		if err != nil {
			return 0, err
		}
		if err := check(m.Name, m.Data); err != nil {
			return 0, err
		}
	}
	label := "index"
	if exh {
		label = "exhaustive"
	}
	median := func(xs []time.Duration) float64 {
		w := slices.Clone(xs)
		slices.Sort(w)
		return float64(w[len(w)/2-1]+w[len(w)/2]) / 2e6
	}
	mean := func(xs []time.Duration) float64 {
		var sum time.Duration
		for _, x := range xs {
			sum += x
		}
		return float64(sum) / float64(len(xs)) / 1e6
	}
	row := fmt.Sprintf("| %s | %d |", label, len(src)+n)
	for _, x := range turns {
		row += fmt.Sprintf(" %.1f (mean %.1f) |", median(x.wall), mean(x.wall))
	}
	row += fmt.Sprintf(" %.2f | %.1f / %.1f / %.1f", median(big.wall)/median(small.wall), mean(small.cpu), mean(mid.cpu), mean(big.cpu))
	row += fmt.Sprintf(" | %d | %d | %d | %.0f |", st.Stored, fi.Size(), big.raw, float64(big.raw)/getTime.Seconds()/1e6)
	fmt.Println(row)
	return st.Stored, nil
}
