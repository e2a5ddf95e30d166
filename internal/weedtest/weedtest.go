//go:build !js

// Package weedtest runs a real S3 server for tests: SeaweedFS's weed
// server -s3, started on 127.0.0.1 once per test binary (scripts/seaweedfs.sh
// builds it from the module the Go proxy serves and caches it; make test
// runs the script). NZ_WEED names the binary; without it the cached one is
// used, else the tests that need it skip.
package weedtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

var weed struct {
	sync.Once
	endpoint string
	err      error
	cmd      *exec.Cmd
	dir      string
	buckets  atomic.Int64
}

// binary finds the weed binary, or "".
func binary() string {
	if p := os.Getenv("NZ_WEED"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	cache := os.Getenv("NZ_WEED_CACHE")
	if cache == "" {
		cache = filepath.Join(home, ".cache", "nzip-weed")
	}
	m, _ := filepath.Glob(filepath.Join(cache, "weed-v*"))
	for _, p := range m {
		if !strings.HasSuffix(p, ".tmp") {
			return p
		}
	}
	return ""
}

// freePort returns a free TCP port on 127.0.0.1 below 50000 (weed also
// listens on port+10000 for gRPC).
func freePort() (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if p < 50000 {
			if l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+10000)); err == nil {
				l2.Close()
				return p, nil
			}
		}
	}
	return 0, errors.New("no free port")
}

// Bucket starts the server (once; Stop ends it), points the S3 clients of
// this process at it (AWS_ENDPOINT_URL, no keys, for the test) and makes a
// fresh bucket for the test, whose name it returns. Under -short, or
// without a weed binary, it skips the test.
func Bucket(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the S3 server tests are skipped")
	}
	bin := binary()
	if bin == "" {
		t.Skip("no SeaweedFS binary (scripts/seaweedfs.sh builds it; NZ_WEED names one): skipping the s3:// tests")
	}
	weed.Do(func() { weed.endpoint, weed.err = start(bin) })
	if weed.err != nil {
		t.Fatal(weed.err)
	}
	t.Setenv("AWS_ENDPOINT_URL", weed.endpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	// one bucket per test run (go test -count=N runs a test again on the same server)
	bucket := fmt.Sprintf("%s-%d", strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())), weed.buckets.Add(1))
	if len(bucket) > 63 {
		bucket = fmt.Sprintf("%s-%d", strings.Trim(bucket[:50], "-"), weed.buckets.Add(1))
	}
	cl, err := minio.New(strings.TrimPrefix(weed.endpoint, "http://"), &minio.Options{Creds: credentials.NewStatic("", "", "", credentials.SignatureAnonymous)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err = cl.MakeBucket(ctx, bucket, minio.MakeBucketOptions{})
		if err == nil || minio.ToErrorResponse(err).Code == "BucketAlreadyOwnedByYou" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("make bucket %s: %v", bucket, err)
		}
		time.Sleep(500 * time.Millisecond) // the filer may still be starting
	}
	return bucket
}

func start(bin string) (string, error) {
	dir, err := os.MkdirTemp("", "nzip-weed-")
	if err != nil {
		return "", err
	}
	weed.dir = dir
	var ports [4]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return "", err
		}
	}
	cmd := exec.Command(bin, "server", "-dir="+dir, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		fmt.Sprintf("-master.port=%d", ports[0]), fmt.Sprintf("-volume.port=%d", ports[1]),
		fmt.Sprintf("-filer.port=%d", ports[2]), "-s3", fmt.Sprintf("-s3.port=%d", ports[3]),
		"-master.volumeSizeLimitMB=64", "-volume.max=200")
	logf, _ := os.Create(filepath.Join(dir, "weed.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return "", err
	}
	weed.cmd = cmd
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", ports[3])
	// wait until the S3 gateway lists buckets
	deadline := time.Now().Add(90 * time.Second)
	for {
		if r, err := http.Get(endpoint + "/"); err == nil {
			r.Body.Close()
			if r.StatusCode < 500 {
				return endpoint, nil
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "weed.log"))
			if len(log) > 2000 {
				log = log[len(log)-2000:]
			}
			return "", fmt.Errorf("weed server did not answer on %s within 90 s; its log ends: %s", endpoint, log)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// Stop ends the server (call it from TestMain after m.Run).
func Stop() {
	if weed.cmd != nil {
		weed.cmd.Process.Kill()
		weed.cmd.Wait()
	}
	if weed.dir != "" {
		os.RemoveAll(weed.dir)
	}
}
