package trajectory

import (
	"bytes"
	"context"
	"testing"

	"neuralzip/codec"
)

// TestPacker: Pack gives the archive of its parts (Planner, PlanKeyframes,
// appends with those keyframes) when it plans, the archive of appends when
// it does not (Plan off, or no more steps than K), and refuses a walk that
// does not give the steps it announced.
func TestPacker(t *testing.T) {
	steps := synthSteps(7)
	const k = 3
	packer := func(plan bool, steps []step) (*memFile, []bool) {
		t.Helper()
		f := &memFile{}
		w, err := Create(f, k, RefPrevious)
		if err != nil {
			t.Fatal(err)
		}
		pk := Packer{Options: codec.EncodeOptions{Threads: 2}, Plan: plan}
		walks := 0
		err = pk.Pack(context.Background(), w, len(steps), func(pass Pass, fn StepFunc) error {
			walks++
			if (pass == PassMeasure) != (walks == 1 && pk.Keys == nil && plan && len(steps) > k) {
				t.Fatalf("walk %d is %v", walks, pass)
			}
			for _, s := range steps {
				if _, err := fn(s.name, []codec.Input{s.input()}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return f, pk.Keys
	}
	got, keys := packer(true, steps)
	want := packKeys(t, steps, k, PlanKeyframes(measure(t, steps).Saving(), k))
	if keys == nil || !bytes.Equal(got.b, want.b) {
		t.Fatalf("planned: keys %v, %d bytes, the parts give %d bytes", keys, len(got.b), len(want.b))
	}
	regular := pack(t, steps, k, RefPrevious, 2)
	if got, keys := packer(false, steps); keys != nil || !bytes.Equal(got.b, regular.b) {
		t.Fatalf("unplanned: keys %v, not the archive of appends", keys)
	}
	if got, keys := packer(true, steps[:k]); keys != nil || !bytes.Equal(got.b, pack(t, steps[:k], k, RefPrevious, 2).b) {
		t.Fatalf("%d steps: keys %v, not the archive of appends", k, keys)
	}
	for _, n := range []int{len(steps) - 1, len(steps) + 1} {
		w, err := Create(&memFile{}, k, RefPrevious)
		if err != nil {
			t.Fatal(err)
		}
		pk := Packer{Options: codec.EncodeOptions{Threads: 2}, Plan: true}
		err = pk.Pack(context.Background(), w, n, func(_ Pass, fn StepFunc) error {
			for _, s := range steps {
				if _, err := fn(s.name, []codec.Input{s.input()}); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			t.Fatalf("a walk of %d steps accepted as %d", len(steps), n)
		}
	}
}
