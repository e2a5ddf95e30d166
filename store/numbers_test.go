//go:build unix && !js

package store

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// corpusSet lists the files of one "Numbers" row (docs/store.md), F32
// files first within each group so that casts find their F32 unit.
func corpusSet(t testing.TB, all bool) []string {
	hub := shared(t, "hub/stories260K")
	var files []string
	for _, f := range hubFiles {
		files = append(files, filepath.Join(hub, f))
	}
	if !all {
		return files
	}
	orig := shared(t, "models/original")
	var rest []string
	filepath.WalkDir(orig, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && !strings.HasSuffix(p, ".json") {
			rest = append(rest, p)
		}
		return nil
	})
	// TF.js models enter through their model.json (which names the .bin)
	for _, d := range []string{"faceres-deep", "handtrack", "movenet-thunder"} {
		rest = slices.DeleteFunc(rest, func(p string) bool { return strings.Contains(p, d) })
		rest = append(rest, filepath.Join(orig, d, d+".json"))
	}
	traj := shared(t, "trajectories/tinygpt-fortunes")
	steps, _ := filepath.Glob(filepath.Join(traj, "step_*.f32.safetensors"))
	bf, _ := filepath.Glob(filepath.Join(traj, "step_*.bf16.safetensors"))
	rest = append(rest, steps...)
	rest = append(rest, bf...)
	slices.SortStableFunc(rest, func(a, b string) int { return widthRank(a) - widthRank(b) })
	return append(files, rest...)
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

// cpuTime is the process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestNumbers makes the table of docs/store.md (NZ_STORE_NUMBERS=1).
func TestNumbers(t *testing.T) {
	if os.Getenv("NZ_STORE_NUMBERS") == "" {
		t.Skip("NZ_STORE_NUMBERS not set: the store benchmark table is made on demand")
	}
	for _, all := range []bool{false, true} {
		files := corpusSet(t, all)
		dir := t.TempDir()
		if err := Init(dir); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		var addTime time.Duration
		cpu0 := cpuTime()
		var raw int64
		want := map[string][][]byte{}
		for _, f := range files {
			ins := inputs(t, f)
			t0 := time.Now()
			m, st, err := s.Add(f, ins, AddOptions{})
			addTime += time.Since(t0)
			if err != nil {
				t.Fatal(err)
			}
			raw += m.Raw
			want[f] = fileBytes(t, ins)
			_ = st
		}
		addCPU := cpuTime() - cpu0
		// the independent archives, measured apart from the add speed
		var alone int64
		for _, f := range files {
			for _, in := range inputs(t, f) {
				n, err := archiveSize(in)
				if err != nil {
					t.Fatal(err)
				}
				alone += n
			}
		}
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		// get speed and bytes read, on a fresh read-only open
		s, err = Open(dir, Options{Threads: 2, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var getTime time.Duration
		cpu0 = cpuTime()
		worst := 0.0
		for _, f := range files {
			before := s.BytesRead()
			t0 := time.Now()
			restore(t, s, f, want[f])
			getTime += time.Since(t0)
			need, err := s.chainBytes(f)
			if err != nil {
				t.Fatal(err)
			}
			if need > 0 {
				worst = max(worst, float64(s.BytesRead()-before)/float64(need))
			}
		}
		getCPU := cpuTime() - cpu0
		decodedPer := float64(s.BytesDecoded()) / float64(raw)
		s.Close()
		label := "hub"
		if all {
			label = "hub + models/original + tinygpt steps"
		}
		fmt.Printf("| %s | %d | %d | %d | %d | %.3f | %.0f (%.0f) | %.0f (%.0f) | %.3f | %.2f |\n", label, len(files), raw, alone, st.Stored, float64(st.Stored)/float64(alone),
			float64(raw)/addTime.Seconds()/1e6, 2*float64(raw)/addCPU.Seconds()/1e6,
			float64(raw)/getTime.Seconds()/1e6, 2*float64(raw)/getCPU.Seconds()/1e6, worst, decodedPer)
		fmt.Printf("  units %v stored %d chunk files %d bytes %d\n", st.Units, st.Stored, st.Chunks, st.ChunkBytes)
	}
}
