package gpu

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/klauspost/compress/huff0"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/dtype"
)

func TestJobLayout(t *testing.T) {
	// kernels/decode.cu reads the jobs with these sizes and offsets
	if s := unsafe.Sizeof(StreamJob{}); s != StreamJobBytes {
		t.Fatalf("StreamJob is %d bytes, kernels expect %d", s, StreamJobBytes)
	}
	if s := unsafe.Sizeof(BlockJob{}); s != BlockJobBytes {
		t.Fatalf("BlockJob is %d bytes, kernels expect %d", s, BlockJobBytes)
	}
	var b BlockJob
	if o := unsafe.Offsetof(b.Src); o != 48 {
		t.Fatalf("BlockJob.Src at %d, kernels expect 48", o)
	}
	if o := unsafe.Offsetof(b.Index); o != 112 {
		t.Fatalf("BlockJob.Index at %d, kernels expect 112", o)
	}
	if s := unsafe.Sizeof(PairJob{}); s != PairJobBytes {
		t.Fatalf("PairJob is %d bytes, kernels expect %d", s, PairJobBytes)
	}
	var pj PairJob
	if o := unsafe.Offsetof(pj.Exc); o != 48 {
		t.Fatalf("PairJob.Exc at %d, kernels expect 48", o)
	}
	if o := unsafe.Offsetof(pj.Block); o != 80 {
		t.Fatalf("PairJob.Block at %d, kernels expect 80", o)
	}
}

// huff0Stream wraps a huff0 block as a stream of mode 2 or 3.
func huff0Stream(blk []byte, x4 bool) []byte {
	mode := byte(2)
	if x4 {
		mode = 3
	}
	out := binary.AppendUvarint([]byte{mode}, uint64(len(blk)))
	return append(out, blk...)
}

// TestHuff0Streams decodes blocks made by klauspost's huff0 encoder (FSE
// and direct weight descriptions, 1 and 4 streams, table logs up to 11)
// with the plan's table reader and the twin's stream decoder.
func TestHuff0Streams(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := 0
	for _, n := range []int{2, 7, 100, 1000, 4097, 65536} {
		for _, alpha := range []int{2, 3, 17, 60, 200, 256} {
			for _, skew := range []float64{0.3, 1, 3} {
				src := make([]byte, n)
				for i := range src {
					// geometric-ish: a few frequent symbols, a long tail
					v := int(math.Abs(rng.NormFloat64()) * float64(alpha) / (1 + skew))
					src[i] = byte(v % alpha)
				}
				for _, x4 := range []bool{false, true} {
					var s huff0.Scratch
					var blk []byte
					var err error
					if x4 {
						blk, _, err = huff0.Compress4X(src, &s)
					} else {
						blk, _, err = huff0.Compress1X(src, &s)
					}
					if err != nil {
						continue // incompressible or a single symbol: not a huff0 block
					}
					p := &Plan{}
					var pb planBuilder
					st := huff0Stream(blk, x4)
					sv, end, why, err := pb.stream(p, st, 0, uint64(n), 8, 0, 0, true)
					if err != nil || why != "" || end != len(st) {
						t.Fatalf("n=%d alpha=%d x4=%v: plan: %v %q end %d/%d", n, alpha, x4, err, why, end, len(st))
					}
					if sv.Kind != SrcScratch {
						t.Fatalf("source kind %d", sv.Kind)
					}
					p.Payload = st
					scratch := make([]byte, p.Scratch)
					luts := make([]uint16, LUTEntries*p.NumTables())
					for t := 0; t < p.NumTables(); t++ {
						buildLUT(t, p.Weights, luts)
					}
					for i := range p.Streams {
						if !decodeStream(&p.Streams[i], p.Payload, luts, scratch) {
							t.Fatalf("n=%d alpha=%d x4=%v skew=%v: stream %d does not decode: %+v got %v want %v", n, alpha, x4, skew, i, p.Streams[i], scratch, src)
						}
					}
					if !bytes.Equal(scratch[sv.Off:sv.Off+uint64(n)], src) {
						t.Fatalf("n=%d alpha=%d x4=%v: symbols differ", n, alpha, x4)
					}
					// damage: flip a bit in every stream; each must either fail
					// or decode differently, never panic
					for i := range p.Streams {
						j := p.Streams[i]
						q := append([]byte(nil), p.Payload...)
						q[j.Src+j.Len/2] ^= 0x10
						decodeStream(&j, q, luts, scratch)
					}
					cases++
				}
			}
		}
	}
	if cases < 50 {
		t.Fatalf("only %d huff0 cases ran", cases)
	}
}

// genValues makes n values of d with weight-like exponents, sprinkled
// with the special values of the type.
func genValues(d dtype.DType, n int, rng *rand.Rand) []byte {
	size := d.Size()
	l, _ := d.FloatLayout()
	out := make([]byte, n*size)
	bias := 1<<(l.Exp-1) - 1
	for i := 0; i < n; i++ {
		e := bias - 3 - int(math.Abs(rng.NormFloat64())*3)
		e = max(0, min(e, 1<<l.Exp-1))
		v := uint64(e) << l.Mant
		v |= rng.Uint64() & (1<<l.Mant - 1)
		if l.Sign == 1 && rng.IntN(2) == 1 {
			v |= 1 << (l.Mant + l.Exp)
		}
		switch rng.IntN(50) {
		case 0:
			v = (1<<l.Exp - 1) << l.Mant // Inf (or NaN for the F8 types)
		case 1:
			v = (1<<l.Exp-1)<<l.Mant | 1 // a NaN payload
		case 2:
			v = 0 // +0
		case 3:
			v = 1 // smallest subnormal
		}
		for k := 0; k < size; k++ {
			out[i*size+k] = byte(v >> (8 * k))
		}
	}
	return out
}

// archive compresses a file made of the tensors with codec and opens it.
func archive(t testing.TB, src []byte, segs []codec.Segment, opt codec.EncodeOptions) (*codec.Reader, *bytes.Reader) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := codec.Encode(context.Background(), &buf, []codec.Input{{Name: "f", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}}, opt); err != nil {
		t.Fatal(err)
	}
	ra := bytes.NewReader(buf.Bytes())
	rd, err := codec.NewReader(ra, int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return rd, ra
}

// edgeFile builds a file of tensors of every float dtype the device
// decodes (and F64, which it leaves to the CPU): odd lengths, unaligned
// offsets, empty, constant, all-zero and "clean" (low bits zero) tensors.
func edgeFile(rng *rand.Rand) ([]byte, []codec.Segment) {
	var src []byte
	var segs []codec.Segment
	add := func(name string, d dtype.DType, b []byte) {
		// one opaque byte first: tensors start at odd offsets
		segs = append(segs, codec.Segment{Offset: int64(len(src)), Length: 1})
		src = append(src, 0x5a)
		segs = append(segs, codec.Segment{Offset: int64(len(src)), Length: int64(len(b)), Name: name, DType: d, Shape: []int64{int64(len(b) / d.Size())}})
		src = append(src, b...)
	}
	for _, d := range []dtype.DType{dtype.BF16, dtype.F16, dtype.F32, dtype.F8E4M3, dtype.F8E5M2, dtype.F64} {
		for _, n := range []int{0, 1, 3, 999, 5000, 20011} {
			add(fmt.Sprintf("%v.%d", d, n), d, genValues(d, n, rng))
		}
		add(d.String()+".zero", d, make([]byte, 3000*d.Size()))
		c := genValues(d, 1, rng)
		add(d.String()+".const", d, bytes.Repeat(c, 2500))
		if d == dtype.BF16 {
			// uniform residuals: the plane is stored raw
			b := make([]byte, 2*30000)
			for i := 0; i < len(b); i += 2 {
				b[i], b[i+1] = byte(rng.IntN(256)), byte(0x3c+rng.IntN(2))
			}
			add("bf16.noise", d, b)
		}
		if d != dtype.F64 {
			// mostly zeros (ReLU activations): sparse blocks, their mask
			// as a bitmap, zero runs or column contexts (rows of 64), the
			// sign dropped where every nonzero value is positive
			for _, n := range []int{777, 6400, 20011} {
				for _, c := range []struct {
					zeros int // per mille
					pos   bool
				}{{850, false}, {850, true}, {500, true}, {997, false}} {
					zeros, pos := c.zeros, c.pos
					b := genValues(d, n, rng)
					size := d.Size()
					for i := 0; i < n; i++ {
						if rng.IntN(1000) < zeros || (i/64)%7 == 3 {
							clear(b[i*size : (i+1)*size])
						} else if pos {
							b[(i+1)*size-1] &^= 0x80
						}
					}
					name := fmt.Sprintf("%v.sparse.%d.%d.%v", d, n, zeros, pos)
					segs = append(segs, codec.Segment{Offset: int64(len(src)), Length: 1})
					src = append(src, 0x5a)
					shape := []int64{int64(n)}
					if n%64 == 0 {
						shape = []int64{int64(n / 64), 64}
					}
					segs = append(segs, codec.Segment{Offset: int64(len(src)), Length: int64(len(b)), Name: name, DType: d, Shape: shape})
					src = append(src, b...)
				}
			}
		}
		if d == dtype.F32 {
			add("f32.1500", d, genValues(d, 1500, rng))
			// once-BF16 weights: the low 16 bits are zero (dropped bits)
			b := genValues(d, 7000, rng)
			for i := 0; i < len(b); i += 4 {
				b[i], b[i+1] = 0, 0
			}
			add("f32.clean", d, b)
		}
	}
	return src, segs
}

func decodeWith(t *testing.T, b Backend, rd *codec.Reader, ra *bytes.Reader, want []byte) Result {
	t.Helper()
	out, res, err := DecodeFile(context.Background(), rd, ra, 0, b, Options{Hist: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) || !res.Exact {
		t.Fatalf("%s: decoded file differs", b.Name())
	}
	return res
}

// checkHist compares the device's exponent histogram with one counted
// here from the original bytes of the blocks the device decoded.
func checkHist(t *testing.T, res Result, src []byte, rd *codec.Reader, ra io.ReaderAt) {
	t.Helper()
	p, err := NewPlan(rd, ra, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want [256]uint64
	for _, b := range p.Blocks {
		for i := uint64(0); i < b.N; i++ {
			var v uint32
			for k := uint32(0); k < b.Size; k++ {
				v |= uint32(src[b.Out+i*uint64(b.Size)+uint64(k)]) << (8 * k)
			}
			want[v>>b.M&(1<<b.E-1)]++
		}
	}
	if len(p.Blocks) == 0 || res.ExpHist != want {
		t.Fatalf("device histogram differs from the original's exponents (%d device blocks)", len(p.Blocks))
	}
}

func TestEdgeFileCPU(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	src, segs := edgeFile(rng)
	for _, chunk := range []int{1000, 65536} {
		rd, ra := archive(t, src, segs, codec.EncodeOptions{ChunkValues: chunk, Threads: 2})
		res := decodeWith(t, CPU(2), rd, ra, src)
		if res.DevBytes == 0 {
			t.Fatal("the device decoded nothing")
		}
		if res.Unhandled["float F64"] == 0 {
			t.Fatal("F64 blocks should go to the CPU")
		}
		checkHist(t, res, src, rd, ra)
		// every sparse block the device takes: a job each, masks of every method
		p, err := NewPlan(rd, ra, 0)
		if err != nil {
			t.Fatal(err)
		}
		jobs := 0
		for _, b := range p.Blocks {
			if b.Sparse != 0 {
				jobs++
			}
		}
		methods, sparse := sparseMethods(t, rd, ra)
		onHost := 0
		for _, h := range p.Host {
			if sparse[h.Index] {
				onHost++ // too small for its tables
			}
		}
		c, err := rd.Census()
		if err != nil {
			t.Fatal(err)
		}
		if c.Sparse == 0 || jobs == 0 || jobs+onHost != c.Sparse || len(methods) != 3 {
			t.Fatalf("chunk %d: %d sparse blocks (masks %v), %d on the device, %d on the CPU", chunk, c.Sparse, methods, jobs, onHost)
		}
		t.Logf("chunk %d: device %d of %d bytes, %d sparse blocks (masks %v); CPU: %v", chunk, res.DevBytes, res.Bytes, jobs, methods, res.UnhandledSummary())
	}
}

// oldArchive opens codec's golden-v3-1x.nzip, written when Huffman
// streams below 2048 symbols were 1-stream blocks: today's encoder writes
// 1-stream blocks only below 256 symbols, in blocks too small for the
// device, but the device still decodes archives that have them.
func oldArchive(t *testing.T) (*codec.Reader, *bytes.Reader, []byte) {
	arc, err := os.ReadFile(filepath.Join("..", "codec", "testdata", "golden-v3-1x.nzip"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := codec.DecompressBytes(context.Background(), arc, codec.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ra := bytes.NewReader(arc)
	rd, err := codec.NewReader(ra, int64(len(arc)))
	if err != nil {
		t.Fatal(err)
	}
	return rd, ra, want
}

// TestOldArchiveCPU decodes the archive of 1-stream blocks through the
// device path (the CPU twin of the kernels).
func TestOldArchiveCPU(t *testing.T) {
	rd, ra, want := oldArchive(t)
	res := decodeWith(t, CPU(2), rd, ra, want)
	if res.DevBytes == 0 {
		t.Fatal("the device decoded nothing")
	}
}

// TestPlanCoversModes checks that the edge file (and, for 1-stream
// blocks, oldArchive) exercises every source kind and both Huffman
// layouts, so the kernels' paths are all tested.
func TestPlanCoversModes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	src, segs := edgeFile(rng)
	p := &Plan{}
	for _, chunk := range []int{1000, 65536, 0} {
		var rd *codec.Reader
		var ra *bytes.Reader
		if chunk == 0 {
			rd, ra, _ = oldArchive(t)
		} else {
			rd, ra = archive(t, src, segs, codec.EncodeOptions{ChunkValues: chunk})
		}
		q, err := NewPlan(rd, ra, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range q.Streams {
			s.Block += uint64(len(p.Blocks))
			p.Streams = append(p.Streams, s)
		}
		p.Blocks = append(p.Blocks, q.Blocks...)
	}
	kinds := map[uint32]bool{}
	joins, zeros := false, false
	for _, b := range p.Blocks {
		for k := uint32(0); k < b.NSrc; k++ {
			kinds[b.Src[k].Kind] = true
		}
		joins = joins || b.J > 0
		zeros = zeros || b.Z > 0
	}
	for k := uint32(0); k <= SrcConst; k++ {
		if !kinds[k] {
			t.Errorf("no block uses source kind %d", k)
		}
	}
	if !joins || !zeros {
		t.Errorf("joined symbols %v, dropped zero bits %v: want both", joins, zeros)
	}
	perBlock := map[uint64]int{}
	for _, s := range p.Streams {
		perBlock[s.Block]++
	}
	one, four := false, false
	for _, c := range perBlock {
		one = one || c == 1
		four = four || c >= 4
	}
	if !one || !four {
		t.Errorf("1-stream blocks %v, 4-stream blocks %v: want both", one, four)
	}
}

func sharedDir() string {
	for _, d := range []string{"../../shared", "../shared"} {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	return ""
}

// realFiles lists the corpus files, or skips.
func realFiles(t *testing.T) []string {
	if testing.Short() {
		t.Skip("-short: real-file tests skipped")
	}
	d := sharedDir()
	if d == "" {
		t.Skip("../shared (real-weights corpus) not present; skipping real-file test")
	}
	files, _ := filepath.Glob(filepath.Join(d, "models", "bench", "*.safetensors"))
	if len(files) == 0 {
		t.Skip("no ../shared/models/bench/*.safetensors")
	}
	return files
}

func loadSegments(t testing.TB, path string) ([]byte, []codec.Segment) {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := checkpoint.Open(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	return src, l.Segments
}

func TestRealFilesCPU(t *testing.T) {
	for _, f := range realFiles(t) {
		src, segs := loadSegments(t, f)
		rd, ra := archive(t, src, segs, codec.EncodeOptions{})
		res := decodeWith(t, CPU(0), rd, ra, src)
		// float blocks that zstd coded smaller (repeats) are zstd blocks,
		// which the CPU decodes
		c, err := rd.Census()
		if err != nil {
			t.Fatal(err)
		}
		if float64(res.DevBytes) < 0.95*float64(res.Bytes-c.ZstdFloatBytes) {
			t.Errorf("%s: the device decodes only %d of %d bytes (%d in float blocks zstd coded) (%v)", filepath.Base(f), res.DevBytes, res.Bytes, c.ZstdFloatBytes, res.UnhandledSummary())
		}
		t.Logf("%s: device %d of %d bytes, resident %d; CPU: %v", filepath.Base(f), res.DevBytes, res.Bytes, res.Resident, res.UnhandledSummary())
	}
}

// TestActivationsSparse: real ReLU² activations (../shared/activations:
// BF16, F32 and FP8 E4M3, 84–95 % zeros on trained steps) are archived in
// sparse blocks, which the device decodes bit-exact (their masks decoded
// by the planner); the kernels' Go twin here, the CUDA kernels behind the
// fake driver in TestCUDAFakeDriverSparse.
func TestActivationsSparse(t *testing.T) { activationsSparse(t, CPU(2)) }

func activationsSparse(t *testing.T, b Backend) {
	if testing.Short() {
		t.Skip("-short: real-file tests skipped")
	}
	d := sharedDir()
	files, _ := filepath.Glob(filepath.Join(d, "activations", "*.safetensors"))
	if d == "" || len(files) == 0 {
		t.Skip("../shared/activations not present; skipping")
	}
	for _, f := range files {
		src, segs := loadSegments(t, f)
		rd, ra := archive(t, src, segs, codec.EncodeOptions{})
		c, err := rd.Census()
		if err != nil {
			t.Fatal(err)
		}
		res := decodeWith(t, b, rd, ra, src)
		if c.Sparse == 0 || float64(res.DevBytes) < 0.95*float64(res.Bytes-c.ZstdFloatBytes) {
			t.Errorf("%s on %s: %d sparse blocks; the device decodes %d of %d bytes (%v)", filepath.Base(f), b.Name(), c.Sparse, res.DevBytes, res.Bytes, res.UnhandledSummary())
		}
		t.Logf("%s on %s: %d sparse blocks (%d bytes); device %d of %d bytes, resident %d", filepath.Base(f), b.Name(), c.Sparse, c.SparseBytes, res.DevBytes, res.Bytes, res.Resident)
	}
}

// TestSetupArchiveHostFallback: blocks coded with a setup's shared tables
// are decoded by the CPU, the rest by the device, and the file is exact.
func TestSetupArchiveHostFallback(t *testing.T) {
	files := realFiles(t)
	src, segs := loadSegments(t, files[0])
	setup, err := codec.BuildSetup(context.Background(), []codec.Input{{Name: "m", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}}, codec.SetupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rd, ra := archive(t, src, segs, codec.EncodeOptions{Setup: setup})
	res := decodeWith(t, CPU(0), rd, ra, src)
	if res.Unhandled["setup tables"] == 0 {
		t.Fatalf("no block went to the CPU for its setup tables: %v", res.UnhandledSummary())
	}
}

// TestZstdPlanesHostFallback: float blocks whose byte planes are zstd
// frames (a windowed STFT basis, format version 9; planes form, which the
// device leaves to the CPU) are decoded by the CPU, and the file is exact:
// codec's golden-lz-v9.nzip (the imaginary part of the basis, one block),
// which the encoder now writes as a repeat block (format version 13),
// which the device leaves to the CPU too.
func TestZstdPlanesHostFallback(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("..", "codec", "testdata", "golden-lz-v9.nzip"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := codec.DecompressBytes(context.Background(), golden, codec.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ga := bytes.NewReader(golden)
	grd, err := codec.NewReader(ga, int64(len(golden)))
	if err != nil {
		t.Fatal(err)
	}
	if res := decodeWith(t, CPU(0), grd, ga, want); res.Unhandled["float form 1"] == 0 {
		t.Fatalf("no planes-form block went to the CPU: %v", res.UnhandledSummary())
	}
	var src []byte
	const n = 256
	for k := 0; k <= n/2; k++ {
		for j := 0; j < n; j++ {
			w := 0.5 - 0.5*math.Cos(2*math.Pi*float64(j)/n)
			v := -math.Sin(2 * math.Pi * float64(k*j%n) / n)
			src = binary.LittleEndian.AppendUint32(src, math.Float32bits(float32(w*v)))
		}
	}
	segs := []codec.Segment{{Name: "stft", DType: dtype.F32, Shape: []int64{n/2 + 1, 1, n}, Length: int64(len(src))}}
	rd, ra := archive(t, src, segs, codec.EncodeOptions{})
	if res := decodeWith(t, CPU(0), rd, ra, src); res.Unhandled["repeat"] == 0 {
		t.Fatalf("no repeat block went to the CPU: %v", res.UnhandledSummary())
	}
}

// TestCMHostFallback: cm blocks (quantised 8-bit weights, format version
// 10) are decoded by the CPU, and the file is exact.
func TestCMHostFallback(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	src := make([]byte, 64<<10)
	for i := range src {
		src[i] = byte(math.Round(max(0, min(255, 128+rng.NormFloat64()*(6+float64(i/4096))))))
	}
	segs := []codec.Segment{{Name: "conv/kernel", DType: dtype.U8, Shape: []int64{256, 256}, Length: int64(len(src))}}
	// cm blocks are written by bytes alone (Best) only
	rd, ra := archive(t, src, segs, codec.EncodeOptions{Best: true})
	res := decodeWith(t, CPU(0), rd, ra, src)
	if res.Unhandled["cm"] == 0 {
		t.Fatalf("no cm block went to the CPU: %v", res.UnhandledSummary())
	}
}

func TestCorruptArchive(t *testing.T) { damageTrials(t, CPU(1), 7, 200) }

// damageTrials flips one bit in a float block of an archive of the edge
// file, n times, and decodes each damaged archive through b: at least 90 %
// must fail with an error, the others (flips in bits no decoder reads, the
// unused top bits of a packed stream's last byte) must decode exactly.
func damageTrials(t *testing.T, b Backend, seed uint64, n int) {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	src, segs := edgeFile(rng)
	var buf bytes.Buffer
	if _, err := codec.Encode(context.Background(), &buf, []codec.Input{{Name: "f", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}}, codec.EncodeOptions{ChunkValues: 1000}); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	rd0, err := codec.NewReader(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	var floats []codec.BlockInfo
	for _, bl := range rd0.Files()[0].Blocks() {
		if bl.Kind == codec.KindFloat && bl.Compressed > 20 {
			floats = append(floats, bl)
		}
	}
	failed := 0
	for i := 0; i < n; i++ {
		bl := floats[rng.IntN(len(floats))]
		bad := append([]byte(nil), good...)
		bad[bl.Payload+rng.Int64N(bl.Compressed)] ^= byte(1 << rng.IntN(8))
		rd, err := codec.NewReader(bytes.NewReader(bad), int64(len(bad)))
		if err != nil {
			t.Fatal(err) // the index is intact
		}
		out, _, err := DecodeFile(context.Background(), rd, bytes.NewReader(bad), 0, b, Options{})
		if err == nil {
			if !bytes.Equal(out, src) {
				t.Fatalf("flip in block at %d: wrong output without an error", bl.Payload)
			}
			continue
		}
		failed++
	}
	if failed < n*9/10 {
		t.Fatalf("only %d of %d damaged archives failed to decode on %s", failed, n, b.Name())
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open("tpu", 0); err == nil {
		t.Fatal("unknown backend accepted")
	}
	b, err := Open("cpu", 2)
	if err != nil || b.Name() != "cpu" {
		t.Fatalf("cpu backend: %v", err)
	}
	if _, ok := Probe()["cpu"]; !ok {
		t.Fatal("Probe lacks cpu")
	}
}

func TestCancel(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	src, segs := edgeFile(rng)
	rd, ra := archive(t, src, segs, codec.EncodeOptions{ChunkValues: 1000})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := DecodeFile(ctx, rd, ra, 0, CPU(2), Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled decode: %v", err)
	}
}

func BenchmarkTwinRealBF16(b *testing.B) {
	d := sharedDir()
	if d == "" {
		b.Skip("../shared not present")
	}
	src, segs := loadSegments(b, filepath.Join(d, "models", "bench", "real-bf16.safetensors"))
	rd, ra := archive(b, src, segs, codec.EncodeOptions{})
	p, err := NewPlan(rd, ra, 0)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]byte, p.Size)
	be := CPU(1)
	b.SetBytes(p.DevBytes)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := be.Decode(context.Background(), p, out, DecodeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// cleanupFake removes the fake driver's build (cuda_test.go), if any.
var cleanupFake = func() {}

func TestBenchRepeat(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	src, segs := edgeFile(rng)
	rd, ra := archive(t, src, segs, codec.EncodeOptions{ChunkValues: 1000})
	res, err := Bench(context.Background(), rd, ra, 0, CPU(2), 1<<20, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Copies < 2 || res.DevBytes < 1<<20 {
		t.Fatalf("%d copies, %d device bytes", res.Copies, res.DevBytes)
	}
}

// TestBatches decodes in batches of a few blocks: the plans' offsets are
// relative to each batch, and the file comes out whole.
func TestBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	src, segs := edgeFile(rng)
	rd, ra := archive(t, src, segs, codec.EncodeOptions{ChunkValues: 1000})
	for _, batch := range []int64{1, 5000, 77777} {
		var buf bytes.Buffer
		res, err := DecodeTo(context.Background(), &buf, rd, ra, 0, CPU(2), Options{BatchBytes: batch, Hist: true})
		if err != nil || !bytes.Equal(buf.Bytes(), src) || !res.Exact {
			t.Fatalf("batch %d: %v", batch, err)
		}
		whole := decodeWith(t, CPU(2), rd, ra, src)
		if res.ExpHist != whole.ExpHist || res.DevBytes != whole.DevBytes {
			t.Fatalf("batch %d: histogram or device bytes differ from one batch", batch)
		}
	}
}

// A small archive of zeros claiming a large file: a batch's output is
// allocated only up to what the archive can plausibly hold, so a damaged
// first block fails without the whole file's worth of memory (it used to
// allocate a 1 GiB batch up front).
func TestBatchBoundedByArchive(t *testing.T) {
	src := make([]byte, 256<<20)
	segs := []codec.Segment{{Name: "z", DType: dtype.F32, Offset: 0, Length: int64(len(src))}}
	var buf bytes.Buffer
	if _, err := codec.Encode(context.Background(), &buf, []codec.Input{{Name: "z", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}}, codec.EncodeOptions{}); err != nil {
		t.Fatal(err)
	}
	src = nil
	arc := buf.Bytes()
	rd, err := codec.NewReader(bytes.NewReader(arc), int64(len(arc)))
	if err != nil {
		t.Fatal(err)
	}
	if rd.PlausibleOutput() >= 256<<20 {
		t.Fatalf("archive of %d bytes: plausible output %d, not a test of the bound", len(arc), rd.PlausibleOutput())
	}
	first := rd.Files()[0].Blocks()[0]
	bad := append([]byte(nil), arc...)
	bad[first.Payload+first.Compressed-1] ^= 0xff
	rd, err = codec.NewReader(bytes.NewReader(bad), int64(len(bad)))
	if err != nil {
		t.Fatal(err)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, err = DecodeTo(context.Background(), io.Discard, rd, bytes.NewReader(bad), 0, CPU(1), Options{})
	runtime.ReadMemStats(&m1)
	if err == nil {
		t.Fatal("a damaged block decoded")
	}
	if n, limit := m1.TotalAlloc-m0.TotalAlloc, uint64(rd.PlausibleOutput())+16<<20; n > limit {
		t.Fatalf("decoding a %d-byte archive allocated %d bytes (limit %d)", len(bad), n, limit)
	}
}

// sparseMethods counts the sparse float blocks of file 0 by mask method
// and returns their indices.
func sparseMethods(t *testing.T, rd *codec.Reader, ra io.ReaderAt) (map[codec.MaskMethod]int, map[int]bool) {
	t.Helper()
	out, idx := map[codec.MaskMethod]int{}, map[int]bool{}
	for bi, b := range rd.Files()[0].Blocks() {
		if b.Kind != codec.KindFloat || b.Compressed == 0 {
			continue
		}
		src := make([]byte, b.Compressed)
		if _, err := ra.ReadAt(src, b.Payload); err != nil {
			t.Fatal(err)
		}
		if codec.FloatForm(src[0]) != codec.FormSparse {
			continue
		}
		h, err := codec.ReadSparseHeader(src, int(b.Length)/b.DType.Size(), b.DType)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Mask]++
		idx[bi] = true
	}
	return out, idx
}
