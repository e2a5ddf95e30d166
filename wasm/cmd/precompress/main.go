// Command precompress writes FILE.gz and FILE.br next to each FILE given
// (best compression), for wasm/cmd/serve and static hosts that serve
// precompressed files, and prints the sizes. With -sizes OUT it writes a
// JSON object of the files' uncompressed sizes by base name (the loading
// screen's progress bar uses it).
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/andybalholm/brotli"
)

func main() {
	sizesOut := flag.String("sizes", "", "write the uncompressed sizes as JSON to this file")
	quality := flag.Int("brotli", 5, "brotli quality, 0-11 (11: about 10 % smaller than 5 and 60 times slower)")
	flag.Parse()
	sizes := map[string]int64{}
	for _, p := range flag.Args() {
		b, err := os.ReadFile(p)
		if err != nil {
			log.Fatal(err)
		}
		sizes[filepath.Base(p)] = int64(len(b))
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.Write(b)
		if err := zw.Close(); err != nil {
			log.Fatal(err)
		}
		var br bytes.Buffer
		bw := brotli.NewWriterOptions(&br, brotli.WriterOptions{Quality: *quality, LGWin: 24})
		bw.Write(b)
		if err := bw.Close(); err != nil {
			log.Fatal(err)
		}
		for _, out := range []struct {
			ext string
			b   []byte
		}{{".gz", gz.Bytes()}, {".br", br.Bytes()}} {
			if err := os.WriteFile(p+out.ext, out.b, 0o644); err != nil {
				log.Fatal(err)
			}
		}
		fmt.Printf("%s: %d bytes, gzip %d (%.1f MB), brotli %d (%.1f MB)\n", p, len(b), gz.Len(), float64(gz.Len())/1e6, br.Len(), float64(br.Len())/1e6)
	}
	if *sizesOut != "" {
		b, _ := json.Marshal(sizes)
		if err := os.WriteFile(*sizesOut, b, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
