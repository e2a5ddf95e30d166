package main

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"neuralzip/dtype"
	"neuralzip/store"
)

// coderCase is an element with its coder.
type coderCase struct {
	v   any
	enc func(any) []byte
	dec func([]byte) (any, error)
}

// coderCases are elements of every kind: a unit with a fingerprint and
// casts, a bare opaque one, plans with and without a base unit, a pack.
func coderCases() []coderCase {
	u := store.UnitInfo{Model: 3, File: 1, Index: 70000, Src: "s3://b/k/model.safetensors", Span: store.Span{Off: 1 << 40, N: 12, DType: dtype.BF16},
		Hash: store.Hash{1, 2, 3}, FP: []float32{1.5, -0, 3e-39}, Casts: []store.Hash{{9}, {8}}}
	bare := store.UnitInfo{Src: "", Span: store.Span{N: 5}} // opaque: no fingerprint, no casts
	nu := store.NewUnit{Unit: u, Kind: store.KindDelta, Base: store.Hash{7}, Pack: store.Hash{6}, Off: 5, Len: 9, CRC: 0xdeadbeef}
	unit := func(v any) []byte { return encUnit(v.(store.UnitInfo)) }
	unitDec := func(b []byte) (any, error) { return decUnit(b) }
	plan := func(v any) []byte { return encPlan(v.(store.Plan)) }
	planDec := func(b []byte) (any, error) { return decPlan(b) }
	return []coderCase{
		{u, unit, unitDec},
		{bare, unit, unitDec},
		{store.Plan{Unit: u, Kind: store.KindDelta, Base: store.Hash{4}, BaseAt: &bare}, plan, planDec},
		{store.Plan{Unit: bare, Kind: store.KindNzip}, plan, planDec},
		{packEl{Model: 2, New: []store.NewUnit{nu, {Unit: bare, Kind: store.KindCast}}}, func(v any) []byte { return encPack(v.(packEl)) }, func(b []byte) (any, error) { return decPack(b) }},
	}
}

// TestCoderCounts: counts that overflow when multiplied by an entry's
// size, or that exceed what is left, are errors, not allocations.
func TestCoderCounts(t *testing.T) {
	var e enc
	e.unit(store.UnitInfo{})
	b := []byte(e)
	// the fingerprint count is the byte after the hash: 0 (none) in b
	at := len(b) - 2
	for _, n := range []uint64{1<<62 + 1, 1 << 40, 2} {
		bad := binary.AppendUvarint(append([]byte{}, b[:at]...), n)
		bad = append(bad, 0)
		if _, err := decUnit(bad); err == nil {
			t.Errorf("a fingerprint of %d values in %d bytes: no error", n-1, len(bad))
		}
	}
}

// FuzzCoders decodes arbitrary bytes with every element coder: an error,
// or an element whose encoding decodes and encodes again to itself; never a panic
// or an allocation beyond the input's size. The first byte picks the
// coder; the seeds are the encodings of coderCases.
func FuzzCoders(f *testing.F) {
	cs := coderCases()
	for i, c := range cs {
		f.Add(append([]byte{byte(i)}, c.enc(c.v)...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		c := cs[int(b[0])%len(cs)]
		v, err := c.dec(b[1:])
		if err != nil {
			return
		}
		// compared as encodings: a NaN in a fingerprint is not DeepEqual to itself
		e := c.enc(v)
		w, err := c.dec(e)
		if err != nil || !bytes.Equal(c.enc(w), e) {
			t.Fatalf("%+v encodes to what decodes as %+v, %v", v, w, err)
		}
	})
}

// TestCoders: every element coder gives back what it was given, and
// refuses an element cut short or with bytes left over (an error, never
// a panic).
func TestCoders(t *testing.T) {
	cases := coderCases()
	for i, c := range cases {
		b := c.enc(c.v)
		got, err := c.dec(b)
		if err != nil || !reflect.DeepEqual(got, c.v) {
			t.Fatalf("case %d: %+v, %v; want %+v", i, got, err, c.v)
		}
		for n := range len(b) {
			if _, err := c.dec(b[:n]); err == nil {
				t.Fatalf("case %d: cut to %d of %d bytes: no error", i, n, len(b))
			}
		}
		if _, err := c.dec(append(b, 0)); err == nil {
			t.Fatalf("case %d: a trailing byte: no error", i)
		}
	}
}
