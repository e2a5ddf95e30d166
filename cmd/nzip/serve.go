package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"neuralzip/serve"
	"neuralzip/store"
)

// runServe serves archives and directories over HTTP (package serve).
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", "[-addr 127.0.0.1:8080] [-token-file F] [-cors ORIGINS] [-threads N] [-max-decodes N] [-cache-bytes N] [-cache-dir D] [ORG/NAME=]SOURCE... [ORG=]STORE...", stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (loopback unless you name another)")
	tokenFile := fs.String("token-file", "", "file holding a bearer token every request must carry (Authorization: Bearer ...)")
	corsList := fs.String("cors", "", "comma-separated web origins whose pages may read the server (\"*\": any), e.g. the browser workbench's http://127.0.0.1:8000 for Open URL")
	threads := fs.Int("threads", 0, "blocks one response decodes at once (0: all cores)")
	maxDecodes := fs.Int("max-decodes", 0, "responses that decode at once, others wait (0: twice the cores)")
	cacheBytes := fs.Int64("cache-bytes", serve.DefaultCacheBytes, "bytes of decoded blocks kept in memory for ranges (0: none)")
	cacheDir := fs.String("cache-dir", defaultServeCache(), "where the SHA-256 of archived files is kept between runs (\"\": nowhere)")
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(stderr, serveStoreHelp)
	}
	if err := parse(fs, args, 1, -1); err != nil {
		return err
	}
	cfg := serve.Config{Threads: *threads, MaxDecodes: *maxDecodes, CacheDir: *cacheDir, CacheBytes: cacheFlag(*cacheBytes),
		Log: log.New(stderr, "", log.LstdFlags)}
	for _, o := range strings.Split(*corsList, ",") {
		if o = strings.TrimSpace(o); o != "" {
			cfg.CORSOrigins = append(cfg.CORSOrigins, o)
		}
	}
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return err
		}
		cfg.Token = strings.TrimSpace(string(b))
		if cfg.Token == "" {
			return fmt.Errorf("serve: %s holds no token", *tokenFile)
		}
	}
	srv := serve.New(cfg)
	defer srv.Close()
	for _, a := range fs.Args() {
		id, src := splitSource(a)
		if err := srv.Add(id, src); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	host := ln.Addr().String()
	if !isLoopback(ln.Addr()) {
		who := "anyone who can reach it"
		if cfg.Token != "" {
			who = "anyone who can reach it and holds the token"
		}
		var ids []string
		for _, r := range srv.Repos() {
			ids = append(ids, r.ID)
		}
		fmt.Fprintf(stderr, "nzip serve: warning: listening on %s, not loopback: %s can read %s\n", host, who, strings.Join(ids, ", "))
	}
	for _, r := range srv.Repos() {
		fmt.Fprintf(stdout, "%s: %s %s, %d files, %d bytes\n", r.ID, r.Kind, r.Source, r.Files, r.Bytes)
	}
	fmt.Fprintf(stdout, "nzip serve: listening on http://%s (HF_ENDPOINT=http://%s)\n", host, host)
	for _, r := range srv.Repos() {
		if r.Kind == "store" {
			fmt.Fprintf(stdout, "nzip serve: the workbench's Hub screen opens the store at http://%s (GET %s; ?store=K: the K-th store named, from 0)\n", host, serve.HubPath)
			break
		}
	}
	srv.Start(ctx)
	hs := serve.NewHTTPServer(*addr, srv)
	hs.ErrorLog = cfg.Log
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// serveStoreHelp ends serve's usage: how a served store behaves.
const serveStoreHelp = `A STORE stays writable: nzip store add, rm, gc and repack run while it is served (the
server holds the store's index only while a request reads it), and models added or
removed show in the listings from the next request on, without a restart; a download
under way completes with the original bytes or fails, never with other bytes.
`

// splitSource splits "ORG/NAME=SOURCE" (or "ORG=STORE"); an argument whose part before the
// first '=' is not a repository name is a source alone.
func splitSource(a string) (id, src string) {
	left, right, ok := strings.Cut(a, "=")
	if !ok {
		return "", a
	}
	if serve.ValidRepoPart(left) && store.IsStore(right) {
		return left, right // ORG=STORE: the organisation of one-part model names
	}
	org, name, ok := strings.Cut(left, "/")
	if !ok || !serve.ValidRepoPart(org) || !serve.ValidRepoPart(name) {
		return "", a
	}
	return left, right
}

// isLoopback reports whether a listener's address is a loopback one.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// defaultServeCache is the user's cache directory's nzip/serve-sha256.
func defaultServeCache() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "nzip", "serve-sha256")
}

// cacheFlag turns -cache-bytes (0: none) into serve.Config.CacheBytes
// (0: the default, negative: none).
func cacheFlag(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}
