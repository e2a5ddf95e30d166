package trajectory

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"neuralzip/codec"
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

// Opening a small damaged file allocates in proportion to it: the
// backward search for a trailer read through a 1 MiB window whatever the
// file's size (each of FuzzOpen's inputs paid for it).
func TestOpenSmallDamagedAllocates(t *testing.T) {
	good := pack(t, synthSteps(2), 2, RefPrevious, 1).b
	for _, b := range [][]byte{append(append([]byte(nil), Magic[:]...), 1, 0, 0, 0, 0, 0, 0, 0, 'x'), good[:len(good)-1]} {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		_, _ = Open(bytes.NewReader(b), int64(len(b)))
		runtime.ReadMemStats(&m1)
		if n, limit := m1.TotalAlloc-m0.TotalAlloc, uint64(4*len(b)+64<<10); n > limit {
			t.Fatalf("a %d-byte file allocated %d bytes (limit %d)", len(b), n, limit)
		}
	}
}

// A frame is coded against the frame before it or the last keyframe, and
// no chain is longer than K (what every writer makes): ParseIndex refuses
// other references (a walk would have to keep any number of decoded
// frames for them) and longer chains (a stream would decode through any
// number of frames at once).
func TestIndexReferenceRules(t *testing.T) {
	frames := func(refs ...int) []Frame {
		var fs []Frame
		for i, r := range refs {
			fs = append(fs, Frame{Name: fmt.Sprint(i), Files: []FrameFile{{Name: "x", Size: 1}}, Offset: int64(headerLen + i), Length: 1, Ref: r})
		}
		return fs
	}
	for _, c := range []struct {
		k    int
		mode RefMode
		refs []int
		bad  string
	}{
		{3, RefPrevious, []int{-1, 0, 1, -1, 3, 4}, ""},
		{3, RefKeyframe, []int{-1, 0, 0, -1, 3, 3}, ""},
		{3, RefPrevious, []int{-1, 0, 0, 2, -1, 4}, ""}, // both kinds in one archive
		{1, RefPrevious, []int{-1, -1, -1}, ""},
		{3, RefPrevious, []int{-1, 0, 1, 2}, "decodes through 4 frames, more than the keyframe interval 3"},
		{1, RefKeyframe, []int{-1, 0}, "decodes through 2 frames"},
		{9, RefKeyframe, []int{-1, 0, -1, 0}, "coded against frame 0, neither the frame before it nor the last keyframe (2)"},
		{9, RefPrevious, []int{-1, 0, 1, 2, 1}, "coded against frame 1"},
	} {
		x := Index{Version: Version, K: c.k, Mode: c.mode, Frames: frames(c.refs...)}
		_, err := ParseIndex(x.Marshal(), 1<<20, Version)
		if c.bad == "" && err != nil || c.bad != "" && (!errors.Is(err, ErrCorrupt) || !strings.Contains(fmt.Sprint(err), c.bad)) {
			t.Errorf("K %d, refs %v: %v; want %q", c.k, c.refs, err, c.bad)
		}
	}
}

// TestDeepChain: a small archive whose last step decodes through
// thousands of frames (K as large) is extracted without holding blocks of
// every level at once (read whole: a few steps of 64 bytes), and verified.
func TestDeepChain(t *testing.T) {
	const n = 3000
	data := bytes.Repeat([]byte("checkpoint bytes"), 4)
	in := codec.Input{Name: "x", R: bytes.NewReader(data), Size: int64(len(data))}
	ref, err := codec.NewReference([]codec.Input{in})
	if err != nil {
		t.Fatal(err)
	}
	var key, dep bytes.Buffer
	if _, err := codec.Encode(context.Background(), &key, []codec.Input{in}, codec.EncodeOptions{Threads: 1, Digest: codec.DigestSHA256}); err != nil {
		t.Fatal(err)
	}
	if _, err := codec.Encode(context.Background(), &dep, []codec.Input{in}, codec.EncodeOptions{Threads: 1, Ref: ref, Digest: codec.DigestSHA256}); err != nil {
		t.Fatal(err)
	}
	buf := header()
	x := Index{Version: Version, K: n, Mode: RefPrevious}
	for i := range n {
		b := dep.Bytes()
		if i == 0 {
			b = key.Bytes()
		}
		x.Frames = append(x.Frames, Frame{Name: fmt.Sprint(i), Files: []FrameFile{{Name: "x", Size: int64(len(data)), SHA256: sha256.Sum256(data)}},
			Offset: int64(len(buf)), Length: int64(len(b)), Ref: i - 1})
		buf = append(buf, b...)
	}
	buf = appendTrailer(buf, x.Marshal(), int64(len(buf)), n)
	a, err := Open(bytes.NewReader(buf), int64(len(buf)))
	if err != nil || len(a.Frames) != n {
		t.Fatalf("open: %v", err)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	s, err := a.Stream(n - 1)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = s.WriteFile(context.Background(), &out, 0, codec.DecodeOptions{Threads: 2})
	runtime.ReadMemStats(&m1)
	s.Close()
	if err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("stream of the last frame: %v", err)
	}
	// block by block, every level would hold two buffers of at least
	// 64 KiB at once: ~390 MB here
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 64<<20 {
		t.Fatalf("the stream allocated %d MiB", alloc>>20)
	}
	if err := a.Verify(context.Background(), codec.DecodeOptions{Threads: 2}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestWritersKeepReferenceRule: whatever the writers are asked (appends,
// keyframes anywhere, reopened writers, repacks to other intervals, either
// mode), the archive they leave opens with every frame: their indexes keep
// the rule ParseIndex enforces.
func TestWritersKeepReferenceRule(t *testing.T) {
	steps := synthSteps(10)
	r := rand.New(rand.NewPCG(11, 12))
	for round := range 12 {
		k, mode := 1+r.IntN(4), RefMode(r.IntN(2))
		f := &memFile{}
		w, err := Create(f, k, mode)
		if err != nil {
			t.Fatal(err)
		}
		n := 3 + r.IntN(len(steps)-3)
		for i := range n {
			if r.IntN(4) == 0 {
				if w, err = OpenWriter(f, int64(len(f.Bytes()))); err != nil {
					t.Fatal(err)
				}
			}
			opt := codec.EncodeOptions{Threads: 1}
			if r.IntN(3) == 0 {
				_, err = w.AppendKeyframe(context.Background(), steps[i].input(), opt)
			} else {
				_, err = w.Append(context.Background(), steps[i].input(), opt)
			}
			if err != nil {
				t.Fatalf("round %d (K %d, mode %d), step %d: %v", round, k, mode, i, err)
			}
		}
		a, err := Open(f, int64(len(f.Bytes())))
		if err != nil || len(a.Frames) != n || a.Tail != 0 {
			t.Fatalf("round %d: %v, %d frames of %d", round, err, len(a.Frames), n)
		}
		g := &memFile{}
		k2 := 1 + r.IntN(5)
		w2, err := Repack(context.Background(), a, g, k2, codec.EncodeOptions{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w2.Append(context.Background(), steps[n].input(), codec.EncodeOptions{Threads: 1}); err != nil {
			t.Fatal(err)
		}
		b, err := Open(g, int64(len(g.Bytes())))
		if err != nil || len(b.Frames) != n+1 {
			t.Fatalf("round %d: repacked to K %d: %v", round, k2, err)
		}
		if err := b.Verify(context.Background(), codec.DecodeOptions{Threads: 1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// a frame that would break the rule is refused before anything is
	// written (a reader would otherwise take the archive to end before it)
	f := pack(t, steps[:4], 10, RefPrevious, 1)
	size := len(f.Bytes())
	w, err := OpenWriter(f, int64(size))
	if err != nil {
		t.Fatal(err)
	}
	ins := []codec.Input{steps[4].input()}
	_, err = w.commit(Frame{Name: "far", Ref: 1}, ins, func(dst io.Writer) (int64, error) { return 0, errors.New("written") })
	if err == nil || !strings.Contains(err.Error(), "neither the frame before it") || len(f.Bytes()) != size {
		t.Fatalf("a far reference: %v (%d bytes of %d)", err, len(f.Bytes()), size)
	}
}
