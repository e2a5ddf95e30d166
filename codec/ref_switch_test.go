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

// TestRefSwitchTwin checks the assembly rounds of methods 3 and 4 against fast8Go,
// their twin: the same tokens from every payload, and on payloads with
// bytes changed the same verdict and the same values.
func TestRefSwitchTwin(t *testing.T) {
	if !useSwitchAsm {
		t.Skip("no assembly rounds on this CPU or build")
	}
	ps, refs, curs, ds := refSwitchPayloads(t)
	r := rand.New(rand.NewPCG(5, 9))
	decode := func(p, ref []byte, d dtype.DType, asm bool) ([]byte, error) {
		saved := useSwitchAsm
		useSwitchAsm = asm
		defer func() { useSwitchAsm = saved }()
		got := make([]byte, len(ref))
		return got, (&blockDecoder{}).decodeRefFloat(got, p, ref, d)
	}
	for i, p := range ps {
		for _, asm := range []bool{true, false} {
			got, err := decode(p, refs[i], ds[i], asm)
			if err != nil || !bytes.Equal(got, curs[i]) {
				t.Fatalf("payload %d (%v), asm %v: roundtrip differs (%v)", i, ds[i], asm, err)
			}
		}
		accepted := 0
		for k := 0; k < 300; k++ {
			q := bytes.Clone(p)
			for j := 0; j < 1+k%3; j++ {
				q[r.IntN(len(q))] ^= byte(1 + r.IntN(255))
			}
			g1, e1 := decode(q, refs[i], ds[i], true)
			g2, e2 := decode(q, refs[i], ds[i], false)
			if (e1 == nil) != (e2 == nil) || e1 == nil && !bytes.Equal(g1, g2) {
				t.Fatalf("payload %d (%v), change %d: assembly %v, Go %v", i, ds[i], k, e1, e2)
			}
			if e1 == nil {
				accepted++
			}
		}
		t.Logf("payload %d (%v, %d bytes): %d of 300 changed payloads decode, alike", i, ds[i], len(p), accepted)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
