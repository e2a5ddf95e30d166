package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// A Key is where the prior counts: the tensor's dtype (the caller's
// number), its shape class (ShapeClass) and the parent node of the
// candidates counted (0: the root).
type Key struct {
	DType  uint8
	Class  uint8
	Parent Choice
}

// ShapeClass puts a tensor of the given shape in one of 16 classes: its
// rank (1, 2, 3 or more: 0..3; a scalar counts as rank 1) times its size
// (fewer than 2^12, 2^16, 2^20 values, or more: 0..3).
func ShapeClass(shape []int64) uint8 {
	rank := min(max(len(shape), 1), 4) - 1
	n := int64(1)
	for _, d := range shape {
		n *= max(d, 1)
		if n > 1<<40 {
			n = 1 << 40
		}
	}
	size := 0
	for _, lim := range []int64{1 << 12, 1 << 16, 1 << 20} {
		if n >= lim {
			size++
		}
	}
	return uint8(rank*4 + size)
}

// A Prior counts each candidate's wins, by Key (the caller may weight a
// win, AddN: the codec counts 1 plus the per mille it saved): learned from
// a sample of tensors (a setup's build) and kept in the setup, it orders
// the search's expansions on other models. The zero Prior (and a nil one)
// counts nothing: the search then expands in list order. Entries are kept
// sorted, so a Prior's encoding is canonical.
type Prior struct {
	entries []entry
}

type entry struct {
	key    Key
	choice Choice
	count  uint32
}

func (e entry) cmp(k Key, c Choice) int {
	switch {
	case e.key.DType != k.DType:
		return int(e.key.DType) - int(k.DType)
	case e.key.Class != k.Class:
		return int(e.key.Class) - int(k.Class)
	case e.key.Parent != k.Parent:
		return int(e.key.Parent) - int(k.Parent)
	}
	return int(e.choice) - int(c)
}

func (p *Prior) find(k Key, c Choice) (int, bool) {
	return slices.BinarySearchFunc(p.entries, entry{key: k, choice: c}, func(e, t entry) int { return e.cmp(t.key, t.choice) })
}

// Count is how often choice c won under key k.
func (p *Prior) Count(k Key, c Choice) uint32 {
	if p == nil {
		return 0
	}
	if i, ok := p.find(k, c); ok {
		return p.entries[i].count
	}
	return 0
}

// Add counts one win of choice c under key k.
func (p *Prior) Add(k Key, c Choice) { p.AddN(k, c, 1) }

// AddN counts n for choice c under key k (a win weighted by what it
// saved); counts stop at 2^24.
func (p *Prior) AddN(k Key, c Choice, n uint32) {
	if n == 0 {
		return
	}
	i, ok := p.find(k, c)
	if ok {
		p.entries[i].count = min(p.entries[i].count+min(n, maxCount), maxCount)
		return
	}
	p.entries = slices.Insert(p.entries, i, entry{k, c, min(n, maxCount)})
}

// AddPath counts the winner of one search and the chain of its parents:
// each node under its own parent's key (the path from the root to best in
// the candidates' tree).
func (p *Prior) AddPath(k Key, cands []Candidate, best Choice) { p.AddPathN(k, cands, best, 1) }

// AddPathN is AddPath counting n for each node of the path.
func (p *Prior) AddPathN(k Key, cands []Candidate, best Choice, n uint32) {
	for depth := 0; best != 0 && depth < len(cands); depth++ {
		parent := Choice(0)
		for _, c := range cands {
			if c.Choice == best {
				parent = c.Parent
				break
			}
		}
		k.Parent = parent
		p.AddN(k, best, n)
		best = parent
	}
}

// Len is the number of counts kept.
func (p *Prior) Len() int {
	if p == nil {
		return 0
	}
	return len(p.entries)
}

// Total is the sum of the counts under keys with no parent (the number
// of searches learned from, where each counted 1).
func (p *Prior) Total() int {
	if p == nil {
		return 0
	}
	t := 0
	for _, e := range p.entries {
		if e.key.Parent == 0 {
			t += int(e.count)
		}
	}
	return t
}

// Each calls f with every count, in the canonical order.
func (p *Prior) Each(f func(k Key, c Choice, count uint32)) {
	if p == nil {
		return
	}
	for _, e := range p.entries {
		f(e.key, e.choice, e.count)
	}
}

// Limits of an encoded prior: a count at most maxCount, at most
// MaxEntries entries.
const (
	maxCount   = 1 << 24
	MaxEntries = 1 << 14
)

// ErrPrior is returned for an encoded prior that does not parse.
var ErrPrior = errors.New("search: bad prior")

// AppendBinary appends the prior's encoding: a uvarint count of entries,
// then per entry dtype, class (one byte each), parent, choice and count
// (uvarints), in the canonical (sorted, each key-choice once) order.
func (p *Prior) AppendBinary(b []byte) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(p.Len()))
	p.Each(func(k Key, c Choice, n uint32) {
		b = append(b, k.DType, k.Class)
		b = binary.AppendUvarint(b, uint64(k.Parent))
		b = binary.AppendUvarint(b, uint64(c))
		b = binary.AppendUvarint(b, uint64(n))
	})
	return b, nil
}

// Parse reads an encoded prior from the start of b and returns it and the
// bytes read. Entries out of order or repeated, zero choices or counts,
// and values past the limits are errors.
func Parse(b []byte) (*Prior, int, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrPrior, fmt.Sprintf(format, args...))
	}
	pos := 0
	uv := func(what string, most uint64) (uint64, error) {
		v, n := binary.Uvarint(b[pos:])
		if n <= 0 {
			return 0, bad("%s: truncated", what)
		}
		if n != len(binary.AppendUvarint(nil, v)) {
			return 0, bad("%s: not the shortest encoding", what)
		}
		if v > most {
			return 0, bad("%s %d above %d", what, v, most)
		}
		pos += n
		return v, nil
	}
	n, err := uv("entry count", MaxEntries)
	if err != nil {
		return nil, 0, err
	}
	if n > uint64(len(b)) {
		return nil, 0, bad("%d entries in %d bytes", n, len(b))
	}
	p := &Prior{entries: make([]entry, 0, n)}
	for i := uint64(0); i < n; i++ {
		if len(b)-pos < 2 {
			return nil, 0, bad("entry %d: truncated", i)
		}
		e := entry{key: Key{DType: b[pos], Class: b[pos+1]}}
		pos += 2
		par, err := uv("parent", 0xffff)
		if err != nil {
			return nil, 0, err
		}
		c, err := uv("choice", 0xffff)
		if err != nil {
			return nil, 0, err
		}
		cnt, err := uv("count", maxCount)
		if err != nil {
			return nil, 0, err
		}
		if c == 0 || cnt == 0 {
			return nil, 0, bad("entry %d: zero choice or count", i)
		}
		e.key.Parent, e.choice, e.count = Choice(par), Choice(c), uint32(cnt)
		if k := len(p.entries); k > 0 && p.entries[k-1].cmp(e.key, e.choice) >= 0 {
			return nil, 0, bad("entry %d out of order", i)
		}
		p.entries = append(p.entries, e)
	}
	return p, pos, nil
}
