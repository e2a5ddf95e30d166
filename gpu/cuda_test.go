//go:build linux && (amd64 || arm64)

package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"neuralzip/codec"
)

func TestCUDANoDriver(t *testing.T) {
	t.Setenv("NZIP_LIBCUDA", filepath.Join(t.TempDir(), "libcuda.so.1"))
	_, err := Open("cuda", 0)
	var u *Unavailable
	if !errors.As(err, &u) || !errors.Is(err, ErrUnavailable) || !strings.Contains(u.Reason, "no CUDA driver") {
		t.Fatalf("cuda without a driver: %v", err)
	}
	b, err := Open("auto", 1)
	if err != nil || b.Name() != "cpu" {
		t.Fatalf("auto without a driver: %v %v", b, err)
	}
}

// fake is the fake driver library, built once per test process: a
// library loaded once stays loaded, so every test shares it.
var fake struct {
	sync.Once
	path, skip string
	err        error
}

// fakeDriver builds kernels/fakecuda.cc (the kernels as C++ behind the
// driver API) and points the backend at it.
func fakeDriver(t *testing.T) Backend {
	t.Helper()
	fake.Do(func() {
		cxx, err := exec.LookPath("g++")
		if err != nil {
			fake.skip = "g++ not found (scripts/gpu-deps.sh installs it): skipping the CUDA backend test on the fake driver"
			return
		}
		dir, err := os.MkdirTemp("", "nzip-fakecuda")
		if err != nil {
			fake.err = err
			return
		}
		fake.path = filepath.Join(dir, "libcuda.so.1")
		out, err := exec.Command(cxx, "-O2", "-shared", "-fPIC", "-fno-exceptions", "-fno-rtti", "-Wall", "-Werror", "-o", fake.path, "kernels/fakecuda.cc").CombinedOutput()
		if err != nil {
			fake.err = fmt.Errorf("building the fake driver: %v\n%s", err, out)
		}
	})
	if fake.skip != "" {
		t.Skip(fake.skip)
	}
	if fake.err != nil {
		t.Fatal(fake.err)
	}
	t.Setenv("NZIP_LIBCUDA", fake.path)
	b, err := Open("cuda", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.Device(), "fake CUDA device") {
		t.Fatalf("device %q", b.Device())
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestCUDAFakeDriver runs the CUDA backend — purego bindings, kernel
// arguments, grids, copies, events — against the kernels compiled as C++,
// and compares every byte and the device histograms with the Go twin.
func TestCUDAFakeDriver(t *testing.T) { checkCUDA(t, fakeDriver(t)) }

// TestCUDARealDevice runs the fake driver's checks, the damaged archives
// and the real activations on a real CUDA device, where the system has
// one (and this process has not loaded the fake driver: run it alone,
// -run TestCUDARealDevice); elsewhere it is skipped.
func TestCUDARealDevice(t *testing.T) {
	if os.Getenv("NZIP_LIBCUDA") != "" {
		t.Skip("NZIP_LIBCUDA is set: not the system's driver")
	}
	b, err := Open("cuda", 0)
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	defer b.Close()
	if strings.Contains(b.Device(), "fake CUDA device") {
		t.Skip("the fake driver is loaded in this process: run -run TestCUDARealDevice alone")
	}
	t.Logf("device: %s", b.Device())
	checkCUDA(t, b)
	damageTrials(t, b, 13, 200)
	activationsSparse(t, b)
}

// checkCUDA compares the CUDA backend b with the Go twin: the edge file
// (every float dtype and edge value) at two block sizes, bytes and
// exponent histograms; an archive of the earlier encoder (1-stream
// Huffman blocks); a decode in small batches; the bench loop; the real
// corpus where present.
func checkCUDA(t *testing.T, b Backend) {
	rng := rand.New(rand.NewPCG(11, 12))
	src, segs := edgeFile(rng)
	for _, chunk := range []int{1000, 65536} {
		rd, ra := archive(t, src, segs, codec.EncodeOptions{ChunkValues: chunk})
		got := decodeWith(t, b, rd, ra, src)
		want := decodeWith(t, CPU(2), rd, ra, src)
		if got.ExpHist != want.ExpHist {
			t.Fatalf("chunk %d: device histogram differs from the twin's", chunk)
		}
		if got.DevBytes != want.DevBytes || got.DevBytes == 0 {
			t.Fatalf("device bytes %d, twin %d", got.DevBytes, want.DevBytes)
		}
	}
	// 1-stream Huffman blocks: an archive of the earlier encoder
	ord, ora, owant := oldArchive(t)
	got, want := decodeWith(t, b, ord, ora, owant), decodeWith(t, CPU(2), ord, ora, owant)
	if got.ExpHist != want.ExpHist || got.DevBytes != want.DevBytes || got.DevBytes == 0 {
		t.Fatalf("golden-v3-1x.nzip: device bytes %d, twin %d, histograms equal %v", got.DevBytes, want.DevBytes, got.ExpHist == want.ExpHist)
	}
	rd, ra := archive(t, src, segs, codec.EncodeOptions{ChunkValues: 1000})
	var buf bytes.Buffer
	if _, err := DecodeTo(context.Background(), &buf, rd, ra, 0, b, Options{BatchBytes: 30000}); err != nil || !bytes.Equal(buf.Bytes(), src) {
		t.Fatalf("batched decode on the fake device: %v", err)
	}
	if res, err := Bench(context.Background(), rd, ra, 0, b, 1<<20, 2); err != nil || res.Copies < 2 {
		t.Fatalf("bench on the fake device: %v (%d copies)", err, res.Copies)
	}
	if d := sharedDir(); d != "" && !testing.Short() {
		files, _ := filepath.Glob(filepath.Join(d, "models", "bench", "*.safetensors"))
		for _, f := range files {
			src, segs := loadSegments(t, f)
			rd, ra := archive(t, src, segs, codec.EncodeOptions{})
			res := decodeWith(t, b, rd, ra, src)
			t.Logf("%s: %d of %d bytes on %s, pairs included", filepath.Base(f), res.DevBytes, res.Bytes, b.Device())
		}
	} else {
		t.Log("../shared not present or -short: real files skipped")
	}
}

func TestCUDAFakeDriverCorrupt(t *testing.T) { damageTrials(t, fakeDriver(t), 13, 60) }

// TestCUDAFakeDriverSparse: the real activations' sparse blocks on the
// CUDA kernels (see TestActivationsSparse).
func TestCUDAFakeDriverSparse(t *testing.T) { activationsSparse(t, fakeDriver(t)) }

func init() {
	cleanupFake = func() {
		if fake.path != "" {
			os.RemoveAll(filepath.Dir(fake.path))
		}
	}
}
