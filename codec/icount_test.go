//go:build unix

// (a measurement under callgrind: it reads the process's CPU time with
// syscall.Getrusage, which only unix systems have)

package codec

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestICount compresses (and decompresses) a file once; run under callgrind
// with --toggle-collect on CompressBytes / DecompressBytes for instruction
// counts: NZ_ICOUNT_FILE, optional NZ_ICOUNT_SETUP (a setup file).
func TestICount(t *testing.T) {
	f := os.Getenv("NZ_ICOUNT_FILE")
	if f == "" {
		t.Skip("set NZ_ICOUNT_FILE")
	}
	src, _ := os.ReadFile(f)
	segs := safetensorsSegments(src)
	// SHA-256 digests: the baseline (ops "none") computes the same, so the
	// differences count the coding alone
	opt := Options{Threads: 1, SkipHash: true, Digest: DigestSHA256}
	if c := os.Getenv("NZ_ICOUNT_CHUNK"); c != "" {
		opt.ChunkValues, _ = strconv.Atoi(c)
	}
	if p := os.Getenv("NZ_ICOUNT_SETUP"); p != "" {
		s := GaussianSetup()
		if p != GaussianSetupName {
			b, _ := os.ReadFile(p)
			var err error
			if s, err = ParseSetup(b); err != nil {
				t.Fatal(err)
			}
		}
		opt.Setup, opt.SetupExternal = s, s.IsGaussian()
		opt.SetupThreshold = 1e9
		if th := os.Getenv("NZ_ICOUNT_TH"); th == "default" {
			opt.SetupThreshold = 0
		} else if th != "" {
			opt.SetupThreshold, _ = strconv.ParseFloat(th, 64)
		}
	}
	ops := os.Getenv("NZ_ICOUNT_OPS")
	if ops == "none" {
		// the baseline includes the file's SHA-256, which compress always
		// computes, so that differences show the coding alone
		sha256.Sum256(src)
		return
	}
	if r, _ := strconv.Atoi(os.Getenv("NZ_ICOUNT_REPEAT")); r > 0 {
		cpuTimes(t, src, segs, opt, r)
		return
	}
	arc, _ := CompressBytes(src, segs, opt)
	if ops == "enc" {
		return
	}
	out, _ := DecompressBytes(arc, opt)
	os.WriteFile("/tmp/icount.ratio", []byte(fmt.Sprintf("%.4f %v", float64(len(src))/float64(len(arc)), len(out) == len(src))), 0o644)
}

func TestWriteSetupFile(t *testing.T) {
	f, out := os.Getenv("NZ_SETUP_FROM"), os.Getenv("NZ_SETUP_TO")
	if f == "" {
		t.Skip()
	}
	in, _ := fileInput(t, f)
	opt := SetupOptions{}
	if c := os.Getenv("NZ_ICOUNT_CHUNK"); c != "" {
		opt.ChunkValues, _ = strconv.Atoi(c)
	}
	if pb := os.Getenv("NZ_SETUP_PAIRBIAS"); pb != "" {
		opt.PairBias, _ = strconv.ParseFloat(pb, 64)
	}
	if k := os.Getenv("NZ_SETUP_K"); k != "" {
		opt.K, _ = strconv.Atoi(k)
		opt.MaxK = max(opt.K, 16)
	}
	s, err := BuildSetup([]Input{in}, opt)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(out, s.Bytes(), 0o644)
}

// cpuTimes prints the CPU time (user+system, of the whole process) per
// compress and per decompress, averaged over r runs each: unlike wall time
// it does not count the time other processes hold the CPU.
func cpuTimes(t *testing.T, src []byte, segs []Segment, opt Options, r int) {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	arc, err := CompressBytes(src, segs, opt)
	if err != nil {
		t.Fatal(err)
	}
	c0 := cpu()
	for range r {
		CompressBytes(src, segs, opt)
	}
	c1 := cpu()
	for range r {
		DecompressBytes(arc, opt)
	}
	c2 := cpu()
	mb := float64(len(src)) / 1e6
	fmt.Printf("ratio %.4f compress %.0f MB/s decompress %.0f MB/s (CPU time, %d runs)\n",
		float64(len(src))/float64(len(arc)), mb/((c1-c0).Seconds()/float64(r)), mb/((c2-c1).Seconds()/float64(r)), r)
}
