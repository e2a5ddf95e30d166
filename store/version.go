package store

import (
	"crypto/sha256"
	"fmt"
	"hash"

	"neuralzip/codec"
)

// Store formats. The format decides how units and chunk files are
// addressed and how casts are found; the records (record.go) are the same
// in both.
//
//   - Version 1 (stores made before the marker): units and chunk files
//     are addressed by SHA-256; every stored F32 unit indexes the SHA-256
//     of its BF16 and F16 casts (cast hints, bucket casts).
//   - Version 2 (what Init makes): units and chunk files are addressed by
//     BLAKE3 (codec.SumBLAKE3, the codec's tree hash); no cast hints: a
//     cast is found from the fingerprints (an F32 unit's sampled values
//     cast to BF16/F16 equal the 16-bit unit's) and confirmed on the
//     bytes (cast.go: castOfFP, castsTo). Files keep their SHA-256 in the
//     manifest in both.
//
// The version is the value of key formatKey in the fingerprint bucket
// (a short key no fingerprint or index entry can have; builds before the
// marker skip it), written by Init; a store without it is version 1.
const (
	Version1 = 1
	Version2 = 2
	// latestVersion is what Init makes.
	latestVersion = Version2
)

// formatKey holds the store's format version (bFP: fingerprint keys are
// a dtype name, 0, numel and a hash; the LSH's start with 0).
var formatKey = []byte("\xffformat")

// formatRec is the record of the format version: recVersion · u8
// version · CRC-32C.
func formatRec(v int) []byte { return seal([]byte{recVersion, byte(v)}) }

// parseFormat reads the format record (nil: version 1).
func parseFormat(b []byte) (int, error) {
	if b == nil {
		return Version1, nil
	}
	f, err := open(b)
	if err != nil {
		return 0, err
	}
	d := dec{b: f}
	v := int(d.u8())
	if err := d.end(); err != nil {
		return 0, err
	}
	if v != Version1 && v != Version2 {
		return 0, fmt.Errorf("%w (format version %d: made by a newer build?)", errRecord, v)
	}
	return v, nil
}

// formatOf is the format version of index t.
func formatOf(t tx) (int, error) {
	v, err := parseFormat(t.get(bFP, formatKey))
	if err != nil {
		return 0, fmt.Errorf("%w: format record: %v", ErrIndexDamaged, err)
	}
	return v, nil
}

// isV2 reports whether index t is of a version 2 store (a damaged format
// record reads as version 1 here; Open refuses it).
func isV2(t tx) bool {
	v, _ := formatOf(t)
	return v == Version2
}

// setFormat writes the format version of a new store.
func setFormat(v int) func(t tx) error {
	return func(t tx) error { return t.put(bFP, formatKey, formatRec(v)) }
}

// sumOf is the address function of format version v.
func sumOf(v int) func([]byte) Hash {
	if v == Version2 {
		return blake3Sum
	}
	return sha256Sum
}

func sha256Sum(b []byte) Hash { return Hash(sha256.Sum256(b)) }

// partsSum is the address function of format version v on the
// concatenation of parts (chunk files written from their payloads).
func partsSum(v int) func(parts ...[]byte) Hash {
	if v == Version2 {
		return func(parts ...[]byte) Hash { return Hash(codec.SumBLAKE3(parts...)) }
	}
	return func(parts ...[]byte) Hash {
		h := sha256.New()
		for _, p := range parts {
			h.Write(p)
		}
		return Hash(h.Sum(nil))
	}
}

// partsHash is partsSum written part by part.
func partsHash(v int) hash.Hash {
	if v == Version2 {
		return codec.NewBLAKE3()
	}
	return sha256.New()
}

// Version is the store's format version (Version1 or Version2).
func (s *Store) Version() int { return s.ver }

// Sum is the address of bytes b in this store: the BLAKE3 of b in a
// version 2 store, its SHA-256 in a version 1 store.
func (s *Store) Sum(b []byte) Hash { return s.sum(b) }

// readFormat sets the store's format version and address function from
// its index.
func (s *Store) readFormat() error {
	err := s.kv.view(func(t tx) error {
		// with the fingerprints' index's mark, which an open to write reads next
		prefetch(t, bucketKey{bFP, formatKey}, bucketKey{bFP, maxDecodeKey}, bucketKey{bFP, lshMeta})
		v, err := formatOf(t)
		if err != nil {
			return err
		}
		s.ver = v
		s.maxDecode, err = maxDecodeOf(t)
		return err
	})
	if err != nil {
		return err
	}
	s.sum = sumOf(s.ver)
	s.bl.setFormat(s.ver)
	return nil
}
