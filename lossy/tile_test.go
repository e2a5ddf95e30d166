package lossy

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/codec/crc32c"
	"neuralzip/dtype"
	"neuralzip/infer"
)

// tileModel is a safetensors file whose matrices span several tiles: more
// than TileRows rows in every float type, one of rows too short for e8's
// row scales (e8: one tile), one of narrow rows (e8: tiles of 256 rows of
// 64 values), and a vector kept as stored longer than a raw tile.
func tileModel() []byte {
	rng := rand.New(rand.NewPCG(9, 10))
	return miniSafetensors([]stEntry{
		{"big.weight", dtype.BF16, []int{150, 256}, typed(dtype.BF16, randMatrix(rng, 150*256))},
		{"f32.weight", dtype.F32, []int{70, 4, 64}, typed(dtype.F32, randMatrix(rng, 70*256))},
		{"narrow.weight", dtype.BF16, []int{300, 64}, typed(dtype.BF16, randMatrix(rng, 300*64))},
		{"short.weight", dtype.F16, []int{130, 16}, typed(dtype.F16, randMatrix(rng, 130*16))},
		{"long.bias", dtype.F32, []int{5000}, typed(dtype.F32, randMatrix(rng, 5000))},
	})
}

// TestTiles: the tiles of a lossy archive cover the dequantized file in
// order, each coded tensor's on its own, TileRows rows a tile (e8: 256
// rows of 64 values; a tensor of short rows whole; raw parts 16 KiB at
// most); decoded one by
// one, from several goroutines at once, or by ReadAt at any offset, they
// are the file WriteTo writes, whose tensors are decodeCoded's.
func TestTiles(t *testing.T) {
	src := tileModel()
	l := layoutOf(t, src)
	for _, name := range ArchiveMethods {
		bits := max(FixedBits(name), 4)
		ar, _, err := Quantize(src, l, name, bits)
		if err != nil {
			t.Fatal(err)
		}
		a, err := OpenArchive(ar)
		if err != nil {
			t.Fatal(err)
		}
		var whole bytes.Buffer
		if _, err := a.WriteTo(&whole); err != nil {
			t.Fatal(err)
		}
		want := whole.Bytes()
		for i, p := range a.Header.Parts {
			if !p.IsTensor() {
				continue
			}
			d, _ := dtype.Parse(p.DType)
			rows, cols, _ := partMatrix(p.Shape)
			v, err := decodeCoded(name, a.stored(i), int(rows), int(cols))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(typed(d, v), want[p.Offset:p.Offset+p.Length]) {
				t.Fatalf("%s: %s: WriteTo is not decodeCoded's values", name, p.Name)
			}
		}
		ends := a.TileEnds()
		bounds := map[int64]bool{0: true}
		var prev int64
		tiles := map[string]int{}
		for i, e := range ends {
			tr := a.tiles[i]
			p := a.Header.Parts[tr.part]
			if e <= prev || tr.off != prev || e > p.Offset+p.Length || tr.off < p.Offset || !p.IsTensor() && e-prev > rawTile {
				t.Fatalf("%s: tile %d [%d, %d) of part %d [%d, +%d)", name, i, prev, e, tr.part, p.Offset, p.Length)
			}
			bounds[e] = true
			tiles[p.Name]++
			prev = e
		}
		if prev != a.Size() {
			t.Fatalf("%s: the tiles end at %d of %d", name, prev, a.Size())
		}
		shortTiles, narrowTiles := 3, 5
		if name == "e8" {
			shortTiles, narrowTiles = 1, 2
		}
		if tiles["big.weight"] != 3 || tiles["f32.weight"] != 2 || tiles["short.weight"] != shortTiles || tiles["narrow.weight"] != narrowTiles || tiles[""] < 2 {
			t.Errorf("%s: tiles per part %v", name, tiles)
		}
		for _, p := range a.Header.Parts {
			if !bounds[p.Offset] || !bounds[p.Offset+p.Length] {
				t.Errorf("%s: part %q [%d, +%d) does not start and end on tiles", name, p.Name, p.Offset, p.Length)
			}
		}
		// tile by tile, from four goroutines at once
		got := make([]byte, len(want))
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for g := range 4 {
			wg.Go(func() {
				for i := g; i < len(ends); i += 4 {
					lo := int64(0)
					if i > 0 {
						lo = ends[i-1]
					}
					if err := a.DecodeTile(i, got[lo:ends[i]]); err != nil {
						errs[g] = err
						return
					}
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: the tiles decoded one by one are not the file", name)
		}
		if err := a.DecodeTile(0, got[:ends[0]+1]); err == nil {
			t.Errorf("%s: DecodeTile into a buffer longer than its tile", name)
		}
		if err := a.DecodeTile(len(ends), nil); err == nil {
			t.Errorf("%s: DecodeTile past the last tile", name)
		}
		rng := rand.New(rand.NewPCG(2, uint64(len(name))))
		for range 300 {
			off := rng.IntN(len(want))
			n := rng.IntN(min(len(want)-off, 1+rng.IntN(4096)) + 1)
			buf := make([]byte, n)
			k, err := a.ReadAt(buf, int64(off))
			if k != n || err != nil && !(errors.Is(err, io.EOF) && off+n == len(want)) || !bytes.Equal(buf, want[off:off+n]) {
				t.Fatalf("%s: ReadAt(%d bytes at %d): %d, %v", name, n, off, k, err)
			}
		}
	}
}

// TestTileMemory: decoding keeps nothing: every tile of a large tensor,
// and the whole tensor through ReadAt, allocate less than one tile's
// values (fp8h: a row to rotate; e8: its tile index, once).
func TestTileMemory(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const rows, cols = 512, 256
	src := miniSafetensors([]stEntry{{"w", dtype.F32, []int{rows, cols}, typed(dtype.F32, randMatrix(rng, rows*cols))}})
	tileBytes := uint64(TileRows * cols * 4)
	for _, name := range []string{"e8", "fp8h", "nf4"} {
		ar, _, err := Quantize(src, layoutOf(t, src), name, max(FixedBits(name), 4))
		if err != nil {
			t.Fatal(err)
		}
		a, err := OpenArchive(ar)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, a.Size())
		ends := a.TileEnds()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		lo := int64(0)
		for i, e := range ends {
			if err := a.DecodeTile(i, out[lo:e]); err != nil {
				t.Fatal(err)
			}
			lo = e
		}
		if _, err := a.ReadAt(out, 0); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n >= tileBytes {
			t.Errorf("%s: decoding a %d × %d tensor (twice) allocated %d bytes; a tile is %d", name, rows, cols, n, tileBytes)
		}
		if a.Decoded() != 2*int64(rows*cols*4) {
			t.Errorf("%s: %d bytes decoded", name, a.Decoded())
		}
	}
}

// rewritten rebuilds the lossy archive ar after change has changed its
// header and its parts' stored bytes, the CRCs repaired.
func rewritten(t *testing.T, ar []byte, change func(h *ArchiveHeader, stored [][]byte)) []byte {
	t.Helper()
	a, err := OpenArchive(ar)
	if err != nil {
		t.Fatal(err)
	}
	h := a.Header
	h.Parts = append([]Part(nil), h.Parts...)
	stored := make([][]byte, len(h.Parts))
	for i := range stored {
		stored[i] = bytes.Clone(a.stored(i))
	}
	change(&h, stored)
	for i := range h.Parts {
		h.Parts[i].Stored = int64(len(stored[i]))
		h.Parts[i].CRC = crc32c.Checksum(stored[i])
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(nil), codec.LossyMagic[:]...)
	out = binary.LittleEndian.AppendUint16(out, ArchiveVersion)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(hdr)))
	out = append(out, hdr...)
	out = binary.LittleEndian.AppendUint32(out, crc32c.Checksum(hdr))
	for _, b := range stored {
		out = append(out, b...)
	}
	return append(out, archiveEnd[:]...)
}

// TestTileDamage: a damaged tile is an error that names its tensor (and,
// past the CRC, its tile), never a panic or a wrong value; the tiles
// before it still decode.
func TestTileDamage(t *testing.T) {
	src := tileModel()
	ar, _, err := Quantize(src, layoutOf(t, src), "e8", 4)
	if err != nil {
		t.Fatal(err)
	}
	a, err := OpenArchive(ar)
	if err != nil {
		t.Fatal(err)
	}
	big := -1
	for i, p := range a.Header.Parts {
		if p.Name == "big.weight" {
			big = i
		}
	}
	first := 0 // big.weight's first tile
	for a.tiles[first].part != big {
		first++
	}
	// a flipped byte: the CRC names the tensor
	bad := bytes.Clone(ar)
	bad[a.starts[big]+a.Header.Parts[big].Stored/2] ^= 0x10
	b, err := OpenArchive(bad)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, a.tiles[first+1].len)
	if err := b.DecodeTile(first+1, buf); !errors.Is(err, ErrArchive) || !strings.Contains(err.Error(), `"big.weight"`) || !strings.Contains(err.Error(), "CRC") {
		t.Errorf("a flipped byte: %v", err)
	}
	if err := b.Verify(); !errors.Is(err, ErrArchive) {
		t.Errorf("Verify: %v", err)
	}
	// past the CRC: tile 1 of big.weight cut to 3 bytes, its length too
	c, err := a.code(big)
	if err != nil {
		t.Fatal(err)
	}
	tl := c.e8.tiles[1]
	bad = rewritten(t, ar, func(h *ArchiveHeader, stored [][]byte) {
		s := stored[big]
		k := binary.PutUvarint(make([]byte, 10), uint64(tl[1]-tl[0]))
		cut := binary.AppendUvarint(bytes.Clone(s[:tl[0]-k]), 3)
		cut = append(cut, s[tl[0]:tl[0]+3]...)
		stored[big] = append(cut, s[tl[1]:]...)
	})
	b, err = OpenArchive(bad)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		tr := a.tiles[first+i]
		buf := make([]byte, tr.len)
		err := b.DecodeTile(first+i, buf)
		if i != 1 {
			want := make([]byte, tr.len)
			if err != nil || a.DecodeTile(first+i, want) != nil || !bytes.Equal(buf, want) {
				t.Errorf("tile %d beside the damaged one: %v", i, err)
			}
			continue
		}
		if !errors.Is(err, ErrArchive) || !strings.Contains(err.Error(), `"big.weight", tile 1 of 3 (rows 64 to 127)`) {
			t.Errorf("the damaged tile: %v", err)
		}
		if _, err := b.ReadAt(buf, tr.off+1); !errors.Is(err, ErrArchive) {
			t.Errorf("ReadAt of the damaged tile: %v", err)
		}
	}
	if _, err := b.WriteTo(io.Discard); !errors.Is(err, ErrArchive) {
		t.Errorf("WriteTo: %v", err)
	}
	// a tile length past the stream: the tile index refuses it
	bad = rewritten(t, ar, func(h *ArchiveHeader, stored [][]byte) {
		s := stored[big]
		k := binary.PutUvarint(make([]byte, 10), uint64(tl[1]-tl[0]))
		long := binary.AppendUvarint(bytes.Clone(s[:tl[0]-k]), uint64(len(s)))
		stored[big] = append(long, s[tl[0]:]...)
	})
	if b, err = OpenArchive(bad); err != nil {
		t.Fatal(err)
	}
	if err := b.DecodeTile(first, buf[:a.tiles[first].len]); !errors.Is(err, ErrArchive) || !strings.Contains(err.Error(), `"big.weight"`) {
		t.Errorf("a tile length past the stream: %v", err)
	}
}

// TestTiledInfer: a model run from a lossy archive tile by tile (infer
// with ReadEach on the Archive, a Tiled reader), with and without
// prefetching, at one and two processors, gives the logits of its
// dequantized file, bit for bit, holding the archive and a tensor's
// buffers, not the dequantized weights.
func TestTiledInfer(t *testing.T) {
	src, _ := sharedModel(t, "models", "original", "stories260K.bf16.safetensors")
	l := layoutOf(t, src)
	for _, name := range []string{"nf4", "e8"} {
		ar, _, err := Quantize(src, l, name, 4)
		if err != nil {
			t.Fatal(err)
		}
		a, err := OpenArchive(ar)
		if err != nil {
			t.Fatal(err)
		}
		var deq bytes.Buffer
		if _, err := a.WriteTo(&deq); err != nil {
			t.Fatal(err)
		}
		run := func(r io.ReaderAt, opt infer.Options) ([]float32, infer.Memory) {
			m, err := infer.Open(r, a.Size(), opt)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			var all []float32
			toks := []int{1, 403, 407, 261, 378}
			lg, err := m.Prefill(toks, 0)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, lg...)
			for pos := len(toks); pos < len(toks)+6; pos++ {
				lg, err := m.Forward((pos*37)%512, pos)
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, lg...)
			}
			return all, m.Memory()
		}
		want, wm := run(bytes.NewReader(deq.Bytes()), infer.Options{})
		for _, procs := range []int{1, 2} {
			for _, pf := range []bool{false, true} {
				prev := runtime.GOMAXPROCS(procs)
				got, mem := run(a, infer.Options{ReadEach: true, Prefetch: pf})
				runtime.GOMAXPROCS(prev)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s, %d procs, prefetch %v: logit %d is %g, from the dequantized file %g", name, procs, pf, i, got[i], want[i])
					}
				}
				if mem.Compressed != int64(len(ar)) || mem.Weights != wm.Weights || mem.Buffers >= wm.Buffers/2 || mem.Peak != mem.Compressed+mem.Buffers || mem.Decoded == 0 {
					t.Errorf("%s, %d procs, prefetch %v: memory %+v; from the dequantized file %+v", name, procs, pf, mem, wm)
				}
			}
		}
	}
}

// BenchmarkE8Archive decodes stories260K (BF16) quantized by e8 at 4
// bits, whole (WriteTo: tile by tile; b.SetBytes: the dequantized file);
// it skips without ../shared.
func BenchmarkE8Archive(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("..", "..", "shared", "models", "original", "stories260K.bf16.safetensors"))
	if err != nil {
		b.Skipf("../shared: %v", err)
	}
	l, err := checkpoint.Open(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		b.Fatal(err)
	}
	ar, _, err := Quantize(src, l, "e8", 4)
	if err != nil {
		b.Fatal(err)
	}
	a, err := OpenArchive(ar)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(a.Size())
	for b.Loop() {
		if _, err := a.WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
