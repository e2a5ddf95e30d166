package codec

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/dtype"
)

// archiveTwin decodes arc with d and with DecompressBytesTo (one thread,
// as d decodes): the same bytes or the same error. d's output goes into
// a dirty buffer, so that a byte it left unwritten shows. It returns
// whether the archive decoded.
func archiveTwin(t *testing.T, d *ArchiveDecoder, arc []byte, opt DecodeOptions) bool {
	t.Helper()
	opt.Threads = 1
	want, werr := DecompressBytesTo(context.Background(), nil, arc, opt)
	dst := bytes.Repeat([]byte{0xa5}, len(want)+7)
	got, gerr := d.Decode(dst[:0], arc, opt)
	if d.SkipCRC {
		// blocks unchecked: where the checked path decodes, the same
		// bytes; elsewhere an error or some bytes, never a panic
		if werr == nil && (gerr != nil || !bytes.Equal(got, want)) {
			t.Fatalf("with SkipCRC: %v, or other bytes than DecompressBytesTo's", gerr)
		}
		return werr == nil
	}
	switch {
	case werr != nil && gerr != nil:
		if werr.Error() != gerr.Error() {
			t.Fatalf("errors differ:\nDecompressBytesTo: %v\nArchiveDecoder:    %v", werr, gerr)
		}
		return false
	case werr != nil || gerr != nil:
		t.Fatalf("DecompressBytesTo: %v, ArchiveDecoder: %v", werr, gerr)
	case !bytes.Equal(got, want):
		t.Fatalf("ArchiveDecoder decodes %d bytes other than DecompressBytesTo's %d", len(got), len(want))
	}
	return true
}

// archiveTwinInputs are archives of one file of every kind the decoder
// meets (the fuzz seeds, reference archives with their references, the
// goldens) and the setups and references they need.
func archiveTwinInputs(t *testing.T) (arcs [][]byte, opts []DecodeOptions) {
	for _, s := range fuzzSeeds(t) {
		arcs, opts = append(arcs, s), append(opts, DecodeOptions{SkipHash: true})
	}
	refs, seeds := refFuzzSeeds(t)
	for i, s := range seeds {
		arcs, opts = append(arcs, s), append(opts, DecodeOptions{SkipHash: true, Ref: refs[i/2]})
	}
	setup, err := os.ReadFile(filepath.Join("testdata", "golden-setup.nzsetup"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseSetup(setup)
	if err != nil {
		t.Fatal(err)
	}
	goldens, _ := filepath.Glob(filepath.Join("testdata", "golden-*.nzip"))
	for _, g := range goldens {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		arcs, opts = append(arcs, b), append(opts, DecodeOptions{SkipHash: true, Setup: st})
	}
	return arcs, opts
}

// TestArchiveDecoderTwin holds ArchiveDecoder to DecompressBytesTo on
// whole archives and on damaged copies of them (bytes changed in the
// header, the blocks and the index), one decoder for all of them in
// turn, as the store uses it.
func TestArchiveDecoderTwin(t *testing.T) {
	arcs, opts := archiveTwinInputs(t)
	var d ArchiveDecoder
	nocrc := ArchiveDecoder{SkipCRC: true}
	r := rand.New(rand.NewPCG(47, 2))
	decoded := 0
	for i, arc := range arcs {
		if archiveTwin(t, &d, arc, opts[i]) {
			decoded++
		}
		archiveTwin(t, &nocrc, arc, opts[i])
		for range 12 {
			bad := bytes.Clone(arc)
			bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
			archiveTwin(t, &d, bad, opts[i])
			archiveTwin(t, &nocrc, bad, opts[i])
		}
		archiveTwin(t, &d, arc[:len(arc)-1-r.IntN(len(arc)-1)], opts[i])
	}
	if decoded < len(arcs)/2 {
		t.Fatalf("only %d of %d archives decoded", decoded, len(arcs))
	}
	// without the reference, with the digest checked: the general path's errors and bytes
	for i, arc := range arcs {
		o := opts[i]
		o.Ref = nil
		archiveTwin(t, &d, arc, o)
		o.SkipHash = false
		archiveTwin(t, &d, arc, o)
	}
}

// TestArchiveDecoderNoAllocs: once warm, decoding a unit-like archive
// (one BF16 tensor) into a buffer that holds it allocates little: the
// reader and its index, not the index's bytes or a block decoder.
func TestArchiveDecoderNoAllocs(t *testing.T) {
	v := realisticValues(dtype.BF16, 8192, 9)
	arc, err := CompressBytes(context.Background(), v, []Segment{{Name: "t", DType: dtype.BF16, Shape: []int64{int64(len(v) / 2)}, Length: int64(len(v))}}, EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var d ArchiveDecoder
	dst := make([]byte, len(v))
	opt := DecodeOptions{Threads: 1, SkipHash: true}
	n := testing.AllocsPerRun(20, func() {
		out, err := d.Decode(dst, arc, opt)
		if err != nil || !bytes.Equal(out, v) {
			t.Fatalf("decode: %v", err)
		}
	})
	m := testing.AllocsPerRun(20, func() {
		if _, err := DecompressBytesTo(context.Background(), dst, arc, opt); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("allocations per archive: ArchiveDecoder %.0f, DecompressBytesTo %.0f", n, m)
	if n >= m {
		t.Fatalf("ArchiveDecoder allocates %.0f times per archive, DecompressBytesTo %.0f", n, m)
	}
}

// FuzzArchiveDecoder feeds arbitrary archives to an ArchiveDecoder that
// has just decoded another (its kept state must not leak into the next)
// and compares it with DecompressBytesTo, without a reference and with
// each of the reference seeds': the same bytes or the same error, never
// a panic; with SkipCRC, the same bytes wherever DecompressBytesTo
// decodes, and no panic elsewhere.
func FuzzArchiveDecoder(f *testing.F) {
	refs, rseeds := refFuzzSeeds(f)
	seeds := fuzzSeeds(f)
	for _, s := range append(seeds, rseeds...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arc []byte) {
		rd, err := NewMemReader(arc)
		if err == nil {
			for _, fi := range rd.Files() {
				if fi.Size > fuzzBudget(len(arc)) {
					return
				}
			}
		}
		var d ArchiveDecoder
		if _, err := d.Decode(nil, seeds[0], DecodeOptions{SkipHash: true}); err != nil {
			t.Fatal(err)
		}
		nocrc := ArchiveDecoder{SkipCRC: true}
		for _, dec := range []*ArchiveDecoder{&d, &nocrc} {
			archiveTwin(t, dec, arc, DecodeOptions{SkipHash: true})
			for _, ref := range refs {
				archiveTwin(t, dec, arc, DecodeOptions{SkipHash: true, Ref: ref})
			}
		}
	})
}
