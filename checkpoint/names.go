package checkpoint

import "strconv"

// Names that a loader builds (a path of graph and node names, a "#2"
// suffix, a name repeated for every file a weight spans) or reads more than
// once (strings that many tables point to) are not paid for by the bytes of
// the file, so a small file could make a loader build gigabytes of names by
// repeating one long name. Such loaders charge the bytes of every name they
// build against a nameBudget proportional to the size of the file: beyond it
// they return an ErrTooLarge FormatError.
//
// The real models in shared/models, assets/models and checkpoint/testdata
// need at most 0.12 bytes of names per byte of the file read (handtrack.json,
// a TF.js model.json), and all of them less than 80 KB in all; the budget is
// nameBudgetPerByte bytes per byte plus nameBudgetBase.
const (
	nameBudgetPerByte = 8
	nameBudgetBase    = 1 << 20
)

// A nameBudget counts the bytes of names a loader may still build.
type nameBudget struct {
	left, limit int64
}

// newNameBudget returns the budget for a file (a header, a model.json) of
// size bytes.
func newNameBudget(size int64) nameBudget {
	lim := int64(maxInt64)
	if size >= 0 && size < (maxInt64-nameBudgetBase)/nameBudgetPerByte {
		lim = nameBudgetPerByte*size + nameBudgetBase
	}
	return nameBudget{left: lim, limit: lim}
}

// take charges n bytes and reports whether the budget still held them.
func (b *nameBudget) take(n int) bool {
	if int64(n) > b.left {
		b.left = 0
		return false
	}
	b.left -= int64(n)
	return true
}

// err returns the error for a spent budget, found at off of a file of the
// given format.
func (b *nameBudget) err(format string, off int64) error {
	return formatErr(format, off, ErrTooLarge, "names exceed %d bytes in all (%d bytes per byte of the file + %d)", b.limit, nameBudgetPerByte, nameBudgetBase)
}

// dedupName returns name, or when it is taken name#2, name#3, ..., and
// marks the result as taken. used maps each taken name to the next suffix
// to try for it. Every suffixed name it builds is charged to b; ok is false
// when b is spent.
func dedupName(used map[string]int, name string, b *nameBudget) (_ string, ok bool) {
	i, dup := used[name]
	if !dup {
		used[name] = 2
		return name, true
	}
	for {
		suffix := "#" + strconv.Itoa(i)
		if !b.take(len(name) + len(suffix)) {
			return "", false
		}
		u := name + suffix
		i++
		if _, dup := used[u]; !dup {
			used[name] = i
			used[u] = 2
			return u, true
		}
	}
}
