package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestOverlay: an overlay over a read transaction answers gets, scans
// (every prefix, in key order) and walks (from every key, both ways, up to
// a limit) as a write transaction that made the same
// puts and deletes does, and leaves the index it reads unchanged.
func TestOverlay(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	key := func() []byte { return []byte(fmt.Sprintf("%c%c", 'a'+rng.IntN(4), 'a'+rng.IntN(4))) }
	for round := range 50 {
		base := newMemKV()
		if err := base.update(func(t tx) error {
			for range rng.IntN(12) {
				if err := t.put(bFP, key(), []byte{byte(rng.IntN(256))}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		before := fmt.Sprint(base.b[bFP])
		type op struct {
			k []byte
			v []byte // nil: delete
		}
		var ops []op
		for range rng.IntN(12) {
			o := op{k: key()}
			if rng.IntN(3) > 0 {
				o.v = []byte{byte(rng.IntN(256))}
			}
			ops = append(ops, o)
		}
		dump := func(t tx) string {
			out := ""
			for _, p := range []string{"", "a", "b", "ca", "dd", "x"} {
				t.scan(bFP, []byte(p), func(k, v []byte) error {
					out += fmt.Sprintf("%s:%s=%x ", p, k, v)
					return nil
				})
				out += fmt.Sprintf("| %x ", t.get(bFP, []byte(p)))
			}
			return out + walks(t)
		}
		var want, got string
		base.view(func(bt tx) error {
			o := newOverlay(bt)
			for _, x := range ops {
				if x.v == nil {
					o.del(bFP, x.k)
				} else {
					o.put(bFP, x.k, x.v)
				}
			}
			got = dump(o)
			return nil
		})
		cp := newMemKV()
		for k, v := range base.b[bFP] {
			cp.b[bFP][k] = v
		}
		cp.update(func(wt tx) error {
			for _, x := range ops {
				if x.v == nil {
					wt.del(bFP, x.k)
				} else {
					wt.put(bFP, x.k, x.v)
				}
			}
			want = dump(wt)
			return nil
		})
		if got != want {
			t.Fatalf("round %d: overlay\n%s\nwrite transaction\n%s", round, got, want)
		}
		if fmt.Sprint(base.b[bFP]) != before {
			t.Fatalf("round %d: the overlay wrote to the index it reads", round)
		}
	}
}

// walks lists what walks of bucket bFP meet: every prefix, from every key,
// both ways, stopping after 1, 3 and all keys.
func walks(t tx) string {
	out := ""
	for _, p := range []string{"", "a", "c"} {
		for _, from := range []string{"", "a", "ab", "b", "bz", "c", "cc", "d", "dd", "e"} {
			if len(from) < len(p) || from[:len(p)] != p {
				continue
			}
			for _, back := range []bool{false, true} {
				for _, lim := range []int{1, 3, 100} {
					n := 0
					t.walk(bFP, []byte(p), []byte(from), back, func(k, v []byte) (bool, error) {
						out += fmt.Sprintf("%s>%s %v %d:%s=%x ", p, from, back, lim, k, v)
						n++
						return n < lim, nil
					})
					out += "|"
				}
			}
		}
	}
	return out
}
