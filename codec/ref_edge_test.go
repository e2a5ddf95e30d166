package codec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"neuralzip/dtype"
)

// refTensor is a tensor of a generated safetensors file.
type refT struct {
	name  string
	d     dtype.DType
	shape []int64
	data  []byte
}

// refSafetensors builds a safetensors file and its layout.
func refSafetensors(ts []refT) ([]byte, []Segment) {
	return safetensorsFile(`{"format":"pt"}`, ts)
}

// safetensorsFile builds a safetensors file with the given __metadata__
// object and tensors, and its layout (the header, then one segment per
// tensor).
func safetensorsFile(meta string, ts []refT) ([]byte, []Segment) {
	var hdr bytes.Buffer
	hdr.WriteString(`{"__metadata__":` + meta)
	var off int64
	for _, t := range ts {
		shape, _ := json.Marshal(t.shape)
		fmt.Fprintf(&hdr, `,%q:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, t.name, t.d.String(), shape, off, off+int64(len(t.data)))
		off += int64(len(t.data))
	}
	hdr.WriteString("}")
	for hdr.Len()%8 != 0 {
		hdr.WriteByte(' ')
	}
	var file []byte
	file = binary.LittleEndian.AppendUint64(file, uint64(hdr.Len()))
	file = append(file, hdr.Bytes()...)
	segs := []Segment{{Offset: 0, Length: int64(len(file))}}
	for _, t := range ts {
		segs = append(segs, Segment{Name: t.name, DType: t.d, Shape: t.shape, Offset: int64(len(file)), Length: int64(len(t.data))})
		file = append(file, t.data...)
	}
	return file, segs
}

// refSpecials are the bit patterns of special values of a float layout:
// ±0, ±Inf, NaNs with payloads, the largest finite values and subnormals.
func refSpecials(d dtype.DType) []uint64 {
	l, _ := d.FloatLayout()
	m := uint64(1)<<l.Mant - 1
	e := uint64(1)<<l.Exp - 1
	sign := uint64(0)
	if l.Sign != 0 {
		sign = 1 << (l.Exp + l.Mant)
	}
	var out []uint64
	for _, s := range []uint64{0, sign} {
		out = append(out,
			s,                       // ±0
			s|e<<l.Mant,             // ±Inf (or NaN/max for formats without Inf)
			s|e<<l.Mant|1,           // NaN, payload 1
			s|e<<l.Mant|m,           // NaN, all payload bits
			s|e<<l.Mant|(m>>1+1),    // quiet NaN
			s|(e-1)<<l.Mant|m,       // largest finite
			s|1,                     // smallest subnormal
			s|m,                     // largest subnormal
			s|1<<l.Mant,             // smallest normal
			s|(e>>1)<<l.Mant|(m>>2), // around 1
		)
	}
	return out
}

// refValues makes n values of d: weight-like values with special values
// sprinkled in.
func refValues(d dtype.DType, n int, r *rand.Rand) []byte {
	out := realisticValues(d, n, r.Uint64())
	sp := refSpecials(d)
	for i := 0; i < n; i += 1 + r.IntN(7) {
		storeValue(out, i, d.Size(), sp[r.IntN(len(sp))])
	}
	return out
}

// refPerturb returns src with every value moved by a few ULPs, some moved
// far, some replaced by special values, some unchanged.
func refPerturb(d dtype.DType, src []byte, r *rand.Rand) []byte {
	size := d.Size()
	out := bytes.Clone(src)
	bitsN := uint(8 * size)
	mask := uint64(1)<<bitsN - 1
	sp := refSpecials(d)
	for i := 0; i < len(src)/size; i++ {
		v := loadValue(src, i, size)
		switch k := r.IntN(10); {
		case k < 3: // unchanged
		case k < 7:
			v = (v + uint64(r.IntN(9)) - 4) & mask
		case k < 8:
			v = r.Uint64() & mask
		case k < 9:
			v = sp[r.IntN(len(sp))]
		default:
			v ^= 1 << (bitsN - 1) // sign flip: the largest distances
		}
		storeValue(out, i, size, v)
	}
	return out
}

var refTestTypes = []dtype.DType{dtype.BF16, dtype.F16, dtype.F32, dtype.F8E4M3, dtype.F8E5M2, dtype.F8E8M0}

// TestRefBlockRoundTrip codes blocks of every type against references
// directly (no container): every pattern must come back bit-exact.
func TestRefBlockRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	be := &blockEncoder{}
	bd := &blockDecoder{}
	for _, d := range refTestTypes {
		size := d.Size()
		for _, n := range []int{1, 2, 3, 7, 64, 1001, 4096, 65536} {
			ref := refValues(d, n, r)
			// worst cases: every distance, including 2^(b-1)
			far := bytes.Clone(ref)
			for i := 0; i < n; i++ {
				storeValue(far, i, size, loadValue(ref, i, size)^(1<<(8*size-1)))
			}
			// half the values unchanged, the others far: groups of one token
			half := bytes.Clone(far)
			copy(half[:size*(n/2)], ref)
			for ci, cur := range [][]byte{bytes.Clone(ref), refPerturb(d, ref, r), far, refValues(d, n, r), half} {
				for _, force := range []byte{0, refMethodULP, refMethodSwitch, refMethodCompact} {
					refBlockCase(t, be, bd, d, cur, ref, force, fmt.Sprintf("%v n=%d case %d method %d", d, n, ci, force))
				}
				p, ok := be.encodeRefFloat(nil, cur, ref, d)
				if !ok {
					t.Fatalf("%v: no reference coding", d)
				}
				got := make([]byte, len(cur))
				if err := bd.decodeRefFloat(got, p, ref, d); err != nil {
					t.Fatalf("%v n=%d case %d: %v", d, n, ci, err)
				}
				if !bytes.Equal(got, cur) {
					t.Fatalf("%v n=%d case %d: roundtrip differs", d, n, ci)
				}
				// every proper prefix must fail cleanly
				if len(p) < 200 {
					for k := 0; k < len(p); k++ {
						if bd.decodeRefFloat(got, p[:k], ref, d) == nil {
							t.Fatalf("%v n=%d case %d: truncated payload (%d of %d bytes) decodes", d, n, ci, k, len(p))
						}
					}
				}
				// method 2 (range-coded) of the same values, forced
				spec, _ := refSpecFor(d)
				p2 := be.ref.appendRefRange(nil, &spec, n)
				if p2[0] != refMethodRange {
					t.Fatalf("%v: method byte %d", d, p2[0])
				}
				clear(got)
				if err := bd.decodeRefFloat(got, p2, ref, d); err != nil || !bytes.Equal(got, cur) {
					t.Fatalf("%v n=%d case %d, method 2: roundtrip differs (%v)", d, n, ci, err)
				}
				if len(p2) < 300 {
					for k := 0; k < len(p2); k++ {
						if bd.decodeRefFloat(got, p2[:k], ref, d) == nil {
							t.Fatalf("%v n=%d case %d, method 2: truncated payload (%d of %d bytes) decodes", d, n, ci, k, len(p2))
						}
					}
				}
				// a byte more after the extra bits is refused too
				if bd.decodeRefFloat(got, append(bytes.Clone(p2), 0), ref, d) == nil {
					t.Fatalf("%v n=%d case %d, method 2: trailing byte accepted", d, n, ci)
				}
			}
		}
	}
}

// refBlockCase codes cur against ref with refForceMethod = force (0: the
// smaller method) and checks that the payload is of that method, decodes
// to cur with every decoding tier, and that every proper prefix of it and
// the payload with a byte more fail cleanly.
func refBlockCase(t *testing.T, be *blockEncoder, bd *blockDecoder, d dtype.DType, cur, ref []byte, force byte, name string) {
	t.Helper()
	refForceMethod = force
	p, ok := be.encodeRefFloat(nil, cur, ref, d)
	refForceMethod = 0
	if !ok {
		t.Fatalf("%s: no reference coding", name)
	}
	if force != 0 && p[0] != force {
		t.Fatalf("%s: method %d written", name, p[0])
	}
	got := make([]byte, len(cur))
	for _, tier := range []string{"fastest", "avx2", "go"} {
		clear(got)
		var err error
		dec := func() { err = bd.decodeRefFloat(got, p, ref, d) }
		if tier == "fastest" {
			dec()
		} else {
			withoutAVX512(tier == "go", dec)
		}
		if err != nil || !bytes.Equal(got, cur) {
			t.Fatalf("%s, %s tier: roundtrip differs (%v)", name, tier, err)
		}
	}
	if len(p) < 300 {
		for k := 0; k < len(p); k++ {
			if bd.decodeRefFloat(got, p[:k], ref, d) == nil {
				t.Fatalf("%s: truncated payload (%d of %d bytes) decodes", name, k, len(p))
			}
		}
	}
	if bd.decodeRefFloat(got, append(bytes.Clone(p), 0), ref, d) == nil {
		t.Fatalf("%s: trailing byte accepted", name)
	}
}

// refEdgeModel is a model with matched, mismatched and unmatched tensors;
// ref is its reference.
func refEdgeModel(seed uint64) (cur, ref []byte, curSegs, refSegs []Segment) {
	r := rand.New(rand.NewPCG(seed, 1))
	var ct, rt []refT
	add := func(name string, d dtype.DType, shape []int64, refShape []int64, refType dtype.DType, refName string) {
		n := int64(1)
		for _, s := range shape {
			n *= s
		}
		rn := int64(1)
		for _, s := range refShape {
			rn *= s
		}
		rv := refValues(refType, int(rn), r)
		var cv []byte
		if refType == d && rn == n {
			cv = refPerturb(d, rv, r)
		} else {
			cv = refValues(d, int(n), r)
		}
		ct = append(ct, refT{name, d, shape, cv})
		rt = append(rt, refT{refName, refType, refShape, rv})
	}
	for _, d := range refTestTypes {
		add("w."+d.String(), d, []int64{37, 131}, []int64{37, 131}, d, "w."+d.String()) // odd length, matched
	}
	add("big", dtype.BF16, []int64{70001}, []int64{70001}, dtype.BF16, "big")       // two chunks
	add("shape", dtype.BF16, []int64{64, 32}, []int64{32, 64}, dtype.BF16, "shape") // shape mismatch
	add("type", dtype.F16, []int64{500}, []int64{500}, dtype.BF16, "type")          // dtype mismatch
	add("only.cur", dtype.BF16, []int64{700}, []int64{700}, dtype.BF16, "only.ref") // unmatched
	add("empty", dtype.BF16, []int64{0}, []int64{0}, dtype.BF16, "empty")           // empty tensor
	add("f64", dtype.F64, []int64{300}, []int64{300}, dtype.F64, "f64")             // copies only
	add("c64", dtype.C64, []int64{100}, []int64{100}, dtype.C64, "c64")             // coded as F32
	for i := 0; i < 5; i++ {                                                        // small: merged blocks
		add(fmt.Sprintf("small.%d", i), dtype.BF16, []int64{int64(100 + i)}, []int64{int64(100 + i)}, dtype.BF16, fmt.Sprintf("small.%d", i))
	}
	// a tensor identical to its reference: a copy
	same := refValues(dtype.BF16, 5000, r)
	ct = append(ct, refT{"same", dtype.BF16, []int64{5000}, same})
	rt = append(rt, refT{"same", dtype.BF16, []int64{5000}, same})
	cur, curSegs = refSafetensors(ct)
	ref, refSegs = refSafetensors(rt)
	return
}

func TestRefEdgeArchive(t *testing.T) {
	cur, refB, segs, refSegs := refEdgeModel(3)
	ref, err := NewReference([]Input{{Name: "ref.safetensors", R: bytes.NewReader(refB), Size: int64(len(refB)), Segments: refSegs}})
	if err != nil {
		t.Fatal(err)
	}
	for _, best := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "best"}[best], func(t *testing.T) {
			testRefEdgeArchive(t, cur, refB, segs, ref, best)
		})
	}
}

func testRefEdgeArchive(t *testing.T, cur, refB []byte, segs []Segment, ref *Reference, best bool) {
	enc := func(threads int, ref *Reference) []byte {
		var buf bytes.Buffer
		if _, err := Encode(context.Background(), &buf, []Input{{Name: "cur.safetensors", R: bytes.NewReader(cur), Size: int64(len(cur)), Segments: segs}}, EncodeOptions{Threads: threads, Ref: ref, ChunkValues: 4096, Best: best}); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	arc := enc(1, ref)
	for _, th := range []int{2, 4} {
		if !bytes.Equal(enc(th, ref), arc) {
			t.Fatalf("archive differs at %d threads", th)
		}
	}
	if best {
		if n := countRefMethod(t, arc, ref, refMethodRange); n == 0 {
			t.Fatal("Best: no range-coded block")
		}
	}
	rd, err := NewReader(bytes.NewReader(arc), int64(len(arc)))
	if err != nil {
		t.Fatal(err)
	}
	if !rd.UsesRef() || len(rd.RefFiles()) != 1 || rd.RefFiles()[0].SHA256 != sha256.Sum256(refB) {
		t.Fatalf("reference not recorded: %+v", rd.RefFiles())
	}
	kinds := map[string]int{}
	for _, b := range rd.Files()[0].Blocks() {
		kinds[b.Kind.String()]++
	}
	if kinds["ref"] == 0 {
		t.Fatalf("no reference blocks: %v", kinds)
	}
	// missing reference: an error before anything is written
	var out bytes.Buffer
	if err := rd.WriteFile(context.Background(), &out, 0, DecodeOptions{}); !errors.Is(err, ErrRefMissing) || out.Len() != 0 {
		t.Fatalf("decode without reference: %v (%d bytes written)", err, out.Len())
	}
	if _, _, err := rd.Tensor("w.BF16"); !errors.Is(err, ErrRefMissing) {
		t.Fatalf("tensor without reference: %v", err)
	}
	// wrong reference
	wrong, _ := NewReference([]Input{{Name: "ref.safetensors", R: bytes.NewReader(cur), Size: int64(len(cur))}})
	if err := rd.UseRef(wrong); !errors.Is(err, ErrRefMismatch) {
		t.Fatalf("wrong reference: %v", err)
	}
	// the right one, under another name and without a layout
	bare, _ := NewReference([]Input{{Name: "renamed", R: bytes.NewReader(refB), Size: int64(len(refB))}})
	if err := rd.UseRef(bare); err != nil {
		t.Fatal(err)
	}
	for _, th := range []int{1, 3} {
		got, err := rd.ReadFile(context.Background(), 0, DecodeOptions{Threads: th})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, cur) {
			t.Fatal("roundtrip differs")
		}
	}
	out.Reset()
	if err := rd.WriteFile(context.Background(), &out, 0, DecodeOptions{Threads: 2}); err != nil || !bytes.Equal(out.Bytes(), cur) {
		t.Fatalf("streamed roundtrip: %v", err)
	}
	for _, s := range segs[1:] {
		got, _, err := rd.Tensor(s.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, cur[s.Offset:s.Offset+s.Length]) {
			t.Fatalf("tensor %q differs", s.Name)
		}
	}
	// never larger than independent coding by more than the per-block
	// index entries and the reference record
	ind, err := CompressBytes(context.Background(), cur, segs, EncodeOptions{ChunkValues: 4096})
	if err != nil {
		t.Fatal(err)
	}
	nb := len(rd.Files()[0].Blocks())
	if len(arc) > len(ind)+nb*8+64 {
		t.Fatalf("reference archive %d bytes, independent %d (+%d blocks)", len(arc), len(ind), nb)
	}
	t.Logf("archive %d bytes (independent %d); blocks: %v", len(arc), len(ind), kinds)
}

// TestRefUnrelated: against a reference of unrelated values of the same
// layout, the archive is at most the block entries larger than without.
func TestRefUnrelated(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 1))
	var ct, rt []refT
	for _, d := range refTestTypes {
		ct = append(ct, refT{"w." + d.String(), d, []int64{20000}, refValues(d, 20000, r)})
		rt = append(rt, refT{"w." + d.String(), d, []int64{20000}, refValues(d, 20000, r)})
	}
	cur, segs := refSafetensors(ct)
	refB, refSegs := refSafetensors(rt)
	ref, err := NewReference([]Input{{Name: "r", R: bytes.NewReader(refB), Size: int64(len(refB)), Segments: refSegs}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Encode(context.Background(), &buf, []Input{{Name: "m", R: bytes.NewReader(cur), Size: int64(len(cur)), Segments: segs}}, EncodeOptions{Ref: ref}); err != nil {
		t.Fatal(err)
	}
	ind, _ := CompressBytes(context.Background(), cur, segs, EncodeOptions{})
	if buf.Len() > len(ind)+len(segs)*8+64 {
		t.Fatalf("unrelated reference: %d bytes, independent %d", buf.Len(), len(ind))
	}
	got, err := DecompressBytes(context.Background(), buf.Bytes(), DecodeOptions{Ref: ref})
	if err != nil || !bytes.Equal(got, cur) {
		t.Fatalf("roundtrip: %v", err)
	}
}

// refGoldenRef is the reference of the golden reference archive: the
// golden input with its float tensors moved by a few ULPs.
func refGoldenRef() ([]byte, []Segment) {
	src, segs := goldenInput()
	ref := bytes.Clone(src)
	r := rand.New(rand.NewPCG(5, 5))
	for _, s := range segs {
		if !s.IsTensor() || floatType(s.DType) == dtype.Invalid {
			continue
		}
		d := floatType(s.DType)
		copy(ref[s.Offset:], refPerturb(d, src[s.Offset:s.Offset+s.Length], r))
	}
	return ref, segs
}

// TestGoldenRef pins the format of reference archives like TestGolden does
// for plain ones: testdata/golden-ref-v7.nzip is the golden input coded
// against refGoldenRef, of format version 7 (a BLAKE3 digest), with
// method-4 difference blocks (method 3 is pinned by golden-ref-v5.nzip,
// method 1 by golden-ref-v3.nzip). The archives of earlier encoders must
// still decode: golden-ref-v2.nzip (format version 2),
// golden-ref-v3-1x.nzip (streams below 2048 symbols as 1-stream blocks),
// golden-ref-v3.nzip (version 3, method 1 only), golden-ref-v5.nzip
// (version 5, method 3) and golden-ref-v6.nzip (version 6, method 4 with a
// SHA-256 digest).
// Regenerate with -update after a deliberate change.
func TestGoldenRef(t *testing.T) {
	src, ref, golden := checkGoldenRef(t, "golden-ref-v7.nzip", false)
	if v := binary.LittleEndian.Uint16(golden[8:]); v != 7 {
		t.Fatalf("golden reference archive of version %d, want 7", v)
	}
	if n := countRefMethod(t, golden, ref, refMethodCompact); n == 0 {
		t.Error("golden reference archive holds no method-4 block")
	}
	old5, err := os.ReadFile(filepath.Join("testdata", "golden-ref-v5.nzip"))
	if err != nil {
		t.Fatal(err)
	}
	if n := countRefMethod(t, old5, ref, refMethodSwitch); n == 0 {
		t.Error("golden-ref-v5.nzip holds no method-3 block")
	}
	for _, name := range []string{"golden-ref-v2.nzip", "golden-ref-v3-1x.nzip", "golden-ref-v3.nzip", "golden-ref-v5.nzip", "golden-ref-v6.nzip"} {
		old, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if out, err := DecompressBytes(context.Background(), old, DecodeOptions{Ref: ref}); err != nil || sha256.Sum256(out) != sha256.Sum256(src) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// a method newer than the archive's version is refused: the method-4
	// archive of version 6 marked version 5 or 4, the method-3 one marked
	// version 4 (the same index layout: version 7 added the digest kind)
	old6, err := os.ReadFile(filepath.Join("testdata", "golden-ref-v6.nzip"))
	if err != nil {
		t.Fatal(err)
	}
	if n := countRefMethod(t, old6, ref, refMethodCompact); n == 0 {
		t.Error("golden-ref-v6.nzip holds no method-4 block")
	}
	for _, c := range []struct {
		arc []byte
		v   uint16
	}{{old6, 5}, {old6, 4}, {old5, 4}} {
		b := bytes.Clone(c.arc)
		binary.LittleEndian.PutUint16(b[8:], c.v)
		if _, err := DecompressBytes(context.Background(), b, DecodeOptions{Ref: ref}); err == nil || !strings.Contains(err.Error(), "newer than the archive's format version") {
			t.Fatalf("difference blocks of a newer method in an archive of version %d: %v", c.v, err)
		}
	}
}

// TestGoldenRefBest pins method 2 (range-coded difference blocks) the same
// way: testdata/golden-ref-best-v7.nzip is the golden input coded against
// refGoldenRef with EncodeOptions.Best, of format version 7, and must hold
// range-coded blocks; golden-ref-best-v4.nzip and golden-ref-best-v5.nzip,
// written before methods 3 and 4, and golden-ref-best-v6.nzip, before
// BLAKE3 digests, must still decode.
func TestGoldenRefBest(t *testing.T) {
	src, ref, golden := checkGoldenRef(t, "golden-ref-best-v7.nzip", true)
	if n := countRefMethod(t, golden, ref, refMethodRange); n == 0 {
		t.Fatal("golden Best archive holds no range-coded block")
	}
	if v := binary.LittleEndian.Uint16(golden[8:]); v != 7 {
		t.Fatalf("golden Best archive of version %d, want 7", v)
	}
	for _, name := range []string{"golden-ref-best-v4.nzip", "golden-ref-best-v5.nzip", "golden-ref-best-v6.nzip"} {
		old, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if out, err := DecompressBytes(context.Background(), old, DecodeOptions{Ref: ref}); err != nil || sha256.Sum256(out) != sha256.Sum256(src) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// checkGoldenRef codes the golden input against refGoldenRef (with
// EncodeOptions.Best when best) and checks that the golden archive testdata/name
// decodes to it and is what the encoder writes (-update rewrites it). It
// returns the input, the reference and the golden archive.
func checkGoldenRef(t *testing.T, name string, best bool) ([]byte, *Reference, []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	src, segs := goldenInput()
	refB, refSegs := refGoldenRef()
	ref, err := NewReference([]Input{{Name: "reference.safetensors", R: bytes.NewReader(refB), Size: int64(len(refB)), Segments: refSegs}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Encode(context.Background(), &buf, []Input{{Name: "example.safetensors", Format: "safetensors", R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}}, EncodeOptions{ChunkValues: 1024, Threads: 2, Ref: ref, Best: best}); err != nil {
		t.Fatal(err)
	}
	arc := buf.Bytes()
	golden := goldenBytes(t, path, arc)
	out, err := DecompressBytes(context.Background(), golden, DecodeOptions{Ref: ref})
	if err != nil {
		t.Fatalf("%s does not decode: %v", name, err)
	}
	if sha256.Sum256(out) != sha256.Sum256(src) {
		t.Fatalf("%s decodes to different bytes", name)
	}
	if !bytes.Equal(arc, golden) {
		t.Fatalf("encoder output changed (%d bytes, %s %d): a format or coding change must be deliberate; regenerate with -update", len(arc), name, len(golden))
	}
	return src, ref, golden
}
