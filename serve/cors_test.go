package serve

import (
	"net/http"
	"testing"
)

// TestCORS: without -cors no page may read the server (no CORS headers);
// with an origin listed, its requests get them, a preflight is answered
// before the token check, and other origins still get none.
func TestCORS(t *testing.T) {
	const page = "http://127.0.0.1:8000"
	off := newFixture(t, Config{})
	resp, _ := get(t, "GET", off.ts.URL+"/api/models/local/syn", "Origin", page)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("without CORS origins: %s, %q", resp.Status, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	f := newFixture(t, Config{CORSOrigins: []string{page}, Token: "s3cret"})
	resp, _ = get(t, "OPTIONS", f.ts.URL+"/local/syn/resolve/main/model.bin", "Origin", page,
		"Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "range, authorization")
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != page ||
		resp.Header.Get("Access-Control-Allow-Headers") == "" || resp.Header.Get("Access-Control-Allow-Methods") == "" {
		t.Fatalf("preflight: %s %v", resp.Status, resp.Header)
	}
	resp, b := get(t, "GET", f.ts.URL+"/local/syn/resolve/main/model.bin", "Origin", page, "Range", "bytes=10-19", "Authorization", "Bearer s3cret")
	if resp.StatusCode != http.StatusPartialContent || string(b) != string(f.files["local/syn/model.bin"][10:20]) ||
		resp.Header.Get("Access-Control-Allow-Origin") != page || resp.Header.Get("Access-Control-Expose-Headers") == "" {
		t.Fatalf("a ranged GET from the page: %s %v", resp.Status, resp.Header)
	}
	// the token still applies to real requests
	if resp, _ := get(t, "GET", f.ts.URL+"/local/syn/resolve/main/model.bin", "Origin", page); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %s", resp.Status)
	}
	// another origin: no CORS headers, and no preflight answer
	resp, _ = get(t, "OPTIONS", f.ts.URL+"/local/syn/resolve/main/model.bin", "Origin", "http://evil.example", "Access-Control-Request-Method", "GET")
	if resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.StatusCode == http.StatusNoContent {
		t.Errorf("another origin's preflight: %s %v", resp.Status, resp.Header)
	}
	any := newFixture(t, Config{CORSOrigins: []string{"*"}})
	if resp, _ := get(t, "HEAD", any.ts.URL+"/local/syn/resolve/main/config.json", "Origin", "http://x.example"); resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("-cors '*': %v", resp.Header)
	}
}
