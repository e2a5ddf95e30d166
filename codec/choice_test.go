package codec

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand"
	"strings"
	"testing"

	"neuralzip/codec/prog"
	"neuralzip/dtype"
)

// choiceFile is a small model with a BF16 tensor with zeros, an F32 one,
// an F16 one and Q8_0 records between opaque bytes.
func choiceFile() ([]byte, []Segment) {
	rng := rand.New(rand.NewSource(48))
	var src []byte
	var segs []Segment
	src = append(src, "header:0123456"...)
	add := func(name string, d dtype.DType, typ string, b []byte) {
		segs = append(segs, Segment{Name: name, DType: d, Type: typ, Shape: []int64{int64(len(b) / max(d.Size(), 1))}, Offset: int64(len(src)), Length: int64(len(b))})
		src = append(src, b...)
	}
	w := make([]byte, 2*20000)
	for i := 0; i < 20000; i++ {
		if rng.Intn(3) == 0 {
			continue
		}
		binary.LittleEndian.PutUint16(w[2*i:], uint16(math.Float32bits(float32(rng.NormFloat64()*0.02))>>16))
	}
	add("w", dtype.BF16, "", w)
	f := make([]byte, 4*3000)
	for i := 0; i < 3000; i++ {
		binary.LittleEndian.PutUint32(f[4*i:], math.Float32bits(float32(rng.NormFloat64())))
	}
	add("b", dtype.F32, "", f)
	h := make([]byte, 2*5000)
	for i := 0; i < 5000; i++ {
		binary.LittleEndian.PutUint16(h[2*i:], uint16(0x3000+rng.Intn(0x1000)))
	}
	add("h", dtype.F16, "", h)
	add("q", dtype.Invalid, "Q8_0", quantRecords(prog.ByName("Q8_0"), 64, 5))
	src = append(src, "tail"...)
	return src, segs
}

// rootOp is what a block coded with program p shows as its root
// (BlockProgram), as kind or operator.
func programShows(p Program, b BlockInfo, root ProgramNode) bool {
	switch p {
	case ProgramFields, ProgramFieldsOwn:
		return b.Kind == KindFloat && strings.HasPrefix(root.Op, "float fields")
	case ProgramSparse:
		return b.Kind == KindFloat && strings.HasPrefix(root.Op, "sparse")
	case ProgramPlanes, ProgramZstdPlanes:
		return b.Kind == KindFloat && strings.HasPrefix(root.Op, "float byte planes")
	case ProgramZstd:
		return b.Kind == KindZstd
	case ProgramRaw:
		return b.Kind == KindStored
	case ProgramCM:
		return b.Kind == KindCM
	case ProgramRecords:
		return b.Kind == KindRecords
	}
	return true
}

// tensorBlocks checks that archive a codes tensor g in blocks of its own,
// each as program p shows, and returns their bytes.
func tensorBlocks(t *testing.T, a []byte, g Segment, p Program) int64 {
	t.Helper()
	rd, err := NewReader(bytes.NewReader(a), int64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got, coded int64
	for bi, b := range rd.Files()[0].Blocks() {
		if b.Offset+b.Length <= g.Offset || b.Offset >= g.Offset+g.Length {
			continue
		}
		if b.Offset < g.Offset || b.Offset+b.Length > g.Offset+g.Length {
			t.Fatalf("%s, %v: block %d [%d,+%d) is not within the tensor [%d,+%d)", g.Name, p, bi, b.Offset, b.Length, g.Offset, g.Length)
		}
		root, err := rd.BlockProgram(0, bi)
		if err != nil {
			t.Fatal(err)
		}
		if !programShows(p, b, root) {
			t.Errorf("%s, %v: block %d is %v %q", g.Name, p, bi, b.Kind, root.Op)
		}
		got += b.Length
		coded += b.Compressed
	}
	if got != g.Length {
		t.Fatalf("%s, %v: blocks hold %d of the tensor's %d bytes", g.Name, p, got, g.Length)
	}
	return coded
}

// Every program that applies to a tensor codes it (each block as the
// program says) and decodes back bit for bit, at several chunk sizes.
func TestProgramsChosen(t *testing.T) {
	src, segs := choiceFile()
	for _, chunk := range []int{0, 4096} {
		for _, g := range segs {
			progs := ProgramsFor(g, nil)
			if len(progs) < 4 {
				t.Errorf("%s: programs %v", g.Name, progs)
			}
			for _, p := range progs {
				opt := EncodeOptions{ChunkValues: chunk, Threads: 2, Programs: map[string]Program{g.Name: p}}
				a, err := CompressBytes(nil, src, segs, opt)
				if err != nil {
					t.Fatalf("%s, %v: %v", g.Name, p, err)
				}
				back, err := DecompressBytes(nil, a, DecodeOptions{})
				if err != nil || !bytes.Equal(back, src) {
					t.Fatalf("%s, %v, chunk %d: round trip: %v", g.Name, p, chunk, err)
				}
				tensorBlocks(t, a, g, p)
			}
		}
	}
}

// Programs that do not apply are ignored; NoSparse refuses those that
// need a newer format.
func TestProgramsRules(t *testing.T) {
	src, segs := choiceFile()
	plain, err := CompressBytes(nil, src, segs, EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := CompressBytes(nil, src, segs, EncodeOptions{Programs: map[string]Program{"q": ProgramSparse, "w": ProgramRecords, "b": ProgramFieldsOwn, "nobody": ProgramRaw}})
	if err != nil || !bytes.Equal(a, plain) {
		t.Fatalf("programs that do not apply changed the archive (%v)", err)
	}
	if _, err := CompressBytes(nil, src, segs, EncodeOptions{NoSparse: true, Programs: map[string]Program{"w": ProgramSparse}}); err == nil {
		t.Fatal("NoSparse with a sparse program: no error")
	}
	if _, err := CompressBytes(nil, src, segs, EncodeOptions{NoSparse: true, Programs: map[string]Program{"w": ProgramPlanes}}); err != nil {
		t.Fatal(err)
	}
	// against a reference: chosen programs win over difference blocks
	ref := append([]byte(nil), src...)
	ref[len(ref)-1] ^= 1
	r, err := NewReference([]Input{{Name: "model.bin", R: bytes.NewReader(ref), Size: int64(len(ref)), Segments: segs}})
	if err != nil {
		t.Fatal(err)
	}
	a, err = CompressBytes(nil, src, segs, EncodeOptions{Ref: r, Programs: map[string]Program{"w": ProgramSparse, "q": ProgramZstd}})
	if err != nil {
		t.Fatal(err)
	}
	if back, err := DecompressBytes(nil, a, DecodeOptions{Ref: r}); err != nil || !bytes.Equal(back, src) {
		t.Fatalf("round trip with a reference: %v", err)
	}
	tensorBlocks(t, a, segs[0], ProgramSparse)
	tensorBlocks(t, a, segs[3], ProgramZstd)
	for p := ProgramAuto; p < numPrograms; p++ {
		if q, err := ParseProgram(p.String()); err != nil || q != p || p.Describe() == "" {
			t.Errorf("%v: parsed as %v, %v", p, q, err)
		}
	}
	if _, err := ParseProgram("lzma"); err == nil {
		t.Error("ParseProgram(lzma): no error")
	}
}

// A setup's programs: written as version 3, read back, honoured by the
// encoder as EncodeOptions.Programs are, overridden by them; setups
// without programs keep their bytes (version 2).
func TestSetupPrograms(t *testing.T) {
	src, segs := choiceFile()
	g := GaussianSetup()
	same, err := g.WithPrograms(0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(same.Bytes(), g.Bytes()) || !same.IsGaussian() {
		t.Fatal("a setup without programs changed its bytes")
	}
	s, err := g.WithPrograms(0, []SetupProgram{{"w", ProgramSparse}, {"b", ProgramFieldsOwn}, {"q", ProgramZstd}, {"h", ProgramPlanes}})
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(s.Bytes()[8:]); v != 3 {
		t.Fatalf("setup with programs: version %d", v)
	}
	s2, err := s.WithPrograms(0, []SetupProgram{{"h", ProgramAuto}, {"q", ProgramRaw}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseSetup(s2.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := []SetupProgram{{"b", ProgramFieldsOwn}, {"q", ProgramRaw}, {"w", ProgramSparse}}
	if len(p.Programs) != len(want) || len(p.Sections) != len(g.Sections) || p.ID() == g.ID() {
		t.Fatalf("parsed programs %v, %d sections", p.Programs, len(p.Sections))
	}
	for i, w := range want {
		if p.Programs[i] != w || p.ProgramFor(w.Tensor) != w.Program {
			t.Fatalf("program %d: %v, want %v", i, p.Programs[i], w)
		}
	}
	a, err := CompressBytes(nil, src, segs, EncodeOptions{Setup: p})
	if err != nil {
		t.Fatal(err)
	}
	if back, err := DecompressBytes(nil, a, DecodeOptions{}); err != nil || !bytes.Equal(back, src) {
		t.Fatalf("round trip: %v", err)
	}
	for _, w := range want {
		for _, sg := range segs {
			if sg.Name == w.Tensor {
				tensorBlocks(t, a, sg, w.Program)
			}
		}
	}
	// options over the setup
	a, err = CompressBytes(nil, src, segs, EncodeOptions{Setup: p, Programs: map[string]Program{"q": ProgramRecords}})
	if err != nil {
		t.Fatal(err)
	}
	tensorBlocks(t, a, segs[3], ProgramRecords)
	// a setup of programs only
	only, err := (*Setup)(nil).WithPrograms(4096, []SetupProgram{{"w", ProgramZstdPlanes}})
	if err != nil || len(only.Sections) != 0 || only.ChunkValues != 4096 {
		t.Fatalf("programs-only setup: %v", err)
	}
	a, err = CompressBytes(nil, src, segs, EncodeOptions{Setup: only})
	if err != nil {
		t.Fatal(err)
	}
	if back, err := DecompressBytes(nil, a, DecodeOptions{}); err != nil || !bytes.Equal(back, src) {
		t.Fatalf("round trip: %v", err)
	}
	tensorBlocks(t, a, segs[0], ProgramZstdPlanes)
	// damaged: a program named twice, or auto
	bad := &Setup{ChunkValues: 4096, Programs: []SetupProgram{{"w", ProgramRaw}, {"w", ProgramZstd}}}
	if _, err := parseSetup(bad.marshal()); err == nil {
		t.Error("a tensor named twice: no error")
	}
	bad.Programs = []SetupProgram{{"w", ProgramAuto}}
	if _, err := parseSetup(bad.marshal()); err == nil {
		t.Error("program auto in a file: no error")
	}
}
