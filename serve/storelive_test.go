package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"neuralzip/store"
)

// deadlock is how long a store write beside the server may take before a
// test calls it stuck (a guard, not a timing: it takes well under a
// second).
const deadlock = 2 * time.Minute

// writeStore opens the store at loc for writing, as nzip store add, rm and
// gc do from another process, runs fn and closes it; it fails the test if
// that does not end within the deadlock guard.
func writeStore(t *testing.T, loc string, fn func(*store.Store) error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		st, err := store.Open(loc, store.Options{LockWait: deadlock})
		if err != nil {
			done <- err
			return
		}
		err = fn(st)
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("writing the store beside the server: %v", err)
		}
	case <-time.After(deadlock + 10*time.Second):
		t.Fatal("writing the store beside the server: stuck (the server holds the store)")
	}
}

// waitListed asks for url until it answers want (the server reads the
// listing again on the request after a change; a slow machine may answer
// a request or two from the old one), failing after the deadlock guard.
func waitListed(t *testing.T, url string, want int) []byte {
	t.Helper()
	end := time.Now().Add(deadlock)
	for {
		resp, body := get(t, "GET", url)
		if resp.StatusCode == want {
			return body
		}
		if time.Now().After(end) {
			t.Fatalf("%s: %d %s, want %d", url, resp.StatusCode, body, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStoreLive serves a directory store while models are added to it,
// removed and collected, from this process as another one would: the
// writes are not held off by the server, downloads under way and ranges
// read meanwhile stay bit-exact, and the new model is listed (hub API,
// Hub page) and downloads bit-exact without a restart, the removed one
// leaves.
func TestStoreLive(t *testing.T) {
	dir, want := hubStore(t)
	srv := New(Config{Log: discard(), CacheBytes: 1 << 20})
	if err := srv.Add("", dir); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer func() { ts.Close(); srv.Close() }()
	if err := srv.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	hubPage(t, ts.URL) // the Hub page read (and kept) before the add

	// a whole-file download started before the add, read after it
	baseKey := "local/base/model.f32.safetensors"
	resp, err := http.Get(resolveURL(ts.URL, baseKey))
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 4096)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatal(err)
	}
	// ranges read without a pause all along
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var rangeErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		key := "stories/fortunes/full/model.bf16.safetensors"
		data := want[key]
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			lo := (i * 70_001) % (len(data) - 1)
			hi := min(lo+200_000, len(data))
			req, _ := http.NewRequest("GET", resolveURL(ts.URL, key), nil)
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", lo, hi-1))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				rangeErr = err
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 206 || !bytes.Equal(body, data[lo:hi]) {
				rangeErr = fmt.Errorf("%s %d-%d during the writes: %d, %d bytes, %v", key, lo, hi, resp.StatusCode, len(body), err)
				return
			}
		}
	}()

	ins, added := hubInputs(t, hubSource(t), "ft-frozen-embed")
	writeStore(t, dir, func(st *store.Store) error {
		_, _, err := st.Add("stories/frozen-embed", ins, store.AddOptions{})
		return err
	})
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := append(head, rest...); err != nil || !bytes.Equal(got, want[baseKey]) {
		t.Fatalf("%s, downloading while a model was added: %d bytes (%v), want %d equal", baseKey, len(got), err, len(want[baseKey]))
	}

	// the new model: listed, and its files download bit-exact
	body := waitListed(t, ts.URL+"/api/models/stories/frozen-embed", 200)
	var info struct {
		Siblings []struct{ RFilename string }
	}
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatal(err)
	}
	var sib []string
	for _, s := range info.Siblings {
		sib = append(sib, s.RFilename)
	}
	if !slices.Equal(sib, []string{"model.bf16.safetensors", "model.f32.safetensors"}) {
		t.Errorf("siblings of the added model: %q", sib)
	}
	for name, data := range added {
		key := "stories/frozen-embed/" + name
		if resp, body := get(t, "GET", resolveURL(ts.URL, key)); resp.StatusCode != 200 || !bytes.Equal(body, data) {
			t.Fatalf("%s (added while serving): %d, %d bytes, want %d equal", key, resp.StatusCode, len(body), len(data))
		}
		want[key] = data
	}
	if pg := hubPage(t, ts.URL); pg.Total != 5 || !hubHas(pg, "stories/frozen-embed", "stories/frozen-embed") {
		t.Errorf("Hub page after the add: %d models, the new one served: %v", pg.Total, hubHas(pg, "stories/frozen-embed", "stories/frozen-embed"))
	}

	// a model removed and the store collected while serving, one of its
	// files half downloaded: that download ends whole or fails, never with
	// other bytes; the model leaves, the others still download bit-exact
	goneKey := "stories/ft-continued/model.f32.safetensors"
	resp, err = http.Get(resolveURL(ts.URL, goneKey))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatal(err)
	}
	writeStore(t, dir, func(st *store.Store) error {
		if err := st.Remove("stories/ft-continued"); err != nil {
			return err
		}
		_, err := st.GC()
		return err
	})
	rest, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := append(head, rest...); err == nil && !bytes.Equal(got, want[goneKey]) {
		t.Fatalf("%s, downloading while its model was removed and collected: %d other bytes, complete-looking", goneKey, len(got))
	}
	waitListed(t, ts.URL+"/api/models/stories/ft-continued", 404)
	close(stop)
	wg.Wait()
	if rangeErr != nil {
		t.Fatal(rangeErr)
	}
	for key, data := range want {
		if strings.HasPrefix(key, "stories/ft-continued/") {
			continue
		}
		if resp, body := get(t, "GET", resolveURL(ts.URL, key)); resp.StatusCode != 200 || !bytes.Equal(body, data) {
			t.Fatalf("%s after rm and gc: %d, %d bytes, want %d equal", key, resp.StatusCode, len(body), len(data))
		}
	}
	if pg := hubPage(t, ts.URL); pg.Total != 4 || hubHas(pg, "stories/ft-continued", "") {
		t.Errorf("Hub page after the rm: %d models", pg.Total)
	}
	var ids []string
	for _, r := range srv.Repos() {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	if got := fmt.Sprint(ids); got != "[local/base stories/fortunes stories/frozen-embed]" {
		t.Errorf("repositories after the add and the rm: %s", got)
	}
}

// hubPage reads the first Hub page of the server's store.
func hubPage(t *testing.T, base string) *HubPage {
	t.Helper()
	resp, body := get(t, "GET", base+HubPath+"?limit=1000")
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", HubPath, resp.StatusCode, body)
	}
	pg, err := ParseHubPage(body)
	if err != nil {
		t.Fatal(err)
	}
	return pg
}

// hubHas reports whether a Hub page lists model name served by repo
// ("": any).
func hubHas(pg *HubPage, name, repo string) bool {
	for _, m := range pg.Models {
		if m.Name == name && (repo == "" || m.Repo == repo) {
			return true
		}
	}
	return false
}
