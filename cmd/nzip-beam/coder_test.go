package main

import (
	"reflect"
	"testing"

	"neuralzip/dtype"
	"neuralzip/store"
)

// TestCoders: every element coder gives back what it was given, and
// refuses an element cut short or with bytes left over (an error, never
// a panic).
func TestCoders(t *testing.T) {
	u := store.UnitInfo{Model: 3, File: 1, Index: 70000, Src: "s3://b/k/model.safetensors", Span: store.Span{Off: 1 << 40, N: 12, DType: dtype.BF16},
		Hash: store.Hash{1, 2, 3}, FP: []float32{1.5, -0, 3e-39}, Casts: []store.Hash{{9}, {8}}}
	bare := store.UnitInfo{Src: "", Span: store.Span{N: 5}} // opaque: no fingerprint, no casts
	nu := store.NewUnit{Unit: u, Kind: store.KindDelta, Base: store.Hash{7}, Pack: store.Hash{6}, Off: 5, Len: 9, CRC: 0xdeadbeef}
	cases := []struct {
		v   any
		enc func(any) []byte
		dec func([]byte) (any, error)
	}{
		{u, func(v any) []byte { return encUnit(v.(store.UnitInfo)) }, func(b []byte) (any, error) { return decUnit(b) }},
		{bare, func(v any) []byte { return encUnit(v.(store.UnitInfo)) }, func(b []byte) (any, error) { return decUnit(b) }},
		{store.Plan{Unit: u, Kind: store.KindDelta, Base: store.Hash{4}, BaseAt: &bare}, func(v any) []byte { return encPlan(v.(store.Plan)) }, func(b []byte) (any, error) { return decPlan(b) }},
		{store.Plan{Unit: bare, Kind: store.KindNzip}, func(v any) []byte { return encPlan(v.(store.Plan)) }, func(b []byte) (any, error) { return decPlan(b) }},
		{packEl{Model: 2, New: []store.NewUnit{nu, {Unit: bare, Kind: store.KindCast}}}, func(v any) []byte { return encPack(v.(packEl)) }, func(b []byte) (any, error) { return decPack(b) }},
	}
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
