package trajectory

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"neuralzip/codec"
	"runtime"
	"testing"
)

// A file of nothing but fake trailers, each pointing at an index that
// spans everything before it with a wrong checksum: checking them all
// would read and checksum a quadratic number of bytes. Open gives up once
// the indexes it checked total twice the file.
func TestOpenFakeTrailers(t *testing.T) {
	const size = 256 << 10
	b := make([]byte, size)
	copy(b, Magic[:])
	binary.LittleEndian.PutUint16(b[8:], Version)
	for end := headerLen + trailerLen; end <= size; end += trailerLen {
		tr := b[end-trailerLen : end]
		binary.LittleEndian.PutUint64(tr[0:], headerLen)
		binary.LittleEndian.PutUint64(tr[8:], uint64(end-trailerLen-headerLen))
		binary.LittleEndian.PutUint32(tr[16:], 0xdeadbeef)
		copy(tr[24:], TrailerMagic[:])
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, err := Open(bytes.NewReader(b), size)
	runtime.ReadMemStats(&m1)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("want ErrCorrupt, got %v", err)
	}
	if n, limit := m1.TotalAlloc-m0.TotalAlloc, uint64(64*size+4<<20); n > limit {
		t.Fatalf("a %d-byte file allocated %d bytes (limit %d)", size, n, limit)
	}
}

// Frames may refer to any earlier frame (the writer only ever uses the
// previous frame or the keyframe): Walk keeps each decoded frame exactly
// until its last use. Here M keyframes are followed by M frames that each
// refer back to one of the first M/2 of them (each twice).
func TestWalkFarReferences(t *testing.T) {
	const M = 40
	data := func(i int) []byte { return []byte(fmt.Sprintf("checkpoint %03d", i)) }
	in := func(b []byte) codec.Input { return codec.Input{Name: "x", R: bytes.NewReader(b), Size: int64(len(b))} }
	buf := header()
	var x Index
	x.K, x.Mode = 1<<20, RefKeyframe
	for i := range 2 * M {
		opt := codec.Options{Threads: 1}
		ref := -1
		if i >= M {
			ref = (i - M) / 2 // each of the first M/2 keyframes, twice
			r, err := codec.NewReference([]codec.Input{in(data(ref))})
			if err != nil {
				t.Fatal(err)
			}
			opt.Ref = r
		}
		var a bytes.Buffer
		if _, err := codec.Encode(&a, []codec.Input{in(data(i))}, opt); err != nil {
			t.Fatal(err)
		}
		x.Frames = append(x.Frames, Frame{Name: fmt.Sprint(i), Size: int64(len(data(i))), SHA256: sha256.Sum256(data(i)), Offset: int64(len(buf)), Length: int64(a.Len()), Ref: ref})
		buf = append(buf, a.Bytes()...)
	}
	buf = appendTrailer(buf, x.Marshal(), int64(len(buf)), len(x.Frames))
	ar, err := Open(bytes.NewReader(buf), int64(len(buf)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = ar.Walk(codec.Options{Threads: 1}, func(d *Decoded) error {
		if !bytes.Equal(d.Data, data(n)) {
			t.Fatalf("frame %d: %q", n, d.Data)
		}
		n++
		return nil
	})
	if err != nil || n != 2*M {
		t.Fatalf("walked %d frames: %v", n, err)
	}
}
