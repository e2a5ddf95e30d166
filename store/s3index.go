package store

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// The index of an s3:// store as one object, as stores kept it before the
// root and shards (s3shard.go): read by stores written so, until their
// first update replaces it with a root (s3kv.go).
//
//	"nzip-store-index-2\n"
//	per bucket of buckets, in that order:
//	  uvarint entries, then per entry in key order:
//	    uvarint key length, key, uvarint value length, value
//
// Lengths are checked against the bytes that remain, so a damaged index
// is an error, never a large allocation; the same buckets encode to the
// same bytes.

const s3IndexMagic = "nzip-store-index-2\n"

// maxIndexBytes bounds the index object read (1 GiB).
const maxIndexBytes = 1 << 30

func encodeIndex(b map[string]map[string][]byte) []byte {
	out := []byte(s3IndexMagic)
	for _, name := range buckets {
		bk := b[name]
		keys := make([]string, 0, len(bk))
		for k := range bk {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out = binary.AppendUvarint(out, uint64(len(keys)))
		for _, k := range keys {
			out = binary.AppendUvarint(out, uint64(len(k)))
			out = append(out, k...)
			out = binary.AppendUvarint(out, uint64(len(bk[k])))
			out = append(out, bk[k]...)
		}
	}
	return out
}

func decodeIndex(raw []byte) (map[string]map[string][]byte, error) {
	if len(raw) < len(s3IndexMagic) || string(raw[:len(s3IndexMagic)]) != s3IndexMagic {
		return nil, fmt.Errorf("%w: not a store index", ErrIndexDamaged)
	}
	p := raw[len(s3IndexMagic):]
	next := func(what string) ([]byte, error) {
		n, k := uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return nil, fmt.Errorf("%w: %s: bad length", ErrIndexDamaged, what)
		}
		v := p[k : k+int(n)]
		p = p[k+int(n):]
		return v, nil
	}
	b := make(map[string]map[string][]byte, len(buckets))
	for _, name := range buckets {
		n, k := uvarint(p)
		if k <= 0 || n > uint64(len(p)-k)/2 { // an entry takes at least two bytes
			return nil, fmt.Errorf("%w: bucket %s: bad entry count", ErrIndexDamaged, name)
		}
		p = p[k:]
		bk := make(map[string][]byte, n)
		prev := ""
		for i := uint64(0); i < n; i++ {
			key, err := next("bucket " + name + " key")
			if err != nil {
				return nil, err
			}
			val, err := next("bucket " + name + " value")
			if err != nil {
				return nil, err
			}
			if i > 0 && string(key) <= prev {
				return nil, fmt.Errorf("%w: bucket %s: keys out of order", ErrIndexDamaged, name)
			}
			prev = string(key)
			bk[prev] = val
		}
		b[name] = bk
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last bucket", ErrIndexDamaged, len(p))
	}
	return b, nil
}

// uvarint is binary.Uvarint accepting only the shortest encoding, the one
// encodeIndex writes (so that one index has one encoding); k ≤ 0 otherwise.
func uvarint(p []byte) (n uint64, k int) {
	n, k = binary.Uvarint(p)
	if k > 1 && p[k-1] == 0 {
		return 0, 0 // a last byte of 0 adds nothing: not the shortest
	}
	return n, k
}
