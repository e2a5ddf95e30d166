package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
)

// The index of an s3:// store v2 (s3kv.go) is a root object and shard
// objects. A shard holds the entries of one bucket in one key range:
//
//	"nzip-store-shard-1\n"
//	uvarint bucket name length, bucket name
//	uvarint generation of the root that first named it
//	uvarint entries, then per entry in key order:
//	  uvarint key length, key, uvarint value length, value
//
// and is named by the SHA-256 of its bytes (prefix/shards/<hex>), so it
// is immutable and a damaged one is told by its name; the generation
// makes every commit's shards new objects, so that a shard deleted as
// retired is never one a later root names again. The root (at
// prefix/index, where the single-object index of s3index.go lived) lists
// them:
//
//	"nzip-store-root-1\n"
//	uvarint generation (one more per commit)
//	per bucket of buckets, in that order:
//	  uvarint shards, then per shard in key order:
//	    uvarint low key length, low key (the first shard's is empty),
//	    SHA-256 of the shard (32 bytes), uvarint size, uvarint entries
//	CRC-32C of everything before it (4 bytes, little-endian)
//
// Shard i of a bucket holds the keys in [low i, low i+1). A commit that
// takes shards out of the root lists them, once its root has landed, in
// prefix/retired/<Unix seconds, 12 digits>-<generation, 16 hex digits>:
//
//	"nzip-store-retired-1\n"
//	uvarint shards, then their SHA-256s (32 bytes each)
//	CRC-32C of everything before it (4 bytes, little-endian)
//
// Lengths are checked against the bytes that remain, so a damaged root or shard is
// ErrIndexDamaged, never a large allocation; the same root or entries
// encode to the same bytes.

const (
	s3RootMagic    = "nzip-store-root-1\n"
	s3ShardMagic   = "nzip-store-shard-1\n"
	s3RetiredMagic = "nzip-store-retired-1\n"
)

// s3ShardRef is a shard as the root lists it.
type s3ShardRef struct {
	low     string
	id      Hash // SHA-256 of the shard object
	size    int64
	entries int64
}

// s3Root is the decoded root object.
type s3Root struct {
	gen    uint64
	shards [][]s3ShardRef // per bucket of buckets
}

func newS3Root() *s3Root {
	return &s3Root{shards: make([][]s3ShardRef, len(buckets))}
}

func encodeRoot(r *s3Root) []byte {
	out := []byte(s3RootMagic)
	out = binary.AppendUvarint(out, r.gen)
	for bi := range buckets {
		out = binary.AppendUvarint(out, uint64(len(r.shards[bi])))
		for _, s := range r.shards[bi] {
			out = binary.AppendUvarint(out, uint64(len(s.low)))
			out = append(out, s.low...)
			out = append(out, s.id[:]...)
			out = binary.AppendUvarint(out, uint64(s.size))
			out = binary.AppendUvarint(out, uint64(s.entries))
		}
	}
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// isRoot tells a v2 root from the single-object index by its magic.
func isRoot(raw []byte) bool { return bytes.HasPrefix(raw, []byte(s3RootMagic)) }

// decodeRoot parses a root object: every shard list in key order with
// an empty first low key, sizes within maxIndexBytes, the CRC matching.
func decodeRoot(raw []byte) (*s3Root, error) {
	if !isRoot(raw) {
		return nil, fmt.Errorf("%w: not a store root", ErrIndexDamaged)
	}
	if len(raw) < len(s3RootMagic)+4 || crc32.Checksum(raw[:len(raw)-4], castagnoli) != binary.LittleEndian.Uint32(raw[len(raw)-4:]) {
		return nil, fmt.Errorf("%w: root: CRC mismatch", ErrIndexDamaged)
	}
	p := raw[len(s3RootMagic) : len(raw)-4]
	num := func(what string, max uint64) (uint64, error) {
		n, k := uvarint(p)
		if k <= 0 || n > max {
			return 0, fmt.Errorf("%w: root: %s: bad number", ErrIndexDamaged, what)
		}
		p = p[k:]
		return n, nil
	}
	hash := func(what string) (Hash, error) {
		var h Hash
		if len(p) < len(h) {
			return h, fmt.Errorf("%w: root: %s: truncated", ErrIndexDamaged, what)
		}
		copy(h[:], p)
		p = p[len(h):]
		return h, nil
	}
	r := newS3Root()
	var err error
	if r.gen, err = num("generation", 1<<62); err != nil {
		return nil, err
	}
	for bi, name := range buckets {
		// a shard takes at least 35 bytes (empty key, hash, size, entries)
		n, err := num("bucket "+name+" shards", uint64(len(p))/35)
		if err != nil {
			return nil, err
		}
		r.shards[bi] = make([]s3ShardRef, n)
		for i := range r.shards[bi] {
			s := &r.shards[bi][i]
			kl, err := num("bucket "+name+" low key", uint64(len(p)))
			if err != nil {
				return nil, err
			}
			s.low, p = string(p[:kl]), p[kl:]
			if (i == 0) != (s.low == "") || i > 0 && s.low <= r.shards[bi][i-1].low {
				return nil, fmt.Errorf("%w: root: bucket %s: shard %d: low keys out of order", ErrIndexDamaged, name, i)
			}
			if s.id, err = hash("bucket " + name + " shard"); err != nil {
				return nil, err
			}
			size, err := num("bucket "+name+" shard size", maxIndexBytes)
			if err != nil {
				return nil, err
			}
			entries, err := num("bucket "+name+" shard entries", size/2)
			if err != nil {
				return nil, err
			}
			s.size, s.entries = int64(size), int64(entries)
		}
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: root: %d bytes after the last bucket", ErrIndexDamaged, len(p))
	}
	return r, nil
}

// s3Shard is a decoded shard: its keys in order and their values.
type s3Shard struct {
	keys []string
	vals [][]byte
}

// find is the index of the first key ≥ k.
func (s *s3Shard) find(k string) int {
	i, _ := slices.BinarySearch(s.keys, k)
	return i
}

// entrySize is the bytes an entry takes in a shard.
func entrySize(k string, v []byte) int {
	return uvarintLen(uint64(len(k))) + len(k) + uvarintLen(uint64(len(v))) + len(v)
}

func uvarintLen(n uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], n)
}

func encodeShard(bucket string, gen uint64, keys []string, vals [][]byte) []byte {
	n := len(s3ShardMagic) + uvarintLen(uint64(len(bucket))) + len(bucket) + uvarintLen(gen) + uvarintLen(uint64(len(keys)))
	for i, k := range keys {
		n += entrySize(k, vals[i])
	}
	out := make([]byte, 0, n)
	out = append(out, s3ShardMagic...)
	out = binary.AppendUvarint(out, uint64(len(bucket)))
	out = append(out, bucket...)
	out = binary.AppendUvarint(out, gen)
	out = binary.AppendUvarint(out, uint64(len(keys)))
	for i, k := range keys {
		out = binary.AppendUvarint(out, uint64(len(k)))
		out = append(out, k...)
		out = binary.AppendUvarint(out, uint64(len(vals[i])))
		out = append(out, vals[i]...)
	}
	return out
}

// decodeShard parses a shard object: its bucket name, keys strictly
// increasing, nothing after the last entry. The values alias raw.
func decodeShard(raw []byte) (bucket string, gen uint64, s *s3Shard, err error) {
	if !bytes.HasPrefix(raw, []byte(s3ShardMagic)) {
		return "", 0, nil, fmt.Errorf("%w: not an index shard", ErrIndexDamaged)
	}
	p := raw[len(s3ShardMagic):]
	next := func(what string) ([]byte, error) {
		n, k := uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return nil, fmt.Errorf("%w: shard: %s: bad length", ErrIndexDamaged, what)
		}
		v := p[k : k+int(n)]
		p = p[k+int(n):]
		return v, nil
	}
	b, err := next("bucket name")
	if err != nil {
		return "", 0, nil, err
	}
	gen, k := uvarint(p)
	if k <= 0 {
		return "", 0, nil, fmt.Errorf("%w: shard: bad generation", ErrIndexDamaged)
	}
	p = p[k:]
	n, k := uvarint(p)
	if k <= 0 || n > uint64(len(p)-k)/2 { // an entry takes at least two bytes
		return "", 0, nil, fmt.Errorf("%w: shard: bad entry count", ErrIndexDamaged)
	}
	p = p[k:]
	s = &s3Shard{keys: make([]string, n), vals: make([][]byte, n)}
	for i := range s.keys {
		key, err := next("key")
		if err != nil {
			return "", 0, nil, err
		}
		if s.vals[i], err = next("value"); err != nil {
			return "", 0, nil, err
		}
		s.keys[i] = string(key)
		if i > 0 && s.keys[i] <= s.keys[i-1] {
			return "", 0, nil, fmt.Errorf("%w: shard: keys out of order", ErrIndexDamaged)
		}
	}
	if len(p) != 0 {
		return "", 0, nil, fmt.Errorf("%w: shard: %d bytes after the last entry", ErrIndexDamaged, len(p))
	}
	return string(b), gen, s, nil
}

// shardID is a shard object's name: the SHA-256 of its bytes.
func shardID(raw []byte) Hash { return Hash(sha256.Sum256(raw)) }

func encodeRetired(ids []Hash) []byte {
	out := []byte(s3RetiredMagic)
	out = binary.AppendUvarint(out, uint64(len(ids)))
	for _, id := range ids {
		out = append(out, id[:]...)
	}
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
}

func decodeRetired(raw []byte) ([]Hash, error) {
	if !bytes.HasPrefix(raw, []byte(s3RetiredMagic)) || len(raw) < len(s3RetiredMagic)+4 ||
		crc32.Checksum(raw[:len(raw)-4], castagnoli) != binary.LittleEndian.Uint32(raw[len(raw)-4:]) {
		return nil, fmt.Errorf("%w: not a list of retired shards", ErrIndexDamaged)
	}
	p := raw[len(s3RetiredMagic) : len(raw)-4]
	n, k := uvarint(p)
	if k <= 0 || n*32 != uint64(len(p)-k) || n > uint64(len(p)) {
		return nil, fmt.Errorf("%w: retired shards: bad count", ErrIndexDamaged)
	}
	p = p[k:]
	ids := make([]Hash, n)
	for i := range ids {
		copy(ids[i][:], p[32*i:])
	}
	return ids, nil
}
