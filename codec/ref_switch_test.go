package codec

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/dtype"
)

// refSwitchPayloads returns method-3 and method-4 payloads with their
// references: real trajectory blocks where the corpus is (an early step,
// where every value moves, and the last, where most do not), and random
// moves of every type.
func refSwitchPayloads(t *testing.T) (ps, refs, curs [][]byte, ds []dtype.DType) {
	be := &blockEncoder{}
	add := func(cur, ref []byte, d dtype.DType) {
		for _, m := range []byte{refMethodSwitch, refMethodCompact} {
			refForceMethod = m
			p, ok := be.encodeRefFloat(nil, cur, ref, d)
			refForceMethod = 0
			if !ok || p[0] != m {
				t.Fatalf("%v: no method-%d payload", d, m)
			}
			ps, refs, curs, ds = append(ps, p), append(refs, ref), append(curs, cur), append(ds, d)
		}
	}
	if d := sharedDir(); d != "" && fileExists(filepath.Join(d, "trajectories", "tinygpt-fortunes", "step_000000.bf16.safetensors")) {
		for _, st := range [][2]int{{0, 50}, {950, 1000}} {
			prev, cur := refBenchPair(t, st[0], st[1])
			for _, s := range safetensorsSegments(cur) {
				if s.Length == 2*65536 {
					add(cur[s.Offset:s.Offset+s.Length], prev[s.Offset:s.Offset+s.Length], dtype.BF16)
					break
				}
			}
		}
	} else {
		t.Log("trajectory corpus absent: random values only")
	}
	r := rand.New(rand.NewPCG(31, 41))
	for _, d := range refTestTypes {
		for _, n := range []int{5, 333, 4099} {
			ref := refValues(d, n, r)
			add(refPerturb(d, ref, r), ref, d)
		}
	}
	return
}

// TestRefSwitchTwin checks the token rounds of methods 3 and 4 — the
// assembly (where the CPU has it) and fast8Go, its twin, both reading the
// tables without bounds checks — against decoding with window and tail
// alone, whose reads are all checked: the same tokens from every payload,
// and on payloads with bytes changed the same verdict and the same values.
func TestRefSwitchTwin(t *testing.T) {
	ps, refs, curs, ds := refSwitchPayloads(t)
	r := rand.New(rand.NewPCG(5, 9))
	type mode struct {
		name        string
		asm, rounds bool
	}
	modes := []mode{{"checked", false, false}, {"fast8Go", false, true}}
	if use.switchAsm {
		modes = append(modes, mode{"assembly", true, true})
	}
	decode := func(p, ref []byte, d dtype.DType, m mode) ([]byte, error) {
		defer setFeatures(func(f *features) { f.switchAsm, f.switchRounds = m.asm, m.rounds })()
		got := make([]byte, len(ref))
		return got, (&blockDecoder{}).decodeRefFloat(got, p, ref, d)
	}
	for i, p := range ps {
		for _, m := range modes {
			got, err := decode(p, refs[i], ds[i], m)
			if err != nil || !bytes.Equal(got, curs[i]) {
				t.Fatalf("payload %d (%v), %s: roundtrip differs (%v)", i, ds[i], m.name, err)
			}
		}
		accepted := 0
		for k := 0; k < 300; k++ {
			q := bytes.Clone(p)
			for j := 0; j < 1+k%3; j++ {
				q[r.IntN(len(q))] ^= byte(1 + r.IntN(255))
			}
			g0, e0 := decode(q, refs[i], ds[i], modes[0])
			for _, m := range modes[1:] {
				g, e := decode(q, refs[i], ds[i], m)
				if (e0 == nil) != (e == nil) || e0 == nil && !bytes.Equal(g0, g) {
					t.Fatalf("payload %d (%v), change %d: checked %v, %s %v", i, ds[i], k, e0, m.name, e)
				}
			}
			if e0 == nil {
				accepted++
			}
		}
		t.Logf("payload %d (%v, %d bytes): %d of 300 changed payloads decode, alike in %d modes", i, ds[i], len(p), accepted, len(modes))
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestBitwinHeaderCopies: codec's and package huff's copies of the bit
// window macros are the same file.
func TestBitwinHeaderCopies(t *testing.T) {
	a, err := os.ReadFile("bitwin_amd64.h")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("huff", "bitwin_amd64.h"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("bitwin_amd64.h and huff/bitwin_amd64.h differ: change both")
	}
}
