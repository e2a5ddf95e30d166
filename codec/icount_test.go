package codec

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"testing"
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
	opt := Options{Threads: 1, SkipHash: true}
	if c := os.Getenv("NZ_ICOUNT_CHUNK"); c != "" {
		opt.ChunkValues, _ = strconv.Atoi(c)
	}
	if p := os.Getenv("NZ_ICOUNT_SETUP"); p != "" {
		b, _ := os.ReadFile(p)
		s, err := ParseSetup(b)
		if err != nil {
			t.Fatal(err)
		}
		opt.Setup = s
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
