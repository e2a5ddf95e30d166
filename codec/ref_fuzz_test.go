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

// refFuzzSeeds returns the references the seeds are coded against and the
// seed archives (small, see AGENTS.md): a small model of every type and,
// when the corpus is there, the first 12 KiB of two real training steps.
func refFuzzSeeds(tb testing.TB) (refs []*Reference, seeds [][]byte) {
	add := func(name string, cur []byte, segs []Segment, refB []byte, refSegs []Segment, chunk int) {
		ref, err := NewReference([]Input{{Name: name, R: bytes.NewReader(refB), Size: int64(len(refB)), Segments: refSegs}})
		if err != nil {
			tb.Fatal(err)
		}
		refs = append(refs, ref)
		for _, best := range []bool{false, true} { // Best: range-coded blocks (method 2)
			var buf bytes.Buffer
			if _, err := Encode(context.Background(), &buf, []Input{{Name: "m", R: bytes.NewReader(cur), Size: int64(len(cur)), Segments: segs}}, EncodeOptions{Ref: ref, ChunkValues: chunk, Best: best}); err != nil {
				tb.Fatal(err)
			}
			seeds = append(seeds, buf.Bytes())
		}
	}
	// a small model: a tensor of every type, moved a little
	r := rand.New(rand.NewPCG(3, 4))
	var ct, rt []refT
	for _, d := range refTestTypes {
		v := refValues(d, 300, r)
		rt = append(rt, refT{"w." + d.String(), d, []int64{300}, v})
		ct = append(ct, refT{"w." + d.String(), d, []int64{300}, refPerturb(d, v, r)})
	}
	cur, cs := refSafetensors(ct)
	refB, rs := refSafetensors(rt)
	add("small", cur, cs, refB, rs, 256)
	if d := sharedDir(); d != "" {
		dir := filepath.Join(d, "trajectories", "tinygpt-fortunes")
		a, err1 := os.ReadFile(filepath.Join(dir, "step_000950.bf16.safetensors"))
		b, err2 := os.ReadFile(filepath.Join(dir, "step_001000.bf16.safetensors"))
		if err1 == nil && err2 == nil {
			cut := func(src []byte) ([]byte, []Segment) {
				var keep []Segment
				for _, s := range safetensorsSegments(src) {
					if s.Offset+s.Length <= 12<<10 {
						keep = append(keep, s)
					}
				}
				return src[:12<<10], keep
			}
			ra, sa := cut(a)
			rb, sb := cut(b)
			add("step_000950", rb, sb, ra, sa, 2048)
		}
	}
	return refs, seeds
}

// FuzzRefDecode feeds mutated reference archives to the reader with the
// references of the seeds: it must return an error or the data, never
// panic or hang, and a tensor read on its own must be the bytes of the
// file that holds it.
func FuzzRefDecode(f *testing.F) {
	refs, seeds := refFuzzSeeds(f)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arc []byte) {
		rd, err := NewReader(bytes.NewReader(arc), int64(len(arc)))
		if err != nil {
			return
		}
		defer rd.Close()
		ok := false
		for _, ref := range refs {
			if rd.UseRef(ref) == nil {
				ok = true
				break
			}
		}
		if !ok {
			return
		}
		fuzzCheckFiles(t, rd, nil, fuzzBudget(len(arc)))
	})
}

// FuzzRefBlock decodes arbitrary reference-block payloads of every type
// and of block lengths around the decoders' edges (one stream below 512
// values, the last round of eight streams, partial 64-value runs) against
// fixed reference values, bypassing the index and its checksums.
func FuzzRefBlock(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	be := &blockEncoder{}
	sizes := []int{777, 1, 5, 40, 63, 64, 65, 511, 512, 513, 551, 1000}
	refs := map[dtype.DType][]byte{}
	for i, d := range refTestTypes {
		ref := refValues(d, 1000, r)
		refs[d] = ref
		cur := refPerturb(d, ref, r)
		for k, n := range sizes[:4] {
			nb := n * d.Size()
			for _, m := range []byte{refMethodULP, refMethodSwitch, refMethodCompact} {
				refForceMethod = m
				p, _ := be.encodeRefFloat(nil, cur[:nb], ref[:nb], d)
				refForceMethod = 0
				f.Add(byte(i), byte(k), p)
			}
			spec, _ := refSpecFor(d)
			f.Add(byte(i), byte(k), be.ref.appendRefRange(nil, &spec, n)) // method 2
		}
	}
	f.Fuzz(func(t *testing.T, which, size byte, payload []byte) {
		d := refTestTypes[int(which)%len(refTestTypes)]
		ref := refs[d][:sizes[int(size)%len(sizes)]*d.Size()]
		bd := &blockDecoder{}
		dst := make([]byte, len(ref))
		err := bd.decodeRefFloat(dst, payload, ref, d)
		// the AVX2 tier and pure Go accept and reject the same payloads,
		// and decode them to the same values
		for _, tier := range []string{"avx2", "go"} {
			got := make([]byte, len(ref))
			var e error
			withoutAVX512(tier == "go", func() { e = (&blockDecoder{}).decodeRefFloat(got, payload, ref, d) })
			if (e == nil) != (err == nil) || err == nil && !bytes.Equal(got, dst) {
				t.Fatalf("%v, %d values: %s tier gives %v, the fastest %v", d, len(ref)/d.Size(), tier, e, err)
			}
		}
		if err != nil {
			return
		}
		// what decodes must re-encode to something that decodes the same
		p, _ := be.encodeRefFloat(nil, dst, ref, d)
		again := make([]byte, len(ref))
		if err := bd.decodeRefFloat(again, p, ref, d); err != nil || !bytes.Equal(again, dst) {
			t.Fatalf("re-encoded block does not roundtrip: %v", err)
		}
	})
}

// withoutAVX512 runs fn with the AVX-512 paths switched off (and AVX2 and
// the BMI2 token rounds of method 3 too when noAVX2: pure Go), as on a CPU
// without them.
func withoutAVX512(noAVX2 bool, fn func()) {
	defer setFeatures(func(f *features) {
		f.avx512, f.avx512Group, f.avx512Tokens, f.avx512Wide, f.avx512Lanes, f.avx512Pairs = false, false, false, false, false, false
		if noAVX2 {
			f.avx2, f.switchAsm = false, false
		}
	})()
	fn()
}
