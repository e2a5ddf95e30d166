package store

import (
	"bytes"
	"fmt"
	"path"
	"sync"
	"testing"
)

func TestHubRoundTrip(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	s, _ := tempStore(t)
	want := map[string][][]byte{}
	for _, f := range hubFiles {
		ins := inputs(t, path.Join(hub, f))
		m, st, err := s.Add(f, ins, AddOptions{Compare: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-42s raw %8d added %8d alone %8d  units %3d dedup %3d casts %3d deltas %3d coded %3d bases %v",
			f, m.Raw, m.Added, m.Alone, st.Units, st.Dedup, st.Casts, st.Deltas, st.Coded, m.Bases)
		want[f] = fileBytes(t, ins)
	}
	for f, w := range want {
		restore(t, s, f, w)
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("raw %d stored %d nzip %d ratio %.3f units %v", st.Raw, st.Stored, st.Alone, float64(st.Stored)/float64(st.Alone), st.Units)
	bad, err := s.Verify()
	if err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
}

// TestConcurrentGets restores every hub model from one store, six at a
// time, twice over: restores share the store's buffers and open chunk
// files, and each must still give its own file's bytes.
func TestConcurrentGets(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	s, _ := tempStore(t)
	want := addFiles(t, s, hub, hubFiles)
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(hubFiles))
	sem := make(chan struct{}, 6)
	for range 2 {
		for _, f := range hubFiles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				m, err := s.Model(f)
				if err != nil {
					errs <- err
					return
				}
				for fi := range m.Files {
					var buf bytes.Buffer
					if err := s.WriteFile(m, fi, &buf); err != nil {
						errs <- err
						return
					}
					if !bytes.Equal(buf.Bytes(), want[f][fi]) {
						errs <- fmt.Errorf("%s: file %d restores to other bytes", f, fi)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestVerifyDecodesOnce: verify keeps the units it has checked, so a base
// shared by deltas, casts and models is decoded once: on the hub it
// decodes fewer bytes than it restores (2.9 times as many before), and
// still finds every model intact.
func TestVerifyDecodesOnce(t *testing.T) {
	hub := shared(t, "hub/stories260K")
	s, _ := tempStore(t)
	want := addFiles(t, s, hub, hubFiles)
	var raw int64
	for _, w := range want {
		for _, b := range w {
			raw += int64(len(b))
		}
	}
	before := s.BytesDecoded()
	if bad, err := s.Verify(); err != nil || len(bad) > 0 {
		t.Fatal(err, bad)
	}
	if d := s.BytesDecoded() - before; d > raw {
		t.Fatalf("verify decoded %d bytes to restore %d", d, raw)
	}
	// gets after verify are served the checked units and restore them
	for f, w := range want {
		restore(t, s, f, w)
	}
}
