package crc32c

import (
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestCRC32C compares Update with hash/crc32, its twin, over every length
// up to a few folding steps, unaligned starts, non-zero initial states and
// real weights.
func TestCRC32C(t *testing.T) {
	if !useFold {
		t.Log("no VPCLMULQDQ here (or noasm): Update is hash/crc32 itself")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 8192+64)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	if Checksum(buf) != crc32.Checksum(buf, table) {
		t.Fatal("Checksum differs from hash/crc32")
	}
	check := func(crc uint32, p []byte) {
		t.Helper()
		if got, want := Update(crc, p), crc32.Update(crc, table, p); got != want {
			t.Fatalf("len %d crc %#x: %#x, hash/crc32 %#x", len(p), crc, got, want)
		}
	}
	for n := 0; n <= 4096+300; n++ {
		off := n % 64
		check(0, buf[off:off+n])
		check(uint32(n)*0x9e3779b9, buf[off:off+n])
	}
	// all-zero and all-one runs (fold products of zero, of every bit)
	z := make([]byte, 5000)
	check(0, z)
	check(0xffffffff, z)
	for i := range z {
		z[i] = 0xff
	}
	check(0, z)
	if d := "../../../shared"; dirExists(filepath.Join(d, "models")) {
		src, err := os.ReadFile(filepath.Join(d, "models/bench/real-bf16.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1024, 65536 + 17, len(src) - 3} {
			check(0, src[3:3+n])
		}
	}
}

// TestCRC32CChunks: folding in pieces gives the one-piece CRC.
func TestCRC32CChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := make([]byte, 100000)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	want := crc32.Checksum(p, table)
	for _, step := range []int{1, 1000, 1024, 4097, 65536} {
		var c uint32
		for i := 0; i < len(p); i += step {
			c = Update(c, p[i:min(i+step, len(p))])
		}
		if c != want {
			t.Fatalf("pieces of %d: %#x, want %#x", step, c, want)
		}
	}
}

// TestCRCFoldConstants derives crc32c_amd64.s's folding constants from the
// polynomial, reflect32(x^(F±32) mod P) << 1 for a distance of F bits, and
// compares them with the DATA lines of the assembly.
func TestCRCFoldConstants(t *testing.T) {
	xnmod := func(n int) uint32 { // x^n mod P, P = x^32 + 0x1EDC6F41 (not reflected)
		r := uint32(1)
		for i := 0; i < n; i++ {
			top := r & 0x80000000
			r <<= 1
			if top != 0 {
				r ^= 0x1EDC6F41
			}
		}
		return r
	}
	k := func(n int) uint64 { return uint64(bits.Reverse32(xnmod(n))) << 1 }
	src, err := os.ReadFile("crc32c_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	data := regexp.MustCompile(`DATA crcK(\d+)<>\+(\d+)\(SB\)/8, \$(0x[0-9a-f]+)`).FindAllStringSubmatch(string(src), -1)
	if len(data) != 6 {
		t.Fatalf("%d folding constants in crc32c_amd64.s, want 6", len(data))
	}
	for _, m := range data {
		f, _ := strconv.Atoi(m[1])
		v, _ := strconv.ParseUint(m[3], 0, 64)
		want := k(f + 32) // low qword
		if m[2] == "8" {
			want = k(f - 32) // high qword
		}
		if v != want {
			t.Errorf("crcK%d+%s: assembly has %#x, derived %#x", f, m[2], v, want)
		}
	}
}

func BenchmarkCRC32C(b *testing.B) {
	p := make([]byte, 65536)
	for i := range p {
		p[i] = byte(i * 7)
	}
	b.Run("fold", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		b.ReportAllocs()
		for b.Loop() {
			Checksum(p)
		}
	})
	b.Run("hash-crc32", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		b.ReportAllocs()
		for b.Loop() {
			crc32.Checksum(p, table)
		}
	})
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
