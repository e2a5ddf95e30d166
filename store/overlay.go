package store

import (
	"bytes"
	"slices"
	"sort"
	"strings"
)

// overlay is a transaction whose writes stay in memory, over a read
// transaction of the index: the planner (PlanFamily) commits each planned
// model into one with commitModel, the code the real commit runs, so that
// the next model is planned on the index as the commit will leave it —
// recasts, the depths they move and cast hints included. Nothing written
// to an overlay reaches the index.
type overlay struct {
	base tx
	w    map[string]map[string]*[]byte // bucket → key → value; a nil value: deleted
	keys map[string][]string           // bucket → its keys in w, sorted (absent: to sort again)
}

func newOverlay(base tx) *overlay {
	return &overlay{base: base, w: map[string]map[string]*[]byte{}}
}

func (o *overlay) get(bucket string, key []byte) []byte {
	if v, ok := o.w[bucket][string(key)]; ok {
		if v == nil {
			return nil
		}
		return *v
	}
	return o.base.get(bucket, key)
}

// prefetchKeys passes the hint on to the index below.
func (o *overlay) prefetchKeys(want []bucketKey) { prefetch(o.base, want...) }

func (o *overlay) set(bucket string, key []byte, v *[]byte) {
	bk := o.w[bucket]
	if bk == nil {
		bk = map[string]*[]byte{}
		o.w[bucket] = bk
	}
	if _, ok := bk[string(key)]; !ok {
		delete(o.keys, bucket) // a new key: sorted again when next read
	}
	bk[string(key)] = v
}

// mine is the overlay's keys of bucket with prefix, sorted: the keys
// sorted once after each write of a new key (a planner enters a model,
// then walks many times), the prefix's run found by binary search.
// The result is shared: not to be changed.
func (o *overlay) mine(bucket string, prefix []byte) []string {
	ks, ok := o.keys[bucket]
	if !ok {
		ks = make([]string, 0, len(o.w[bucket]))
		for k := range o.w[bucket] {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		if o.keys == nil {
			o.keys = map[string][]string{}
		}
		o.keys[bucket] = ks
	}
	lo, _ := slices.BinarySearch(ks, string(prefix))
	hi := lo + sort.Search(len(ks)-lo, func(i int) bool { return !strings.HasPrefix(ks[lo+i], string(prefix)) })
	return ks[lo:hi:hi]
}

func (o *overlay) put(bucket string, key, val []byte) error {
	v := bytes.Clone(val)
	if v == nil {
		v = []byte{}
	}
	o.set(bucket, key, &v)
	return nil
}

func (o *overlay) del(bucket string, key []byte) error {
	o.set(bucket, key, nil)
	return nil
}

// scan merges the base's keys with the overlay's, in key order; an
// overlay value replaces the base's, a deletion hides it.
func (o *overlay) scan(bucket string, prefix []byte, fn func(k, v []byte) error) error {
	mine := o.mine(bucket, prefix)
	next := 0
	emit := func(k string) error {
		if v := o.w[bucket][k]; v != nil {
			return fn([]byte(k), *v)
		}
		return nil
	}
	err := o.base.scan(bucket, prefix, func(k, v []byte) error {
		for next < len(mine) && mine[next] < string(k) {
			if err := emit(mine[next]); err != nil {
				return err
			}
			next++
		}
		if next < len(mine) && mine[next] == string(k) {
			next++
			return emit(string(k))
		}
		return fn(k, v)
	})
	if err != nil {
		return err
	}
	for ; next < len(mine); next++ {
		if err := emit(mine[next]); err != nil {
			return err
		}
	}
	return nil
}

// walk merges the base's keys with the overlay's as scan does, from key
// from onwards (back: before it, in reverse order).
func (o *overlay) walk(bucket string, prefix, from []byte, back bool, fn func(k, v []byte) (bool, error)) error {
	mine := o.mine(bucket, prefix)
	f, _ := slices.BinarySearch(mine, string(from))
	before := func(a, b string) bool { return a < b } // a comes before b in the walk
	if back {
		mine = slices.Clone(mine[:f])
		slices.Reverse(mine)
		before = func(a, b string) bool { return a > b }
	} else {
		mine = mine[f:]
	}
	next, stop := 0, false
	emit := func(k string) error {
		if v := o.w[bucket][k]; v != nil {
			more, err := fn([]byte(k), *v)
			stop = !more
			return err
		}
		return nil
	}
	err := o.base.walk(bucket, prefix, from, back, func(k, v []byte) (bool, error) {
		for next < len(mine) && before(mine[next], string(k)) {
			if err := emit(mine[next]); err != nil || stop {
				return false, err
			}
			next++
		}
		if next < len(mine) && mine[next] == string(k) {
			next++
			err := emit(string(k))
			return !stop, err
		}
		more, err := fn(k, v)
		stop = !more
		return more, err
	})
	if err != nil || stop {
		return err
	}
	for ; next < len(mine); next++ {
		if err := emit(mine[next]); err != nil || stop {
			return err
		}
	}
	return nil
}

// flush writes the overlay's writes to t, bucket by bucket in key order:
// a commit of many keys inserts them in order (bbolt inserts into a
// node's sorted array: keys in random order move half of it each).
func (o *overlay) flush(t tx) error {
	names := make([]string, 0, len(o.w))
	for b := range o.w {
		names = append(names, b)
	}
	slices.Sort(names)
	for _, b := range names {
		keys := make([]string, 0, len(o.w[b]))
		for k := range o.w[b] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			var err error
			if v := o.w[b][k]; v == nil {
				err = t.del(b, []byte(k))
			} else {
				err = t.put(b, []byte(k), *v)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}
