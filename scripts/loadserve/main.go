// Command loadserve is the long load test of nzip serve (docs/serve.md):
// for a fixed time, many clients on loopback ask for whole files (one
// request in four) and random ranges of up to 4 MiB of the given files,
// every byte compared with the original as it arrives, while the server
// process's resident memory is sampled. It prints requests, bytes, errors
// and the peak resident memory, and exits 1 on any error, any wrong byte or
// a peak above -max-rss.
//
//	go run ./scripts/loadserve -base URL -pid PID [-clients 64] [-dur 60s] [-max-rss 1073741824] REPO/PATH=FILE...
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	base := flag.String("base", "", "the server's URL (http://127.0.0.1:PORT)")
	pid := flag.Int("pid", 0, "the server's process id, to sample its resident memory (0: not sampled)")
	clients := flag.Int("clients", 64, "concurrent clients")
	dur := flag.Duration("dur", 60*time.Second, "how long the clients run")
	maxRSS := flag.Int64("max-rss", 1<<30, "the largest resident memory of the server allowed, in bytes")
	seed := flag.Uint64("seed", 1, "the requests' seed")
	flag.Parse()
	if err := run(*base, *pid, *clients, *dur, *maxRSS, *seed, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "loadserve:", err)
		os.Exit(1)
	}
}

type target struct {
	url  string
	data []byte
}

func run(base string, pid, clients int, dur time.Duration, maxRSS int64, seed uint64, args []string) error {
	if base == "" || len(args) == 0 {
		return errors.New("-base and at least one REPO/PATH=FILE are needed")
	}
	var ts []target
	for _, a := range args {
		key, file, ok := strings.Cut(a, "=")
		parts := strings.SplitN(key, "/", 3)
		if !ok || len(parts) != 3 {
			return fmt.Errorf("%q is not ORG/NAME/PATH=FILE", a)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		ts = append(ts, target{url: base + "/" + parts[0] + "/" + parts[1] + "/resolve/main/" + parts[2], data: data})
	}
	var peak atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if pid > 0 {
				if r, err := rss(pid); err == nil && r > peak.Load() {
					peak.Store(r)
				}
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var reqs, whole, got atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	start := time.Now()
	stop := start.Add(dur)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			for time.Now().Before(stop) {
				t := ts[rng.IntN(len(ts))]
				lo, hi := 0, len(t.data)
				req, _ := http.NewRequest("GET", t.url, nil)
				if rng.IntN(4) != 0 && len(t.data) > 0 {
					lo = rng.IntN(len(t.data))
					hi = lo + 1 + rng.IntN(min(len(t.data)-lo, 4<<20))
					req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", lo, hi-1))
				} else {
					whole.Add(1)
				}
				n, err := fetch(client, req, t.data[lo:hi])
				if err != nil {
					errs <- fmt.Errorf("%s bytes %d-%d: %w", t.url, lo, hi, err)
					return
				}
				reqs.Add(1)
				got.Add(n)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	close(stopSampling)
	<-sampled
	close(errs)
	var first error
	nerr := 0
	for err := range errs {
		if first == nil {
			first = err
		}
		nerr++
	}
	fmt.Printf("%d clients for %v: %d requests (%d whole files), %.0f MB, %.0f MB/s, %d errors", clients, el.Round(time.Second),
		reqs.Load(), whole.Load(), float64(got.Load())/1e6, float64(got.Load())/1e6/el.Seconds(), nerr)
	if pid > 0 {
		fmt.Printf(", server peak resident memory %d MiB (bound %d MiB)", peak.Load()>>20, maxRSS>>20)
	}
	fmt.Println()
	if first != nil {
		return first
	}
	if pid > 0 && peak.Load() > maxRSS {
		return fmt.Errorf("the server's resident memory reached %d bytes, above %d", peak.Load(), maxRSS)
	}
	return nil
}

// fetch sends req and compares the body with want as it arrives.
func fetch(client *http.Client, req *http.Request, want []byte) (int64, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 && resp.StatusCode != 206 {
		return 0, fmt.Errorf("status %s", resp.Status)
	}
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, err := resp.Body.Read(buf)
		if k > 0 {
			if n+int64(k) > int64(len(want)) || !bytes.Equal(buf[:k], want[n:n+int64(k)]) {
				return n, fmt.Errorf("wrong bytes at %d", n)
			}
			n += int64(k)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
	}
	if n != int64(len(want)) {
		return n, fmt.Errorf("%d bytes, want %d", n, len(want))
	}
	return n, nil
}

// rss reads a process's resident memory (VmRSS) from /proc.
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) < 1 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS")
}
