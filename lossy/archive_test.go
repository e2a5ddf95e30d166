package lossy

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/codec/crc32c"
	"neuralzip/dtype"
)

var updateSeeds = flag.Bool("update-seeds", false, "rewrite the committed fuzz seeds of FuzzLossyArchive (testdata/fuzz) from ../shared")

// stEntry is a tensor for miniSafetensors.
type stEntry struct {
	name  string
	dt    dtype.DType
	shape []int
	data  []byte
}

// miniSafetensors writes a safetensors file of the given tensors.
func miniSafetensors(ts []stEntry) []byte {
	hdr := map[string]any{}
	var data []byte
	for _, t := range ts {
		hdr[t.name] = map[string]any{"dtype": t.dt.String(), "shape": t.shape, "data_offsets": []int{len(data), len(data) + len(t.data)}}
		data = append(data, t.data...)
	}
	h, _ := json.Marshal(hdr)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

func randMatrix(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * 0.05)
	}
	v[n/3] = 0.9 // an outlier
	return v
}

func typed(d dtype.DType, v []float32) []byte {
	b := make([]byte, len(v)*d.Size())
	Store(d, b, v)
	return b
}

// TestDecodeTwins: each archivable method's decoder gives its coder's
// reconstruction bit for bit.
func TestDecodeTwins(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, name := range ArchiveMethods {
		m, ok := archivable(name)
		if !ok {
			t.Fatalf("%s: not archivable", name)
		}
		for _, sh := range [][2]int{{16, 24}, {3, 100}, {64, 64}, {5, 7}, {1, 257}, {70, 128}} {
			v := randMatrix(rng, sh[0]*sh[1])
			for _, bits := range []float64{2, 4.5} {
				coded, recon, err := m.Code(v, sh[0], sh[1], bits)
				if err != nil {
					t.Fatal(err)
				}
				got, err := decodeCoded(name, coded, sh[0], sh[1])
				if err != nil {
					t.Fatalf("%s %v: %v", name, sh, err)
				}
				for i := range recon {
					if math.Float32bits(got[i]) != math.Float32bits(recon[i]) {
						t.Fatalf("%s %v: value %d decodes to %g, the coder made %g", name, sh, i, got[i], recon[i])
					}
				}
				if _, err := decodeCoded(name, coded[:len(coded)-1], sh[0], sh[1]); err == nil {
					t.Errorf("%s %v: a truncated stream decodes", name, sh)
				}
			}
		}
	}
}

// tinyModel is a safetensors file of three matrices of every float type
// and a vector (kept as stored).
func tinyModel() []byte {
	rng := rand.New(rand.NewPCG(7, 8))
	return miniSafetensors([]stEntry{
		{"a.weight", dtype.BF16, []int{32, 64}, typed(dtype.BF16, randMatrix(rng, 32*64))},
		{"b.weight", dtype.F32, []int{8, 4, 12}, typed(dtype.F32, randMatrix(rng, 8*48))},
		{"c.weight", dtype.F16, []int{24, 16}, typed(dtype.F16, randMatrix(rng, 24*16))},
		{"norm", dtype.F32, []int{64}, typed(dtype.F32, randMatrix(rng, 64))},
	})
}

func layoutOf(t testing.TB, b []byte) *checkpoint.Layout {
	l, err := checkpoint.Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestArchiveRoundTrip: a quantized model reads back as a file of the
// original's layout whose raw bytes are the original's and whose tensors
// are the method's reconstruction in their own type; its header says it is
// lossy and records the measured error; ReadAt agrees with WriteTo.
func TestArchiveRoundTrip(t *testing.T) {
	src := tinyModel()
	l := layoutOf(t, src)
	for _, name := range ArchiveMethods {
		bits := FixedBits(name)
		if bits == 0 {
			bits = 3
		}
		ar, h, err := Quantize(src, l, name, bits)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(ar, codec.LossyMagic[:]) || !bytes.Contains(ar[:200], []byte(`"lossy":"LOSSY:`)) {
			t.Errorf("%s: the archive does not start by saying it is lossy: %q", name, ar[:60])
		}
		a, err := OpenArchive(ar)
		if err != nil {
			t.Fatal(err)
		}
		if a.Header.Method != name || a.Header.Original.Format != "safetensors" || a.Header.Original.Size != int64(len(src)) ||
			!(a.Header.RelL2 > 0 && a.Header.RelL2 < 0.5) || a.Tensors() != 3 || h.RelL2 != a.Header.RelL2 {
			t.Errorf("%s: header %+v", name, a.Header)
		}
		var out bytes.Buffer
		if _, err := a.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		got := out.Bytes()
		if len(got) != len(src) {
			t.Fatalf("%s: %d bytes back of %d", name, len(got), len(src))
		}
		lg := layoutOf(t, got)
		var sqErr, sqNorm float64
		for i, s := range l.Segments {
			g := lg.Segments[i]
			if g.Name != s.Name || g.Offset != s.Offset || g.Length != s.Length {
				t.Fatalf("%s: segment %d: %+v, was %+v", name, i, g, s)
			}
			orig, back := src[s.Offset:s.Offset+s.Length], got[s.Offset:s.Offset+s.Length]
			tn := Tensor{Name: s.Name, DType: s.DType, Shape: s.Shape, Data: orig}
			if !s.IsTensor() || !tn.Coded() {
				if !bytes.Equal(orig, back) {
					t.Errorf("%s: %s (kept as stored) changed", name, s.Name)
				}
				continue
			}
			m, _ := archivable(name)
			_, recon, _ := m.Code(Values(s.DType, orig), int(tn.rows()), int(tn.cols()), bits)
			if want := typed(s.DType, recon); !bytes.Equal(want, back) {
				t.Errorf("%s: %s is not the coder's reconstruction", name, s.Name)
			}
			e, n := sqErrors(Values(s.DType, orig), Values(s.DType, back))
			sqErr, sqNorm = sqErr+e, sqNorm+n
		}
		if math.Abs(relL2(sqErr, sqNorm)-a.Header.RelL2) > 1e-12 {
			t.Errorf("%s: rel L2 %g recorded, %g measured", name, a.Header.RelL2, relL2(sqErr, sqNorm))
		}
		rng := rand.New(rand.NewPCG(1, uint64(len(name))))
		for range 50 {
			off := rng.IntN(len(src))
			n := rng.IntN(len(src) - off + 1)
			buf := make([]byte, n)
			k, err := a.ReadAt(buf, int64(off))
			if k != n || err != nil && !(errors.Is(err, io.EOF) && off+n == len(src)) || !bytes.Equal(buf, got[off:off+n]) {
				t.Fatalf("%s: ReadAt(%d bytes at %d): %d, %v", name, n, off, k, err)
			}
		}
		if err := a.Verify(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestArchiveRefusals: what a lossy archive is not, and damage.
func TestArchiveRefusals(t *testing.T) {
	src := tinyModel()
	l := layoutOf(t, src)
	for _, c := range []struct {
		method string
		bits   float64
	}{{"lowrank", 2}, {"kron", 2}, {"nf5", 4}, {"nf4", 3}, {"int8", 4}, {"e8", 0}, {"e8", 17}} {
		if _, _, err := Quantize(src, l, c.method, c.bits); err == nil {
			t.Errorf("Quantize %s at %g bits: no error", c.method, c.bits)
		}
	}
	if _, _, err := Quantize(src[:100], layoutOf(t, src[:100]), "nf4", 4); err == nil {
		t.Error("a file without matrices quantizes")
	}
	ar, _, err := Quantize(src, l, "int8", 8)
	if err != nil {
		t.Fatal(err)
	}
	// the lossless decoder names it, and this one names a lossless archive
	if _, err := codec.NewReader(bytes.NewReader(ar), int64(len(ar))); !errors.Is(err, codec.ErrLossy) || !errors.Is(err, codec.ErrNotArchive) {
		t.Errorf("codec.NewReader of a lossy archive: %v", err)
	}
	nz, err := codec.CompressBytes(t.Context(), src, nil, codec.EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenArchive(nz); !errors.Is(err, ErrLossless) || !errors.Is(err, ErrNotLossy) {
		t.Errorf("OpenArchive of an .nzip archive: %v", err)
	}
	if _, err := OpenArchive(src); !errors.Is(err, ErrNotLossy) {
		t.Errorf("OpenArchive of a model: %v", err)
	}
	for _, cut := range []int{len(ar) - 1, len(ar) - 9, 30, 20} {
		if _, err := OpenArchive(ar[:cut]); !errors.Is(err, ErrArchive) {
			t.Errorf("cut to %d bytes: %v", cut, err)
		}
	}
	if _, err := OpenArchive(append(append([]byte(nil), ar...), 0)); !errors.Is(err, ErrArchive) {
		t.Errorf("extended: %v", err)
	}
	bad := append([]byte(nil), ar...)
	bad[20] ^= 1 // in the header
	if _, err := OpenArchive(bad); !errors.Is(err, ErrArchive) {
		t.Errorf("header changed: %v", err)
	}
	bad = append([]byte(nil), ar...)
	bad[len(bad)-20] ^= 1 // in the last tensor
	a, err := OpenArchive(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Verify(); !errors.Is(err, ErrArchive) {
		t.Errorf("a tensor changed: %v", err)
	}
	bad = append([]byte(nil), ar...)
	bad[8] = ArchiveVersion + 1
	if _, err := OpenArchive(bad); !errors.Is(err, ErrArchiveVersion) {
		t.Errorf("version %d: %v", ArchiveVersion+1, err)
	}
}

// TestArchiveV1: a lossy archive of version 1 (e8 streams of format 1:
// float32 row scales), written by the build before format 2, still opens
// and decodes to what that build's decompress -lossy wrote (its SHA-256),
// whole and tile by tile. testdata/e8-v1.nzq: nzip quantize -method e8
// -bits 4 of a safetensors file holding stories260K's (hub, F32) layer-0
// q_proj (64 × 64), gate_proj (172 × 64: three tiles) and input norm.
func TestArchiveV1(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "e8-v1.nzq"))
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != 1 {
		t.Fatalf("testdata/e8-v1.nzq is of version %d", v)
	}
	a, err := OpenArchive(b)
	if err != nil {
		t.Fatal(err)
	}
	if a.Header.Method != "e8" {
		t.Fatalf("method %q", a.Header.Method)
	}
	var out bytes.Buffer
	if _, err := a.WriteTo(&out); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(out.Bytes())
	if got, want := hex.EncodeToString(sum[:]), "9d9323a3f5ade96a7a06cb82036cfa1f018d669bdd1b39e3d1c781477e030b48"; got != want {
		t.Errorf("version 1 decodes to SHA-256 %s, that build wrote %s", got, want)
	}
	var tiles []byte
	for i, end := range a.TileEnds() {
		buf := make([]byte, end-int64(len(tiles)))
		if err := a.DecodeTile(i, buf); err != nil {
			t.Fatal(err)
		}
		tiles = append(tiles, buf...)
	}
	if !bytes.Equal(tiles, out.Bytes()) {
		t.Error("version 1: the tiles are not the file WriteTo writes")
	}
	if err := a.Verify(); err != nil {
		t.Errorf("verify: %v", err)
	}
}

// fuzzBudget: the fuzz target decodes archives of at most this many
// bytes of output per input byte (plus 64 KiB); beyond, it only parses.
func fuzzBudget(in int) int64 { return 64<<10 + 8*int64(in) }

// FuzzLossyArchive: damaged lossy archives give an error, never a panic
// or an output larger than they can describe; what opens reads the same
// tile by tile (DecodeTile: e8's tile index), through ReadAt and through
// WriteTo.
func FuzzLossyArchive(f *testing.F) {
	for _, name := range ArchiveMethods {
		bits := max(FixedBits(name), 3)
		ar, _, err := Quantize(tinyModel(), layoutOf(f, tinyModel()), name, bits)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(ar)
	}
	// tensors of several tiles (e8: a tile index of three entries)
	rng := rand.New(rand.NewPCG(11, 12))
	multi := miniSafetensors([]stEntry{
		{"w", dtype.BF16, []int{130, 64}, typed(dtype.BF16, randMatrix(rng, 130*64))},
		{"s", dtype.BF16, []int{80, 8}, typed(dtype.BF16, randMatrix(rng, 80*8))},
	})
	for _, name := range []string{"e8", "nf4", "fp8hd"} {
		ar, _, err := Quantize(multi, layoutOf(f, multi), name, max(FixedBits(name), 3))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(ar)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// the header's CRC repaired, so that changes to the header reach
		// the checks behind it
		if len(b) >= archiveFixed && bytes.Equal(b[:8], codec.LossyMagic[:]) {
			if n := int64(binary.LittleEndian.Uint32(b[10:])); n <= int64(len(b)-archiveFixed) {
				b = append([]byte(nil), b...)
				binary.LittleEndian.PutUint32(b[14+n:], crc32c.Checksum(b[14:14+n]))
			}
		}
		a, err := OpenArchive(b)
		if err != nil {
			return
		}
		if a.Size() > fuzzBudget(len(b)) {
			return
		}
		// each tensor's decoder on its stored bytes, whatever their CRC
		for i, p := range a.Header.Parts {
			if p.IsTensor() {
				rows, cols, _ := partMatrix(p.Shape)
				if v, err := decodeCodedFormat(a.Header.Method, a.stored(i), int(rows), int(cols), a.version); err == nil && int64(len(v)) != rows*cols {
					t.Fatalf("part %d: %d values for %d × %d", i, len(v), rows, cols)
				}
			}
		}
		// tile by tile (the tile index of e8 parts), each tile alone
		tiles := make([]byte, a.Size())
		tilesOK := true
		lo := int64(0)
		for i, e := range a.TileEnds() {
			if e <= lo || e > a.Size() {
				t.Fatalf("tile %d ends at %d, after %d, of %d", i, e, lo, a.Size())
			}
			if err := a.DecodeTile(i, tiles[lo:e]); err != nil {
				if !errors.Is(err, ErrArchive) {
					t.Fatalf("tile %d: %v, not ErrArchive", i, err)
				}
				tilesOK = false
			}
			lo = e
		}
		if lo != a.Size() {
			t.Fatalf("the tiles end at %d of %d", lo, a.Size())
		}
		var out bytes.Buffer
		if _, err := a.WriteTo(&out); err != nil {
			if tilesOK {
				t.Fatalf("every tile decodes, WriteTo fails: %v", err)
			}
			return
		}
		if int64(out.Len()) != a.Size() {
			t.Fatalf("%d bytes written of %d", out.Len(), a.Size())
		}
		if !tilesOK || !bytes.Equal(tiles, out.Bytes()) {
			t.Fatalf("the tiles (all decoded: %v) are not the file WriteTo writes", tilesOK)
		}
		n := int(a.Size())
		buf := make([]byte, n/2)
		if k, err := a.ReadAt(buf, int64(n/3)); err != nil && !errors.Is(err, io.EOF) || !bytes.Equal(buf[:k], out.Bytes()[n/3:n/3+k]) {
			t.Fatalf("ReadAt: %d, %v", k, err)
		}
	})
}

// lossySeeds are FuzzLossyArchive's committed seeds: a small model made of
// real weights (the first rows of stories260K's matrices and a norm),
// quantized by each method.
func lossySeeds(t *testing.T) map[string]string {
	_, tensors := sharedModel(t, "models", "original", "stories260K.bf16.safetensors")
	var ents []stEntry
	for _, tn := range tensors {
		switch {
		case tn.Name == "model.layers.0.self_attn.q_proj.weight":
			ents = append(ents, stEntry{"q.weight", tn.DType, []int{8, int(tn.cols())}, tn.Data[:8*tn.cols()*2]})
		case tn.Name == "model.layers.0.mlp.down_proj.weight":
			ents = append(ents, stEntry{"down.weight", tn.DType, []int{4, int(tn.cols())}, tn.Data[:4*tn.cols()*2]})
		case tn.Name == "model.norm.weight":
			ents = append(ents, stEntry{"norm.weight", tn.DType, []int{int(tn.Shape[0])}, tn.Data})
		}
	}
	if len(ents) != 3 {
		t.Fatalf("stories260K: %d of the 3 tensors the seeds take", len(ents))
	}
	src := miniSafetensors(ents)
	seeds := map[string]string{}
	for _, name := range ArchiveMethods {
		bits := max(FixedBits(name), 3)
		ar, _, err := Quantize(src, layoutOf(t, src), name, bits)
		if err != nil {
			t.Fatal(err)
		}
		seeds["stories260K-"+name] = fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", ar)
	}
	return seeds
}

// TestLossyFuzzSeeds keeps the committed seeds of FuzzLossyArchive in step
// with lossySeeds (go test -run TestLossyFuzzSeeds -update-seeds rewrites
// them); it skips without ../shared.
func TestLossyFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzLossyArchive")
	for name, body := range lossySeeds(t) {
		p := filepath.Join(dir, name)
		if *updateSeeds {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != body {
			t.Errorf("%s is not what lossySeeds writes (go test ./lossy -run TestLossyFuzzSeeds -update-seeds): %v", p, err)
		}
	}
}
