package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"neuralzip/store"
)

var hubSeed = flag.Bool("hubseed", false, "write TestHubEndpoint's first page into testdata/fuzz/FuzzParseHubPage")

// TestHubEndpoint reads a store's hub pages: every model once, in store
// order, with its repository and served paths, the matrix rows ReadHub
// computes, bounded pages, and clear refusals of bad parameters and
// methods; a server without a store says it serves none.
func TestHubEndpoint(t *testing.T) {
	dir, want := hubStore(t)
	srv := New(Config{Log: discard()})
	if err := srv.Add("", dir); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer func() { ts.Close(); srv.Close() }()

	st, err := store.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := ReadHub(context.Background(), st)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !ix.Matrix || len(ix.Models) != 4 {
		t.Fatalf("ReadHub: matrix %v, %d models", ix.Matrix, len(ix.Models))
	}

	var got []HubModel
	pages := 0
	for from := 0; ; pages++ {
		resp, body := get(t, "GET", fmt.Sprintf("%s%s?from=%d&limit=3", ts.URL, HubPath, from))
		if resp.StatusCode != 200 {
			t.Fatalf("from %d: %d %s", from, resp.StatusCode, body)
		}
		if pages == 0 && *hubSeed {
			writeSeed(t, "FuzzParseHubPage", body)
		}
		p, err := ParseHubPage(body)
		if err != nil {
			t.Fatalf("from %d: %v", from, err)
		}
		if p.Total != 4 || p.From != from || !p.Matrix || p.Stores != 1 || p.Name != filepath.Base(dir) || len(p.Models) > 3 {
			t.Fatalf("page from %d: %+v", from, p)
		}
		got = append(got, p.Models...)
		if p.Next == 0 {
			break
		}
		from = p.Next
	}
	if pages != 1 || len(got) != 4 {
		t.Fatalf("%d pages, %d models; want 2 pages of 4 models", pages+1, len(got))
	}
	served := 0
	for i, m := range got {
		if m.Repo == "" {
			t.Errorf("%s: no repository", m.Name)
		}
		for _, f := range m.Files {
			if want[m.Repo+"/"+f.Path] != nil {
				served++
			}
		}
		// the page's model is ReadHub's with where it is served
		w := ix.Models[i]
		for k := range w.Files {
			w.Files[k].Path = m.Files[k].Path
		}
		w.Repo = m.Repo
		if !reflect.DeepEqual(m, w) {
			t.Errorf("model %d:\n%+v\nReadHub:\n%+v", i, m, w)
		}
	}
	if served != len(want) {
		t.Errorf("%d of %d files at their served paths", served, len(want))
	}

	for _, q := range []string{"?from=-1", "?limit=0", fmt.Sprintf("?limit=%d", HubPageMax+1), "?store=1", "?from=x"} {
		if resp, body := get(t, "GET", ts.URL+HubPath+q); resp.StatusCode != 400 {
			t.Errorf("%s: %d %s, want 400", q, resp.StatusCode, body)
		}
	}
	if resp, body := get(t, "GET", ts.URL+HubPath+"?from=99"); resp.StatusCode != 200 || !strings.Contains(string(body), `"models":[]`) {
		t.Errorf("from past the end: %d %s, want an empty last page", resp.StatusCode, body)
	}
	if resp, _ := get(t, "POST", ts.URL+HubPath); resp.StatusCode != 405 {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}

	f := newFixture(t, Config{Log: discard()})
	resp, body := get(t, "GET", f.ts.URL+HubPath)
	if resp.StatusCode != 404 || resp.Header.Get("X-Error-Code") != "NoStore" || !strings.Contains(string(body), "serves no store") {
		t.Errorf("a server of no store: %d %q %s", resp.StatusCode, resp.Header.Get("X-Error-Code"), body)
	}
}

// writeSeed adds b to the seed corpus of fuzz target name.
func writeSeed(t *testing.T, name string, b []byte) {
	d := filepath.Join("testdata", "fuzz", name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	s := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
	if err := os.WriteFile(filepath.Join(d, "real-page"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseHubPage: ParseHubPage never panics, and a page it accepts
// encodes to JSON it accepts again as the same page. Seeds: a real page
// (testdata/fuzz/FuzzParseHubPage/real-page, TestHubEndpoint -hubseed)
// and hand-made ones.
func FuzzParseHubPage(f *testing.F) {
	for _, s := range []string{
		`{"format":"nzip-hub/1","store":0,"stores":1,"total":0,"from":0,"models":[]}`,
		`{"format":"nzip-hub/1","stores":1,"total":2,"matrix":true,"from":0,"next":1,"models":[{"name":"a","files":[{"name":"x","size":3,"sha256":"` + strings.Repeat("ab", 32) + `"}],"shared":[[1,5]],"near":[[1,2]]}]}`,
		`{"format":"nzip-hub/1","stores":1,"total":1,"from":0,"models":[{"name":"a","shared":[[0,1]]}]}`,
		`{"format":"nzip-hub/1","stores":1,"total":3,"from":0,"next":7,"models":[]}`,
		`[]`, `null`, `{"format":"nzip-hub/2"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseHubPage(b)
		if err != nil {
			return
		}
		enc, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := ParseHubPage(enc)
		if err != nil {
			t.Fatalf("re-encoded page refused: %v\n%s", err, enc)
		}
		enc2, _ := json.Marshal(q)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("page changed on re-encoding:\n%s\n%s", enc, enc2)
		}
	})
}
