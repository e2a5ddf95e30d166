package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"neuralzip/dtype"
)

// quantisedTensors returns n uint8 tensors of size bytes each, made as
// TF.js quantises weights (a scale and a minimum per tensor) from
// trained-like values (realisticValues) whose rows have scales of their
// own, and a JSON header before them: a weights file of quantised layers,
// with the segments that describe it (U8 tensors, which the float coder
// does not take).
func quantisedTensors(n, size int, seed uint64) ([]byte, []Segment) {
	src := []byte(`{"format": "layers-model", "weightsManifest": [{"paths": ["group1-shard1of1.bin"]}]}`)
	segs := []Segment{{Length: int64(len(src))}}
	r := rand.New(rand.NewPCG(seed, 3))
	for t := range n {
		v := realisticValues(dtype.F32, size, seed+uint64(t))
		w := make([]float64, size)
		lo, hi := math.Inf(1), math.Inf(-1)
		scale := 1.0
		for i := range w {
			if i%64 == 0 {
				scale = math.Exp(r.NormFloat64() * 0.4)
			}
			w[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(v[4*i:]))) * scale
			lo, hi = min(lo, w[i]), max(hi, w[i])
		}
		segs = append(segs, Segment{Name: "layer" + string(rune('a'+t)) + "/kernel", DType: dtype.U8, Shape: []int64{int64(size / 64), 64}, Offset: int64(len(src)), Length: int64(size)})
		for _, x := range w {
			src = append(src, byte(math.Round((x-lo)/(hi-lo)*255)))
		}
	}
	return src, segs
}

// TestCMBlocks: by bytes alone (Best) quantised weights (uint8 tensors,
// planned as one-byte records: version 12) are coded as cm blocks,
// smaller than the records' streams and zstd's blocks of them, the same
// at any thread count; the default path (records blocks), -no-sparse and
// a zstd level below cmMinLevel (with Best) write no cm blocks.
func TestCMBlocks(t *testing.T) {
	src, segs := quantisedTensors(3, 300000, 1)
	arc := roundTrip(t, src, segs, EncodeOptions{Threads: 1, Best: true})
	if v := binary.LittleEndian.Uint16(arc[8:]); v != byteRecordsVersion {
		t.Fatalf("version %d, want %d", v, byteRecordsVersion)
	}
	c := censusOf(t, arc)
	if c.CM == 0 || c.CMBytes < int64(len(src))/2 {
		t.Fatalf("census: %d cm blocks of %d bytes, want most of %d", c.CM, c.CMBytes, len(src))
	}
	if notes := c.Notes(func(s string) string { return s }, func(n int64) string { return "" }); !strings.Contains(strings.Join(notes, "\n"), "adaptive byte models") {
		t.Errorf("notes do not tell the cm blocks: %q", notes)
	}
	if three := roundTrip(t, src, segs, EncodeOptions{Threads: 3, Best: true}); !bytes.Equal(three, arc) {
		t.Fatal("archives differ at 1 and 3 threads")
	}
	old := roundTrip(t, src, segs, EncodeOptions{NoSparse: true})
	def := roundTrip(t, src, segs, EncodeOptions{})
	if v, c := binary.LittleEndian.Uint16(def[8:]), censusOf(t, def); v != byteRecordsVersion || c.CM != 0 {
		t.Fatalf("default path: version %d, %d cm blocks; want %d, none", v, c.CM, byteRecordsVersion)
	}
	if c := censusOf(t, old); c.CM != 0 {
		t.Fatalf("-no-sparse: %d cm blocks", c.CM)
	}
	fast := roundTrip(t, src, segs, EncodeOptions{ZstdLevel: cmMinLevel - 1, Best: true})
	if c := censusOf(t, fast); c.CM != 0 {
		t.Fatalf("zstd level %d: %d cm blocks; want none", cmMinLevel-1, c.CM)
	}
	if len(arc) >= len(old) {
		t.Fatalf("cm blocks: %d bytes, zstd's %d", len(arc), len(old))
	}
	t.Logf("%d bytes: %d with cm blocks, %d without", len(src), len(arc), len(old))
}

// TestCMVersion: a cm block in an archive of version 9 is refused by the
// index reader with a clear error.
func TestCMVersion(t *testing.T) {
	src, segs := quantisedTensors(1, 20000, 2)
	arc := roundTrip(t, src, segs, EncodeOptions{Best: true})
	old := bytes.Clone(arc)
	binary.LittleEndian.PutUint16(old[8:], lzPlanesVersion)
	_, err := DecompressBytes(context.Background(), old, DecodeOptions{})
	if err == nil || !strings.Contains(err.Error(), "unknown kind 5") {
		t.Fatalf("cm block in a version 9 archive: %v", err)
	}
}

// TestProbeOpaque: the plan-time probe that decides format version 10
// finds quantised weights, and not text, random bytes, floats or a block
// too small to try.
func TestProbeOpaque(t *testing.T) {
	q, _ := quantisedTensors(1, 100000, 3)
	random := make([]byte, 100000)
	r := rand.New(rand.NewPCG(4, 5))
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	text := bytes.Repeat([]byte(`{"name": "conv/kernel", "shape": [3, 3, 8, 16], "dtype": "float32", "offset": 1234}, `), 1200)
	for _, c := range []struct {
		name string
		p    []byte
		want bool
	}{
		{"quantised", q, true},
		{"small", q[:cmMinBytes-1], false},
		{"text", text, false},
		{"random", random, false},
		{"floats", realisticValues(dtype.F32, 30000, 6), false},
		// reads spread over a length that is not a multiple of 8 must
		// still line the float lanes up
		{"floats and 2 bytes", append(realisticValues(dtype.F32, 30000, 6), 1, 2), false},
		{"bf16", realisticValues(dtype.BF16, 60000, 7), false},
	} {
		plans, err := planBlocks(nil, int64(len(c.p)), DefaultChunkValues, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := probeOpaque(bytes.NewReader(c.p), plans); err != nil || got != c.want {
			t.Errorf("%s: probe %v (%v), want %v", c.name, got, err, c.want)
		}
	}
}

// TestCMReal: by bytes alone (Best), handtrack's weights file codes below
// xz -6 (scripts/bench-general.sh measures it: 2,271,760 bytes with xz
// 5.4.1) through cm blocks; the default path, where cm blocks save too
// little (1.8 % here) to pay for decoding some 15 times slower (cost.go),
// codes it with zstd.
func TestCMReal(t *testing.T) {
	bin := realFile(t, filepath.Join("models", "original", "handtrack", "handtrack.bin"))
	best := roundTrip(t, bin, nil, EncodeOptions{Best: true})
	if c := censusOf(t, best); c.CM == 0 || len(best) >= 2271760 {
		t.Fatalf("handtrack.bin, Best: %d bytes in %d cm blocks, xz -6 2271760", len(best), c.CM)
	}
	def := roundTrip(t, bin, nil, EncodeOptions{})
	if c := censusOf(t, def); c.CM != 0 {
		t.Fatalf("handtrack.bin, default: %d cm blocks", c.CM)
	}
	t.Logf("handtrack.bin: %d bytes by bytes alone, %d by default", len(best), len(def))
}

// cmInput is the golden cm archive's input: two small quantised tensors.
func cmInput() ([]byte, []Segment) { return quantisedTensors(2, 6000, 8) }

// TestGoldenCM: the golden archive of the cm input decodes to it, holds
// cm blocks, and the encoder (by bytes alone, Best: the default path
// writes no cm blocks) still writes it byte for byte; its uint8 tensors
// are planned as one-byte records, so it is of version 12.
// golden-cm-v10.nzip, written before that (opaque runs, version 10),
// still decodes to the same bytes.
func TestGoldenCM(t *testing.T) {
	path := filepath.Join("testdata", "golden-cm-v12.nzip")
	src, segs := cmInput()
	arc := roundTrip(t, src, segs, EncodeOptions{Threads: 2, Best: true})
	golden := checkGolden(t, path, arc, src, byteRecordsVersion)
	if c := censusOf(t, golden); c.CM == 0 {
		t.Fatalf("golden archive holds no cm blocks: %+v", c)
	}
	old, err := os.ReadFile(filepath.Join("testdata", "golden-cm-v10.nzip"))
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(old[8:]); v != cmVersion {
		t.Fatalf("golden-cm-v10.nzip is of version %d", v)
	}
	out, err := DecompressBytes(context.Background(), old, DecodeOptions{})
	if err != nil || !bytes.Equal(out, src) {
		t.Fatalf("golden-cm-v10.nzip does not decode to its input (%v)", err)
	}
	if c := censusOf(t, old); c.CM == 0 {
		t.Fatalf("golden-cm-v10.nzip holds no cm blocks: %+v", c)
	}
}
