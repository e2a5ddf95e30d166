// Command serve serves the browser workbench built by `make web` on this
// machine only (127.0.0.1), with the right MIME types and the precompressed
// app.wasm.br / .gz.
//
//	go run ./wasm/cmd/serve [-addr 127.0.0.1:8080] [-dir wasm/www] [-models DIR]
//
// With -models, DIR's files are served under /models/, so that
// http://127.0.0.1:8080/?model=/models/NAME opens one.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"neuralzip/wasm/server"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on (loopback only; port 0: any free port)")
	dir := flag.String("dir", "wasm/www", "directory to serve (make web builds it)")
	models := flag.String("models", "", "directory served under /models/ (optional)")
	flag.Parse()
	if _, err := os.Stat(*dir + "/app.wasm"); err != nil {
		log.Fatalf("serve: %s/app.wasm missing: run make web first", *dir)
	}
	h, err := server.New(*dir, *models)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := server.Listen(*addr)
	if err != nil {
		log.Fatal(err)
	}
	// the line the browser tests wait for
	fmt.Printf("serving %s on http://%s/\n", *dir, ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}
