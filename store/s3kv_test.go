package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// memObjects is s3Objects in memory, counting what is read and written,
// with a hook run before each write of the root (a concurrent writer).
type memObjects struct {
	mu         sync.Mutex
	obj        map[string][]byte
	mod        map[string]time.Time
	etag       map[string]string
	n          int
	beforeRoot func()
	stats      objStats
	read       map[string]int64 // bytes read per key
	failGets   int              // the next so many GETs of shards fail (a network error)
	inflight   int              // GETs under way
	maxFlight  int              // the most GETs under way at once
	// a simulated remote server: each request takes lat plus its bytes
	// at bw bytes per second (0: no wait)
	lat time.Duration
	bw  float64
}

func (m *memObjects) wait(n int) {
	if m.lat > 0 || m.bw > 0 {
		d := m.lat
		if m.bw > 0 {
			d += time.Duration(float64(n) / m.bw * float64(time.Second))
		}
		time.Sleep(d)
	}
}

// objStats counts requests and bytes.
type objStats struct {
	Gets, GetBytes, Puts, PutBytes, Dels int64
}

func (a objStats) sub(b objStats) objStats {
	return objStats{a.Gets - b.Gets, a.GetBytes - b.GetBytes, a.Puts - b.Puts, a.PutBytes - b.PutBytes, a.Dels - b.Dels}
}

func newMemObjects() *memObjects {
	return &memObjects{obj: map[string][]byte{}, etag: map[string]string{}, mod: map[string]time.Time{}}
}

func (m *memObjects) get(_ context.Context, key string, max int64, etag string) ([]byte, string, error) {
	m.mu.Lock()
	m.inflight++
	if m.inflight > m.maxFlight {
		m.maxFlight = m.inflight
	}
	m.mu.Unlock()
	v, tag, err := m.get1(key, max, etag)
	m.wait(len(v))
	m.mu.Lock()
	m.inflight--
	m.mu.Unlock()
	return v, tag, err
}

func (m *memObjects) get1(key string, max int64, etag string) ([]byte, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failGets > 0 && strings.HasPrefix(key, s3ShardPrefix) {
		m.failGets--
		return nil, "", errors.New("connection reset")
	}
	m.stats.Gets++
	v, ok := m.obj[key]
	if !ok {
		return nil, "", errS3NotFound
	}
	if etag != "" && m.etag[key] == etag {
		return nil, etag, nil
	}
	if int64(len(v)) > max {
		return nil, "", fmt.Errorf("%w: %s: an object of %d bytes", ErrIndexDamaged, key, len(v))
	}
	m.stats.GetBytes += int64(len(v))
	if m.read != nil {
		m.read[key] += int64(len(v))
	}
	return bytes.Clone(v), m.etag[key], nil
}

func (m *memObjects) put(_ context.Context, key string, data []byte, match string, noneMatch bool) (string, error) {
	if key == s3RootKey && m.beforeRoot != nil {
		f := m.beforeRoot
		m.beforeRoot = nil
		f()
	}
	m.wait(len(data))
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.Puts++
	m.stats.PutBytes += int64(len(data))
	_, ok := m.obj[key]
	if noneMatch && ok || match != "" && m.etag[key] != match {
		return "", errS3Precondition
	}
	m.n++
	m.obj[key] = bytes.Clone(data)
	m.mod[key] = time.Now()
	m.etag[key] = strconv.Itoa(m.n)
	return m.etag[key], nil
}

func (m *memObjects) del(_ context.Context, key string) error {
	m.wait(0)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.Dels++
	delete(m.obj, key)
	delete(m.etag, key)
	return nil
}

func (m *memObjects) list(_ context.Context, prefix string, fn func(key string, mod time.Time) error) error {
	m.wait(0)
	m.mu.Lock()
	var keys []string
	for k := range m.obj {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	m.mu.Unlock()
	slices.Sort(keys)
	for _, k := range keys {
		m.mu.Lock()
		mod := m.mod[k]
		m.mu.Unlock()
		if err := fn(k, mod); err != nil {
			return err
		}
	}
	return nil
}

func (m *memObjects) count() objStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

func openMemS3(t *testing.T, o *memObjects) *s3KV {
	t.Helper()
	k := newS3KV(o, "mem/")
	if err := k.refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return k
}

// smallShards makes shards split at max bytes for the test.
func smallShards(t *testing.T, max int) {
	old := s3ShardMax
	s3ShardMax = max
	t.Cleanup(func() { s3ShardMax = old })
}

// checkRoot: every shard the root names exists and is listed in no
// retired object; every other shard object is listed in one (deleted:
// only those, once swept, are gone).
func checkRoot(t *testing.T, o *memObjects) {
	t.Helper()
	r, err := decodeRoot(o.obj[s3RootKey])
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, refs := range r.shards {
		for _, ref := range refs {
			named[s3ShardKey(ref.id)] = true
			if _, ok := o.obj[s3ShardKey(ref.id)]; !ok {
				t.Fatalf("shard %x named by the root is missing", ref.id[:8])
			}
		}
	}
	listed := map[string]bool{}
	for key, raw := range o.obj {
		if strings.HasPrefix(key, s3RetiredPrefix) {
			ids, err := decodeRetired(raw)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if named[s3ShardKey(id)] {
					t.Fatalf("shard %x both named and retired", id[:8])
				}
				listed[s3ShardKey(id)] = true
			}
		}
	}
	for key := range o.obj {
		if strings.HasPrefix(key, s3ShardPrefix) && !named[key] && !listed[key] {
			t.Fatalf("shard object %s neither named nor retired", key)
		}
	}
}

// randKey is a short key over a small alphabet, so prefixes and shard
// boundaries meet often.
func randKey(r *rand.Rand) []byte {
	const alpha = "\x00\x01ab\xfe\xff"
	k := make([]byte, 1+r.IntN(4))
	for i := range k {
		k[i] = alpha[r.IntN(len(alpha))]
	}
	return k
}

func randPrefix(r *rand.Rand) []byte {
	k := randKey(r)
	return k[:r.IntN(min(3, len(k)+1))]
}

// readOps runs random reads on t and returns a transcript of them.
func readOps(r *rand.Rand, t tx, n int) string {
	var b strings.Builder
	for range n {
		bk := buckets[r.IntN(len(buckets))]
		switch r.IntN(4) {
		case 0:
			k := randKey(r)
			fmt.Fprintf(&b, "get %s %x = %x\n", bk, k, t.get(bk, k))
		case 1:
			p := randPrefix(r)
			fmt.Fprintf(&b, "scan %s %x:", bk, p)
			err := t.scan(bk, p, func(k, v []byte) error {
				fmt.Fprintf(&b, " %x=%x", k, v)
				return nil
			})
			fmt.Fprintf(&b, " %v\n", err)
		default:
			p, from, back, lim := randPrefix(r), randKey(r), r.IntN(2) == 0, r.IntN(12)
			if r.IntN(8) == 0 {
				from = nil
			}
			fmt.Fprintf(&b, "walk %s %x %x %v %d:", bk, p, from, back, lim)
			n := 0
			err := t.walk(bk, p, from, back, func(k, v []byte) (bool, error) {
				fmt.Fprintf(&b, " %x=%x", k, v)
				n++
				return n < lim, nil
			})
			fmt.Fprintf(&b, " %v\n", err)
		}
	}
	return b.String()
}

// writeOps makes n random writes on t and returns their transcript.
func writeOps(r *rand.Rand, t tx, n int) string {
	var b strings.Builder
	for range n {
		bk := buckets[r.IntN(len(buckets))]
		k := randKey(r)
		if r.IntN(3) == 0 {
			fmt.Fprintf(&b, "del %s %x %v\n", bk, k, t.del(bk, k))
			continue
		}
		v := make([]byte, r.IntN(80))
		for i := range v {
			v[i] = byte(r.Uint32())
		}
		fmt.Fprintf(&b, "put %s %x %v\n", bk, k, t.put(bk, k, v))
	}
	return b.String()
}

// TestS3ShardsModel: random updates (some aborted), gets, scans and walks
// give the same results on the sharded index as on memKV: read back by
// the writer, by fresh opens (shards read lazily) and by a second writer
// whose commits race the first's; every shard the root names exists, and
// retired ones are deleted after the grace period.
func TestS3ShardsModel(t *testing.T) {
	smallShards(t, 300)
	defer func(g, a time.Duration, e int) { s3GCGrace, s3RootMaxAge, s3SweepEvery = g, a, e }(s3GCGrace, s3RootMaxAge, s3SweepEvery)
	s3SweepEvery = 3
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			// grace 0: every commit deletes what the last retired, and
			// every read reads the root again; else shards are kept, and
			// a reader keeps the root it has
			s3GCGrace, s3RootMaxAge = time.Duration(seed%2)*time.Hour, time.Duration(seed%2)*time.Hour
			o := newMemObjects()
			if err := initS3KV(o, "mem/"); err != nil {
				t.Fatal(err)
			}
			m := newMemKV()
			if err := m.update(buildLSH); err != nil {
				t.Fatal(err)
			}
			a, b := openMemS3(t, o), openMemS3(t, o)
			for step := range 300 {
				w := a
				if r.IntN(3) == 0 {
					w = b
				}
				n, abort := 1+r.IntN(12), r.IntN(6) == 0
				opSeed := r.Uint64()
				var race func()
				if r.IntN(5) == 0 { // another writer lands between this one's read and its root write
					other := a
					if w == a {
						other = b
					}
					rn, rSeed := 1+r.IntN(5), r.Uint64()
					race = func() {
						var want string
						m.update(func(t tx) error {
							want = writeOps(rand.New(rand.NewPCG(rSeed, 0)), t, rn)
							return nil
						})
						var got string
						if err := other.update(func(t tx) error {
							got = writeOps(rand.New(rand.NewPCG(rSeed, 0)), t, rn)
							return nil
						}); err != nil || got != want {
							panic(fmt.Sprintf("racing writer: %v", err))
						}
					}
					o.beforeRoot = race
				}
				errAbort := errors.New("abort")
				run := func(t tx) (string, error) {
					rr := rand.New(rand.NewPCG(opSeed, 2))
					s := writeOps(rr, t, n) + readOps(rr, t, 4)
					if abort {
						return s, errAbort
					}
					return s, nil
				}
				var got string
				errS := w.update(func(t tx) error {
					var err error
					got, err = run(t)
					return err
				})
				o.beforeRoot = nil
				var want string
				errM := m.update(func(t tx) error {
					var err error
					want, err = run(t)
					return err
				})
				if errS != errM || got != want {
					t.Fatalf("step %d: update: %v vs %v\n%s\nvs memKV\n%s", step, errS, errM, got, want)
				}
				if step%10 == 9 {
					c := openMemS3(t, o) // a fresh open reads shards lazily
					rs := r.Uint64()
					for _, x := range []*s3KV{a, b, c} {
						if err := x.refresh(context.Background()); err != nil { // the root another writer left
							t.Fatal(err)
						}
						var got, want string
						if err := x.view(func(t tx) error { got = readOps(rand.New(rand.NewPCG(rs, 3)), t, 30); return nil }); err != nil {
							t.Fatal(err)
						}
						m.view(func(t tx) error { want = readOps(rand.New(rand.NewPCG(rs, 3)), t, 30); return nil })
						if got != want {
							t.Fatalf("step %d: reads differ:\n%s\nvs memKV\n%s", step, got, want)
						}
					}
					checkRoot(t, o)
				}
			}
			root, _ := decodeRoot(o.obj[s3RootKey])
			n := 0
			for _, refs := range root.shards {
				n += len(refs)
			}
			if n < 8 {
				t.Fatalf("only %d shards: the test does not cross shard boundaries", n)
			}
			t.Logf("%d shards, %d objects", n, len(o.obj))
		})
	}
}

// TestS3LegacyIndex: a store whose index is one object (s3index.go, as
// stores were written before the root) opens and reads as it is; the
// first update converts it to a root and shards, same contents.
func TestS3LegacyIndex(t *testing.T) {
	smallShards(t, 400)
	r := rand.New(rand.NewPCG(7, 7))
	m := newMemKV()
	m.update(buildLSH)
	m.update(func(t tx) error { writeOps(r, t, 200); return nil })
	o := newMemObjects()
	o.put(context.Background(), s3RootKey, encodeIndex(m.b), "", true)
	k := openMemS3(t, o)
	same := func(what string, x kv) {
		t.Helper()
		rs := r.Uint64()
		var got, want string
		x.view(func(t tx) error { got = readOps(rand.New(rand.NewPCG(rs, 3)), t, 60); return nil })
		m.view(func(t tx) error { want = readOps(rand.New(rand.NewPCG(rs, 3)), t, 60); return nil })
		if got != want {
			t.Fatalf("%s: reads differ:\n%s\nvs\n%s", what, got, want)
		}
	}
	same("legacy", k)
	if err := k.update(func(tx) error { return nil }); err != nil || isRoot(o.obj[s3RootKey]) {
		t.Fatalf("an update that writes nothing converted the index (%v)", err)
	}
	for _, x := range []kv{k, m} {
		x.update(func(t tx) error { return t.put(bModels, []byte("new"), []byte("manifest")) })
	}
	if !isRoot(o.obj[s3RootKey]) {
		t.Fatal("the first update did not write a root")
	}
	same("converted, same open", k)
	same("converted, fresh open", openMemS3(t, o))
	checkRoot(t, o)
}

// TestS3ShardDamage: a damaged or missing shard is ErrIndexDamaged naming
// the model or unit read, never other bytes; a damaged root is
// ErrIndexDamaged at open.
func TestS3ShardDamage(t *testing.T) {
	smallShards(t, 200)
	o := newMemObjects()
	if err := initS3KV(o, "mem/"); err != nil {
		t.Fatal(err)
	}
	k := openMemS3(t, o)
	var h Hash
	h[0] = 0x42
	k.update(func(t tx) error {
		for i := range 40 {
			t.put(bModels, []byte(fmt.Sprintf("model-%02d", i)), bytes.Repeat([]byte{byte(i)}, 30))
		}
		return t.put(bUnits, h[:], []byte("unit record"))
	})
	root, _ := decodeRoot(o.obj[s3RootKey])
	for _, ref := range root.shards[bucketIndex(bModels)] {
		raw := o.obj[s3ShardKey(ref.id)]
		raw[len(raw)-1] ^= 1
	}
	delete(o.obj, s3ShardKey(root.shards[bucketIndex(bUnits)][0].id))
	c := openMemS3(t, o)
	err := c.view(func(t tx) error {
		if v := t.get(bModels, []byte("model-07")); v != nil {
			return fmt.Errorf("read %x from a damaged shard", v)
		}
		return nil
	})
	if !errors.Is(err, ErrIndexDamaged) || !strings.Contains(err.Error(), `model "model-07"`) {
		t.Fatalf("get from a damaged shard: %v", err)
	}
	err = c.view(func(t tx) error { t.get(bUnits, h[:]); return nil })
	if !errors.Is(err, ErrIndexDamaged) || !strings.Contains(err.Error(), "unit "+h.String()) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("get from a missing shard: %v", err)
	}
	err = c.view(func(t tx) error { return t.scan(bModels, nil, func(k, v []byte) error { return nil }) })
	if !errors.Is(err, ErrIndexDamaged) {
		t.Fatalf("scan of damaged shards: %v", err)
	}
	if err := c.update(func(t tx) error { return t.put(bModels, []byte("model-07x"), nil) }); !errors.Is(err, ErrIndexDamaged) {
		t.Fatalf("update on a damaged shard: %v", err)
	}
	raw := o.obj[s3RootKey]
	raw[len(raw)/2] ^= 1
	if err := newS3KV(o, "mem/").refresh(context.Background()); !errors.Is(err, ErrIndexDamaged) {
		t.Fatalf("open with a damaged root: %v", err)
	}
}

func FuzzS3Root(f *testing.F) {
	f.Add(encodeRoot(newS3Root()))
	r := newS3Root()
	r.gen = 9
	r.shards[0] = []s3ShardRef{{low: "", size: 40, entries: 2}, {low: "k", size: 90, entries: 7}}
	f.Add(encodeRoot(r))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := decodeRoot(raw)
		if err != nil {
			if !errors.Is(err, ErrIndexDamaged) {
				t.Fatalf("error %v is not ErrIndexDamaged", err)
			}
			return
		}
		if !bytes.Equal(encodeRoot(r), raw) {
			t.Fatal("root does not encode to its bytes")
		}
	})
}

func FuzzS3Shard(f *testing.F) {
	f.Add(encodeShard(bUnits, 3, []string{"a", "b\x00"}, [][]byte{{1, 2}, nil}))
	f.Add(encodeShard(bModels, 0, nil, nil))
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, gen, s, err := decodeShard(raw)
		if err != nil {
			if !errors.Is(err, ErrIndexDamaged) {
				t.Fatalf("error %v is not ErrIndexDamaged", err)
			}
			return
		}
		if !slices.IsSorted(s.keys) || !bytes.Equal(encodeShard(b, gen, s.keys, s.vals), raw) {
			t.Fatal("shard does not encode to its bytes")
		}
	})
}

func FuzzS3Retired(f *testing.F) {
	f.Add(encodeRetired(nil))
	f.Add(encodeRetired([]Hash{{1}, {2, 3}}))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ids, err := decodeRetired(raw)
		if err != nil {
			if !errors.Is(err, ErrIndexDamaged) {
				t.Fatalf("error %v is not ErrIndexDamaged", err)
			}
			return
		}
		if !bytes.Equal(encodeRetired(ids), raw) {
			t.Fatal("list does not encode to its bytes")
		}
	})
}

// TestS3FuzzSeeds writes (-update-fuzz) the seed corpora of the root,
// shard and retired-list parsers from an s3:// index (in memory, 4 KB
// shards) holding real hub models.
func TestS3FuzzSeeds(t *testing.T) {
	if !*updateFuzz {
		t.Skip("-update-fuzz not set")
	}
	smallShards(t, 4<<10)
	hub := shared(t, "hub/stories260K")
	o := newMemObjects()
	if err := initS3KV(o, "mem/"); err != nil {
		t.Fatal(err)
	}
	s := NewMem(Options{})
	s.kv = openMemS3(t, o)
	for _, f := range []string{"base/model.bf16.safetensors", "ft-fortunes-lora/model.bf16.safetensors"} {
		if _, _, err := s.Add(f, inputs(t, path.Join(hub, f)), AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	write := func(target string, seeds [][]byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o755)
		for i, b := range seeds {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("real-%d", i)), []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)), 0o644)
		}
	}
	root, err := decodeRoot(o.obj[s3RootKey])
	if err != nil {
		t.Fatal(err)
	}
	write("FuzzS3Root", [][]byte{o.obj[s3RootKey]})
	var shards [][]byte
	for bi := range buckets { // the first shard of each bucket
		if refs := root.shards[bi]; len(refs) > 0 {
			shards = append(shards, o.obj[s3ShardKey(refs[0].id)])
		}
	}
	write("FuzzS3Shard", shards)
	var retired [][]byte
	o.list(context.Background(), s3RetiredPrefix, func(key string, _ time.Time) error {
		if raw := o.obj[key]; len(retired) < 2 && len(raw) < 2048 {
			retired = append(retired, raw)
		}
		return nil
	})
	write("FuzzS3Retired", retired)
}

// TestS3ConcurrentWriters: writers on one index at once, each putting its
// own keys (and all bumping one shared counter) with 300-byte shards: every
// write lands, the counter counts every update, whatever the races.
func TestS3ConcurrentWriters(t *testing.T) {
	smallShards(t, 300)
	o := newMemObjects()
	if err := initS3KV(o, "mem/"); err != nil {
		t.Fatal(err)
	}
	const writers, updates = 4, 25
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := openMemS3(t, o)
			for i := range updates {
				err := k.update(func(t tx) error {
					n := 0
					if v := t.get(bCasts, []byte("counter")); v != nil {
						n, _ = strconv.Atoi(string(v))
					}
					if err := t.put(bCasts, []byte("counter"), []byte(strconv.Itoa(n+1))); err != nil {
						return err
					}
					return t.put(bModels, []byte(fmt.Sprintf("w%d-%03d", w, i)), bytes.Repeat([]byte{byte(w)}, 40))
				})
				if err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	k := openMemS3(t, o)
	n := 0
	err := k.view(func(t tx) error {
		if v := string(t.get(bCasts, []byte("counter"))); v != strconv.Itoa(writers*updates) {
			return fmt.Errorf("counter %q, want %d", v, writers*updates)
		}
		return t.scan(bModels, nil, func(k, v []byte) error { n++; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != writers*updates {
		t.Fatalf("%d models, want %d", n, writers*updates)
	}
	checkRoot(t, o)
}

// TestS3CommitCrash: a commit that wrote its shards and died before its
// root landed (the root's PUT fails) leaves the index as it was: a fresh
// open reads the old contents, and the next update lands; later commits
// adopt the dead commits' shards and delete them (no grace period here).
func TestS3CommitCrash(t *testing.T) {
	smallShards(t, 300)
	defer func(g, a time.Duration, e, d int) {
		s3GCGrace, s3RootMaxAge, s3SweepEvery, s3AdoptEvery = g, a, e, d
	}(s3GCGrace, s3RootMaxAge, s3SweepEvery, s3AdoptEvery)
	s3GCGrace, s3RootMaxAge, s3SweepEvery, s3AdoptEvery = 0, 0, 1, 1
	o := newMemObjects()
	if err := initS3KV(o, "mem/"); err != nil {
		t.Fatal(err)
	}
	m := newMemKV()
	m.update(buildLSH)
	r := rand.New(rand.NewPCG(3, 3))
	for range 20 {
		seed := r.Uint64()
		k := openMemS3(t, o)
		crash := errors.New("crash")
		o.beforeRoot = func() { panic(crash) }
		func() {
			defer func() {
				if v := recover(); v != crash {
					t.Fatalf("update did not reach the root write: %v", v)
				}
			}()
			k.update(func(t tx) error { writeOps(rand.New(rand.NewPCG(seed, 0)), t, 10); return nil })
		}()
		o.beforeRoot = nil
		rs := r.Uint64()
		var got, want string
		if err := openMemS3(t, o).view(func(t tx) error { got = readOps(rand.New(rand.NewPCG(rs, 1)), t, 20); return nil }); err != nil {
			t.Fatal(err)
		}
		m.view(func(t tx) error { want = readOps(rand.New(rand.NewPCG(rs, 1)), t, 20); return nil })
		if got != want {
			t.Fatalf("after a crashed commit:\n%s\nvs\n%s", got, want)
		}
		// the next update, by another process, lands
		for _, x := range []kv{openMemS3(t, o), m} {
			if err := x.update(func(t tx) error { writeOps(rand.New(rand.NewPCG(seed, 1)), t, 10); return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 2 { // adopt what the last crash left, then delete it
		if err := openMemS3(t, o).update(func(t tx) error { return t.put(bModels, []byte("x"), nil) }); err != nil {
			t.Fatal(err)
		}
	}
	checkRoot(t, o) // every shard named by the root or a retired list
	root, _ := decodeRoot(o.obj[s3RootKey])
	named, shards := 0, 0
	for _, refs := range root.shards {
		named += len(refs)
	}
	for key := range o.obj {
		if strings.HasPrefix(key, s3ShardPrefix) {
			shards++
		}
	}
	if shards > named+10 { // the last commit's retired ones, at most
		t.Fatalf("%d shard objects, %d named by the root: the dead commits' shards were not deleted", shards, named)
	}
}

// TestS3LazyReads: a fresh open reads the root only; a read of a model's
// manifest and of its units' records reads exactly the shards holding
// them, and a prefix scan only the shards its range meets.
func TestS3LazyReads(t *testing.T) {
	o, root, units := manyShards(t)
	shardOf := func(bucket string, key []byte) Hash {
		refs := root.shards[bucketIndex(bucket)]
		return refs[shardOf(refs, key)].id
	}
	c0 := o.count()
	k := openMemS3(t, o)
	if d := o.count().sub(c0); d.Gets != 1 {
		t.Fatalf("open: %d GETs, want the root's", d.Gets)
	}
	want := map[Hash]bool{shardOf(bModels, []byte("org/model-123")): true}
	c0 = o.count()
	err := k.view(func(t tx) error {
		if t.get(bModels, []byte("org/model-123")) == nil {
			return errors.New("no manifest")
		}
		for _, h := range units[:20] {
			want[shardOf(bUnits, h[:])] = true
			if t.get(bUnits, h[:]) == nil {
				return errors.New("no unit")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := o.count().sub(c0); d.Gets != int64(len(want)) {
		t.Fatalf("a model and 20 units: %d GETs, want %d (of %d shards)", d.Gets, len(want), len(root.shards[bucketIndex(bUnits)])+len(root.shards[bucketIndex(bModels)]))
	}
	// a scan of org/model-1* reads the shards from the one holding
	// org/model-1 to the one holding org/model-199
	k = openMemS3(t, o)
	n, c0 := 0, o.count()
	k.view(func(t tx) error {
		return t.scan(bModels, []byte("org/model-1"), func(k, v []byte) error { n++; return nil })
	})
	lo, hi := -1, -1
	for i, r := range root.shards[bucketIndex(bModels)] {
		if r.id == shardOf(bModels, []byte("org/model-1")) {
			lo = i
		}
		if r.id == shardOf(bModels, []byte("org/model-199")) {
			hi = i
		}
	}
	if d := o.count().sub(c0); n != 100 || d.Gets != int64(hi-lo+1) {
		t.Fatalf("scan: %d keys in %d GETs, want 100 in %d", n, d.Gets, hi-lo+1)
	}
}

// manyShards is an index of 1 KB shards holding 300 models and 2,000
// units (returned), and its root.
func manyShards(t *testing.T) (*memObjects, *s3Root, []Hash) {
	smallShards(t, 1<<10)
	o := newMemObjects()
	if err := initS3KV(o, "mem/"); err != nil {
		t.Fatal(err)
	}
	var units []Hash
	err := openMemS3(t, o).update(func(t tx) error {
		for i := range 300 {
			t.put(bModels, []byte(fmt.Sprintf("org/model-%03d", i)), bytes.Repeat([]byte{1}, 60))
		}
		for i := range 2000 {
			h := Hash(sha256Sum([]byte(strconv.Itoa(i))))
			units = append(units, h)
			t.put(bUnits, h[:], bytes.Repeat([]byte{2}, 40))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	root, err := decodeRoot(o.obj[s3RootKey])
	if err != nil {
		t.Fatal(err)
	}
	return o, root, units
}

// TestS3ParallelReads: the shards a batch of reads needs are read
// several at once (at most s3Parallel), each once: those of keys
// prefetched in a view and in an update, and those a commit rewrites
// without having read them; the reads then find the right values.
func TestS3ParallelReads(t *testing.T) {
	o, root, units := manyShards(t)
	o.lat = 2 * time.Millisecond // long enough for GETs to overlap
	batch := units[:60]
	need := map[Hash]bool{}
	refs := root.shards[bucketIndex(bUnits)]
	for _, h := range batch {
		need[refs[shardOf(refs, h[:])].id] = true
	}
	if len(need) <= s3Parallel {
		t.Fatalf("the batch meets %d shards: too few to test the bound", len(need))
	}
	check := func(what string, run func(k *s3KV, fn func(tx) error) error) {
		t.Helper()
		k := openMemS3(t, o)
		o.maxFlight = 0
		c0 := o.count()
		err := run(k, func(t tx) error {
			prefetch(t, unitKeys(nil, batch...)...)
			for _, h := range batch {
				if !bytes.Equal(t.get(bUnits, h[:]), bytes.Repeat([]byte{2}, 40)) {
					return fmt.Errorf("unit %s: wrong record", h)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		gets := o.count().sub(c0).Gets
		if what == "update" {
			gets-- // the root, read again
		}
		if gets != int64(len(need)) || o.maxFlight < 2 || o.maxFlight > s3Parallel {
			t.Fatalf("%s: %d GETs for %d shards, at most %d at once (want 2 to %d)", what, gets, len(need), o.maxFlight, s3Parallel)
		}
	}
	check("view", func(k *s3KV, fn func(tx) error) error { return k.view(fn) })
	check("update", func(k *s3KV, fn func(tx) error) error { return k.update(fn) })

	// a commit writing keys of many shards it has not read reads them at once
	k := openMemS3(t, o)
	o.maxFlight = 0
	err := k.update(func(t tx) error {
		for _, h := range batch {
			t.put(bUnits, h[:], []byte("new"))
		}
		return nil
	})
	if err != nil || o.maxFlight < 2 || o.maxFlight > s3Parallel {
		t.Fatalf("commit: %v; at most %d GETs at once (want 2 to %d)", err, o.maxFlight, s3Parallel)
	}
	o.lat = 0
	err = openMemS3(t, o).view(func(t tx) error {
		for i, h := range units {
			want := bytes.Repeat([]byte{2}, 40)
			if i < len(batch) {
				want = []byte("new")
			}
			if v := t.get(bUnits, h[:]); !bytes.Equal(v, want) {
				return fmt.Errorf("unit %d after the commit: %q", i, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestS3ParallelReadErrors: when shards of a batch cannot be read, the
// error names the first of them in the batch's order, whatever order the
// reads finished in; nothing failed is kept, no reader is left running,
// and a commit that needs them fails naming the shard.
func TestS3ParallelReadErrors(t *testing.T) {
	o, root, _ := manyShards(t)
	refs := root.shards[bucketIndex(bUnits)]
	if len(refs) < 20 {
		t.Fatalf("%d shards of units", len(refs))
	}
	// shards 5 and 12 of 20 missing
	for _, i := range []int{12, 5} {
		delete(o.obj, s3ShardKey(refs[i].id))
	}
	idx := make([]int, 20)
	for i := range idx {
		idx[i] = i
	}
	for range 20 {
		k := openMemS3(t, o)
		err := k.fetchShards(shardsAt(bUnits, refs, idx))
		if !errors.Is(err, ErrIndexDamaged) || !strings.Contains(err.Error(), fmt.Sprintf("index shard %x of bucket units: missing", refs[5].id[:8])) {
			t.Fatalf("batch with shards 5 and 12 missing: %v", err)
		}
		if k.cached(refs[5].id) || k.cached(refs[12].id) || !k.cached(refs[4].id) {
			t.Fatal("a failed shard kept in the cache, or a read one not")
		}
	}
	buf := make([]byte, 1<<20)
	// (a worker may still be returning from wg.Done: not reading)
	if st := string(buf[:runtime.Stack(buf, true)]); strings.Contains(st, "store.(*s3KV).shard") {
		t.Fatalf("a shard reader left running after its batch:\n%s", st)
	}
	// a commit writing into shard 12 (with others): the error names it
	k := openMemS3(t, o)
	err := k.update(func(t tx) error {
		for _, i := range []int{3, 12, 15} {
			t.put(bUnits, []byte(refs[i].low+"\x00"), []byte("x"))
		}
		return nil
	})
	if !errors.Is(err, ErrIndexDamaged) || !strings.Contains(err.Error(), fmt.Sprintf("index shard %x of bucket units: missing", refs[12].id[:8])) {
		t.Fatalf("commit into a missing shard: %v", err)
	}
}

// TestS3ShardsMerge: deleting most keys merges the shards they leave
// small, and the index reads as memKV does throughout.
func TestS3ShardsMerge(t *testing.T) {
	smallShards(t, 1<<10)
	o := newMemObjects()
	if err := initS3KV(o, "mem/"); err != nil {
		t.Fatal(err)
	}
	k := openMemS3(t, o)
	m := newMemKV()
	m.update(buildLSH)
	count := func() int {
		r, _ := decodeRoot(o.obj[s3RootKey])
		return len(r.shards[bucketIndex(bModels)])
	}
	for _, x := range []kv{k, m} {
		x.update(func(t tx) error {
			for i := range 600 {
				t.put(bModels, []byte(fmt.Sprintf("m%04d", i)), bytes.Repeat([]byte{byte(i)}, 20))
			}
			return nil
		})
	}
	full := count()
	r := rand.New(rand.NewPCG(9, 9))
	for round := range 30 {
		var dels []int
		for range 20 {
			dels = append(dels, r.IntN(600))
		}
		for _, x := range []kv{k, m} {
			x.update(func(t tx) error {
				for _, i := range dels {
					t.del(bModels, []byte(fmt.Sprintf("m%04d", i)))
				}
				return nil
			})
		}
		rs := r.Uint64()
		var got, want string
		if err := openMemS3(t, o).view(func(t tx) error { got = readOps(rand.New(rand.NewPCG(rs, 1)), t, 20); return nil }); err != nil {
			t.Fatal(err)
		}
		m.view(func(t tx) error { want = readOps(rand.New(rand.NewPCG(rs, 1)), t, 20); return nil })
		if got != want {
			t.Fatalf("round %d: reads differ:\n%s\nvs\n%s", round, got, want)
		}
	}
	n := 0
	m.view(func(t tx) error { return t.scan(bModels, nil, func(k, v []byte) error { n++; return nil }) })
	t.Logf("%d keys in %d shards; %d keys left in %d", 600, full, n, count())
	if count() > full*2/3 {
		t.Fatalf("%d of 600 keys left in %d shards (%d when full): small shards not merged", n, count(), full)
	}
	checkRoot(t, o)
}

// TestS3ShardReadError: a shard read that fails (the network) fails that
// read, naming what was read; the next read of it reads it again.
func TestS3ShardReadError(t *testing.T) {
	o := newMemObjects()
	if err := initS3KV(o, "mem/"); err != nil {
		t.Fatal(err)
	}
	k := openMemS3(t, o)
	k.update(func(t tx) error { return t.put(bModels, []byte("m"), []byte("manifest")) })
	k = openMemS3(t, o)
	o.failGets = 1
	get := func() error {
		return k.view(func(t tx) error {
			if v := t.get(bModels, []byte("m")); string(v) != "manifest" {
				return fmt.Errorf("read %q", v)
			}
			return nil
		})
	}
	if err := get(); err == nil || !strings.Contains(err.Error(), `model "m"`) || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("read with a failing GET: %v", err)
	}
	if err := get(); err != nil {
		t.Fatalf("read again: %v", err)
	}
}
