package serve

import (
	"strconv"
	"strings"
)

// byteRange is the outcome of parseRange.
type byteRange struct {
	start, length int64
	ok            bool // a single satisfiable range: answer 206
	unsat         bool // no satisfiable range: answer 416
}

// parseRange reads a Range header for a representation of size bytes.
// It takes one range of the "bytes" unit ("a-b", "a-", "-n"); a header it
// cannot read, of another unit, or holding several ranges is ignored (the
// whole representation is sent, as RFC 9110 allows), so neither ok nor
// unsat is set.
func parseRange(h string, size int64) byteRange {
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok {
		return byteRange{}
	}
	spec = strings.Trim(spec, " \t")
	if spec == "" || strings.Contains(spec, ",") {
		return byteRange{}
	}
	first, last, ok := strings.Cut(spec, "-")
	if !ok {
		return byteRange{}
	}
	first, last = strings.Trim(first, " \t"), strings.Trim(last, " \t")
	if first == "" {
		// suffix: the last n bytes
		n, big, ok := digits(last)
		if !ok {
			return byteRange{}
		}
		if n == 0 && !big || size == 0 {
			return byteRange{unsat: true}
		}
		if big || n > size {
			n = size
		}
		return byteRange{start: size - n, length: n, ok: true}
	}
	a, abig, ok := digits(first)
	if !ok {
		return byteRange{}
	}
	if last == "" {
		if abig || a >= size {
			return byteRange{unsat: true}
		}
		return byteRange{start: a, length: size - a, ok: true}
	}
	b, bbig, ok := digits(last)
	if !ok || abig && !bbig || !abig && !bbig && b < a {
		return byteRange{} // last before first: invalid, ignored
	}
	if abig || a >= size {
		return byteRange{unsat: true}
	}
	if bbig || b >= size {
		b = size - 1
	}
	return byteRange{start: a, length: b - a + 1, ok: true}
}

// digits parses a non-empty run of ASCII digits; big says it overflows
// int64 (it is then larger than any size).
func digits(s string) (n int64, big, ok bool) {
	if s == "" {
		return 0, false, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, true, true
	}
	return n, false, true
}

// etagList reports whether a comma-separated list of entity tags
// (If-Match, If-None-Match) names etag ("*" names any); weak allows W/
// tags to match (the weak comparison of If-None-Match).
func etagList(list, etag string, weak bool) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.Trim(t, " \t")
		if t == "*" {
			return true
		}
		if strings.HasPrefix(t, "W/") {
			if !weak {
				continue
			}
			t = t[2:]
		}
		if t == etag {
			return true
		}
	}
	return false
}
