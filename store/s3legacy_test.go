package store

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"
)

// legacyKV is the s3:// index as stores kept it before the root: one
// object at prefix/index holding every bucket (s3index.go), read whole and
// written back whole by each update with If-Match. The tests write stores
// with it as earlier versions did, and measure it.
type legacyKV struct {
	o    s3Objects
	mu   sync.Mutex
	m    *memKV
	etag string
}

func initLegacy(o s3Objects) error {
	m := newMemKV()
	if err := m.update(buildLSH); err != nil {
		return err
	}
	_, err := o.put(context.Background(), s3RootKey, encodeIndex(m.b), "", true)
	return err
}

func openLegacy(o s3Objects) (*legacyKV, error) {
	k := &legacyKV{o: o, m: newMemKV()}
	return k, k.refresh()
}

func (k *legacyKV) refresh() error {
	raw, tag, err := k.o.get(context.Background(), s3RootKey, maxIndexBytes, k.etag)
	if err != nil || raw == nil && tag == k.etag && k.etag != "" {
		return err
	}
	b, err := decodeIndex(raw)
	if err != nil {
		return err
	}
	k.m.mu.Lock()
	k.m.b = b
	k.m.mu.Unlock()
	k.etag = tag
	return nil
}

func (k *legacyKV) view(fn func(tx) error) error { return k.m.view(fn) }
func (k *legacyKV) close() error                 { return nil }

func (k *legacyKV) update(fn func(tx) error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for try := 0; ; try++ {
		if err := k.refresh(); err != nil {
			return err
		}
		k.m.mu.RLock()
		before := k.m.b
		k.m.mu.RUnlock()
		if err := k.m.update(fn); err != nil {
			return err
		}
		tag, err := k.o.put(context.Background(), s3RootKey, encodeIndex(k.m.b), k.etag, false)
		if err == nil {
			k.etag = tag
			return nil
		}
		k.m.mu.Lock()
		k.m.b = before
		k.m.mu.Unlock()
		if try >= s3Retries {
			return err
		}
		k.etag = ""
	}
}

// dumpKV is every bucket of k.
func dumpKV(t testing.TB, k kv) map[string]map[string][]byte {
	b := newMemKV().b
	err := k.view(func(t tx) error {
		for _, name := range buckets {
			if err := t.scan(name, nil, func(k, v []byte) error {
				b[name][string(k)] = bytes.Clone(v)
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var s3TrafficShard = flag.Int("s3-traffic-shard", 0, "TestS3IndexTraffic: the shard size bound (s3ShardMax); 0: the default")

var (
	s3TrafficLatency = flag.Duration("s3-traffic-latency", 0, "TestS3IndexTraffic: each request to the in-memory object store takes this long (a simulated remote server)")
	s3TrafficMBps    = flag.Float64("s3-traffic-mbps", 0, "TestS3IndexTraffic: and its bytes at this many MB/s (0: no wait)")
)

var s3Traffic = flag.Int("s3-traffic", 0, "TestS3IndexTraffic: measure the index traffic of an s3:// store at 10 real models and at this many (synthetic fine-tunes added)")

// TestS3IndexTraffic measures the index objects and bytes one `nzip store
// add` (open, add one model) and one `nzip store get` (open, restore one
// model) read and write, with the index as one object (legacyKV) and as a
// root and shards, on the same index contents: the store holds the hub's
// 10 real files, then -s3-traffic models (storetest's synthetic
// fine-tunes). The object store is in memory (memObjects counts); the
// packs are the same either way and left out.
func TestS3IndexTraffic(t *testing.T) {
	if *s3Traffic == 0 {
		t.Skip("-s3-traffic not set")
	}
	if *s3TrafficShard > 0 {
		smallShards(t, *s3TrafficShard)
	}
	names, models, h := scaleHub(t)
	o := newMemObjects()
	if err := initS3KV(o, "mem/"); err != nil {
		t.Fatal(err)
	}
	base := NewMem(Options{Threads: 2})
	// open is Open's s3:// store on k (read-only: as `nzip store get` opens it)
	open := func(k kv, readOnly bool) *Store {
		s := NewMem(Options{Threads: 2, ReadOnly: readOnly})
		s.kv, s.bl = k, base.bl
		if !readOnly {
			if err := s.ensureLSH(); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	k := newS3KV(o, "mem/")
	if err := k.refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := open(k, false)
	add := func(s *Store, name string, ins []Input) {
		for _, in := range ins {
			if r, ok := in.R.(io.Seeker); ok {
				r.Seek(0, io.SeekStart)
			}
		}
		if _, _, err := s.Add(name, ins, AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range names {
		add(s, name, models[i])
	}
	fmt.Println("| models | index | index bytes | add: GETs | bytes read | PUTs | bytes written | get: GETs | bytes read | add ms | get ms |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	const samples = 5
	measure := func() {
		n := len(names)
		var next []string
		var nextIns [][]Input
		for range samples {
			m, err := h.Next()
			if err != nil {
				t.Fatal(err)
			}
			next = append(next, m.Name)
			nextIns = append(nextIns, []Input{{Name: "model.safetensors", R: bytes.NewReader(m.Data), Size: int64(len(m.Data)), Format: "safetensors", Segments: m.Segs}})
		}
		// the same contents as one object
		lo := newMemObjects()
		lo.put(context.Background(), s3RootKey, encodeIndex(dumpKV(t, k)), "", true)
		root, _ := decodeRoot(o.obj[s3RootKey])
		shards, sbytes := 0, int64(0)
		for _, refs := range root.shards {
			for _, r := range refs {
				shards++
				sbytes += r.size
			}
		}
		for _, kind := range []string{"one object", "root + shards"} {
			obj := lo
			if kind != "one object" {
				obj = o
			}
			openKV := func() kv {
				if obj == lo {
					k, err := openLegacy(lo)
					if err != nil {
						t.Fatal(err)
					}
					return k
				}
				k := newS3KV(o, "mem/")
				if err := k.refresh(context.Background()); err != nil {
					t.Fatal(err)
				}
				return k
			}
			var a, g objStats
			var ta, tg time.Duration // wall time with the simulated server
			obj.lat, obj.bw = *s3TrafficLatency, *s3TrafficMBps*1e6
			by := map[string]int64{} // bytes the adds read, by bucket
			byN := map[string]int{}  // and objects
			for i := range samples {
				c := obj.count()
				root, _ := decodeRoot(obj.obj[s3RootKey])
				obj.read = map[string]int64{}
				t0 := time.Now()
				add(open(openKV(), false), next[i], nextIns[i])
				ta += time.Since(t0)
				a = a.plus(obj.count().sub(c))
				for key, n := range obj.read {
					b := "index"
					for bi := range buckets {
						for _, r := range root.shardsOf(bi) {
							if s3ShardKey(r.id) == key {
								b = buckets[bi]
							}
						}
					}
					by[b] += n / samples
					byN[b]++
				}
				obj.read = nil
				c = obj.count()
				t0 = time.Now()
				gs := open(openKV(), true)
				name := names[(i*7919)%n]
				m, err := gs.Model(name)
				if err != nil {
					t.Fatal(err)
				}
				if err := gs.WriteFile(m, 0, io.Discard); err != nil {
					t.Fatal(err)
				}
				tg += time.Since(t0)
				g = g.plus(obj.count().sub(c))
			}
			obj.lat, obj.bw = 0, 0
			if obj == o {
				t.Logf("%d models: the adds read, by bucket: %v bytes, %v objects (5 adds)", n, by, byN)
			}
			size := fmt.Sprintf("%d", len(lo.obj[s3RootKey]))
			if obj == o {
				size = fmt.Sprintf("root %d + %d shards %d", len(o.obj[s3RootKey]), shards, sbytes)
			}
			fmt.Printf("| %d | %s | %s | %.1f | %d | %.1f | %d | %.1f | %d | %d | %d |\n", n, kind, size,
				float64(a.Gets)/samples, a.GetBytes/samples, float64(a.Puts)/samples, a.PutBytes/samples,
				float64(g.Gets)/samples, g.GetBytes/samples, ta.Milliseconds()/samples, tg.Milliseconds()/samples)
		}
		names = append(names, next...)
		models = append(models, nextIns...)
		// the legacy copy is dropped: s holds the models added to o
		k.refresh(context.Background())
	}
	measure()
	for len(names) < *s3Traffic {
		m, err := h.Next()
		if err != nil {
			t.Fatal(err)
		}
		ins := []Input{{Name: "model.safetensors", R: bytes.NewReader(m.Data), Size: int64(len(m.Data)), Format: "safetensors", Segments: m.Segs}}
		add(s, m.Name, ins)
		names = append(names, m.Name)
		models = append(models, ins)
	}
	measure()
}

func (a objStats) plus(b objStats) objStats {
	return objStats{a.Gets + b.Gets, a.GetBytes + b.GetBytes, a.Puts + b.Puts, a.PutBytes + b.PutBytes, a.Dels + b.Dels}
}

func (r *s3Root) shardsOf(bi int) []s3ShardRef {
	if r == nil {
		return nil
	}
	return r.shards[bi]
}
