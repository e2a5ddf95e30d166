//go:build !js

package core

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"neuralzip/serve"
)

// serveStoreToken serves the store at loc as nzip serve -token-file does
// (every request must carry token) and returns its URL.
func serveStoreToken(t *testing.T, loc, token string) string {
	t.Helper()
	srv := serve.New(serve.Config{Log: log.New(io.Discard, "", 0), Token: token})
	if err := srv.Add("", loc); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return ts.URL
}

// TestServerToken: a store served with a token is refused without it
// (ErrToken, saying to give it) and with a wrong one (saying it was
// refused), and with it the Hub screen's reads all work (pages, a
// download, a model opened by ranges, the Open screen's URL of one of
// its repositories); the token goes to that server only, and no error
// shows it.
func TestServerToken(t *testing.T) {
	loc, _, names := hubTestStore(t)
	const token = "nz-3f9c2b7e1d"
	u := serveStoreToken(t, loc, token)
	t.Cleanup(func() { SetToken(u, "") })

	noToken := func(what string, err error, refused bool) {
		t.Helper()
		if !errors.Is(err, ErrToken) || strings.Contains(err.Error(), "refused") != refused || strings.Contains(err.Error(), token) {
			t.Errorf("%s: %v", what, err)
		}
	}
	_, _, err := OpenHubStore(context.Background(), u)
	noToken("no token", err, false)
	if !strings.Contains(err.Error(), "Bearer token field") {
		t.Errorf("no token: %v: does not say where to give it", err)
	}
	if err := SetToken(u+"/api/nzip/hub", "wrong"); err != nil {
		t.Fatal(err)
	}
	_, _, err = OpenHubStore(context.Background(), u)
	noToken("a wrong token", err, true)

	// any URL of the server sets its token (scheme in capitals, a path; spaces around the token go)
	if err := SetToken(strings.ToUpper(u[:4])+u[4:]+"/ORG/NAME", " "+token+"\n"); err != nil {
		t.Fatal(err)
	}
	if !hasToken(u) {
		t.Fatal("hasToken: false after SetToken")
	}
	h, hs, err := OpenHubStore(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	if len(h.Models) != len(names) {
		t.Fatalf("%d models listed, want %d", len(h.Models), len(names))
	}
	name := names[len(names)-1]
	if err := hs.Get(name, t.TempDir(), false); err != nil {
		t.Fatalf("get: %v", err)
	}
	m, err := hs.Open(name, nil)
	if err != nil {
		t.Fatalf("open by ranges: %v", err)
	}
	m.Close()
	repo := hs.web.models[name].Repo
	m, err = OpenURL(context.Background(), u+"/"+repo, nil)
	if err != nil {
		t.Fatalf("open URL %s: %v", u+"/"+repo, err)
	}
	m.Close()

	// the token forgotten: the Open screen's URL is refused
	SetToken(u, "")
	_, err = OpenURL(context.Background(), u+"/"+repo, nil)
	noToken("open URL without the token", err, false)

	// another server never sees the token
	var mu sync.Mutex
	var auth []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer other.Close()
	SetToken(u, token)
	OpenURL(context.Background(), other.URL+"/org/name", nil)
	OpenHubStore(context.Background(), other.URL)
	mu.Lock()
	defer mu.Unlock()
	if len(auth) == 0 || strings.Join(auth, "") != "" {
		t.Errorf("another server got %d requests with Authorization %q", len(auth), auth)
	}
}

// TestSetTokenErrors: what is not an http(s) URL, a token with spaces or
// control characters, and a URL holding a user or password are clear
// errors (the last one without the password).
func TestSetTokenErrors(t *testing.T) {
	for _, c := range []struct{ u, tok, want string }{
		{"ftp://host/x", "t", "not an http(s) URL"},
		{"127.0.0.1:8080", "t", "not an http(s) URL"},
		{"http://127.0.0.1:8080", "two words", "spaces or control characters"},
		{"http://127.0.0.1:8080", "a\x00b", "spaces or control characters"},
	} {
		if err := SetToken(c.u, c.tok); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SetToken(%q, %q): %v, want %q", c.u, c.tok, err, c.want)
		}
	}
	if hasToken("http://127.0.0.1:8080") {
		t.Error("a refused token was kept")
	}
	for _, open := range []func(string) error{
		func(u string) error { _, err := OpenURL(context.Background(), u, nil); return err },
		func(u string) error { _, _, err := OpenHubStore(context.Background(), u); return err },
	} {
		err := open("http://user:pa55word@127.0.0.1:1/org/name")
		if err == nil || !strings.Contains(err.Error(), "Bearer token field") || strings.Contains(err.Error(), "pa55word") {
			t.Errorf("a URL with a password: %v", err)
		}
	}
}

// TestTokenFromEnv: HF_TOKEN is the token of HF_ENDPOINT only, and
// nothing is set when either is missing.
func TestTokenFromEnv(t *testing.T) {
	env := map[string]string{"HF_TOKEN": "hf_abc"}
	if err := TokenFromEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	env["HF_ENDPOINT"] = "http://127.0.0.1:9"
	if hasToken(env["HF_ENDPOINT"]) {
		t.Fatal("a token without HF_ENDPOINT")
	}
	if err := TokenFromEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	defer SetToken(env["HF_ENDPOINT"], "")
	if !hasToken("http://127.0.0.1:9/org/name") || hasToken("http://127.0.0.1:10") {
		t.Error("HF_TOKEN not set for HF_ENDPOINT alone")
	}
	env["HF_TOKEN"] = "two words"
	if err := TokenFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("a bad HF_TOKEN: %v", err)
	}
}
