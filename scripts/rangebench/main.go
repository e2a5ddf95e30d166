// Command rangebench measures range requests against a file served over
// HTTP (nzip serve): for each client count, every client fetches random
// ranges of LEN bytes (cold: the first time each range is asked for), then
// the same ranges again (warm: blocks the server decoded are cached), and
// it prints the median and 99th-percentile latency of each. Every range's
// bytes are checked against the original file when -original is given.
//
//	go run ./scripts/rangebench -url URL [-original FILE] [-len 1048576] [-n 200] [-clients 1,16]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	u := flag.String("url", "", "the file's URL")
	orig := flag.String("original", "", "the original file, to compare every range with")
	n := flag.Int("n", 200, "ranges per client count")
	length := flag.Int64("len", 1<<20, "bytes per range")
	clients := flag.String("clients", "1,16", "client counts")
	seed := flag.Uint64("seed", 1, "the ranges' seed")
	flag.Parse()
	if err := run(*u, *orig, *n, *length, *clients, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "rangebench:", err)
		os.Exit(1)
	}
}

func run(u, origPath string, n int, length int64, clientList string, seed uint64) error {
	if u == "" {
		return fmt.Errorf("-url is needed")
	}
	resp, err := http.Head(u)
	if err != nil {
		return err
	}
	resp.Body.Close()
	size := resp.ContentLength
	if resp.StatusCode != http.StatusOK || size < length {
		return fmt.Errorf("HEAD %s: %s, %d bytes", u, resp.Status, size)
	}
	var orig *os.File
	if origPath != "" {
		if orig, err = os.Open(origPath); err != nil {
			return err
		}
		defer orig.Close()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	fmt.Printf("%s: %d bytes, %d ranges of %d bytes per client count\n", u, size, n, length)
	fmt.Println("| clients | cold median ms | cold p99 ms | warm median ms | warm p99 ms |")
	fmt.Println("|---|---|---|---|---|")
	for i, cs := range strings.Split(clientList, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(cs))
		if err != nil || c < 1 {
			return fmt.Errorf("-clients %q", clientList)
		}
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		offs := make([]int64, n)
		for j := range offs {
			offs[j] = rng.Int64N(size - length + 1)
		}
		cold, err := pass(client, u, orig, offs, length, c)
		if err != nil {
			return err
		}
		warm, err := pass(client, u, orig, offs, length, c)
		if err != nil {
			return err
		}
		fmt.Printf("| %d | %.1f | %.1f | %.1f | %.1f |\n", c, pct(cold, 50), pct(cold, 99), pct(warm, 50), pct(warm, 99))
	}
	return nil
}

// pass fetches the ranges at offs with c clients and returns each
// request's latency in ms.
func pass(client *http.Client, u string, orig *os.File, offs []int64, length int64, c int) ([]float64, error) {
	lat := make([]float64, len(offs))
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	next := make(chan int)
	go func() {
		for j := range offs {
			next <- j
		}
		close(next)
	}()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, length)
			want := make([]byte, length)
			for j := range next {
				t0 := time.Now()
				err := fetch(client, u, offs[j], buf)
				lat[j] = float64(time.Since(t0).Microseconds()) / 1000
				if err == nil && orig != nil {
					if _, err = orig.ReadAt(want, offs[j]); err == nil && !bytes.Equal(buf, want) {
						err = fmt.Errorf("bytes %d-%d differ from the original", offs[j], offs[j]+length-1)
					}
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return lat, first
}

func fetch(client *http.Client, u string, off int64, buf []byte) error {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+int64(len(buf))-1))
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent {
		return fmt.Errorf("bytes at %d: %s", off, resp.Status)
	}
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		return err
	}
	return nil
}

// pct is the p-th percentile of v (nearest rank).
func pct(v []float64, p float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	k := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(k, 0), len(s)-1)]
}
