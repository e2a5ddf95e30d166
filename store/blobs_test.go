//go:build !js

package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestPackEviction: the table of open packs is emptied when it is full;
// a pack a read still holds stays open until that read is done (before,
// a read racing with the eviction failed on a closed file, reported as a
// damaged chunk), and is closed then.
func TestPackEviction(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"tmp", "packs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := &dirBlobs{dir: dir}
	d.setFormat(Version2)
	defer d.close()
	var ids []Hash
	for i := range 70 {
		id, err := d.put([]byte(fmt.Sprintf("pack %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	held, err := d.open(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[1:] { // fills the table and empties it
		p := make([]byte, 6)
		if err := d.readAt(id, p, 0); err != nil || !bytes.HasPrefix(p, []byte("pack ")) {
			t.Fatalf("read: %q, %v", p, err)
		}
	}
	if _, ok := d.fds[ids[0]]; ok {
		t.Fatal("held pack still in the table after it filled")
	}
	p := make([]byte, 6)
	if n, err := held.f.ReadAt(p, 0); n != 6 || string(p) != "pack 0" {
		t.Fatalf("held pack after eviction: %q, %v", p, err)
	}
	d.done(held)
	if _, err := held.f.ReadAt(p, 0); err == nil {
		t.Fatal("evicted pack still open after its last read")
	}
	if sz, ok := d.size(ids[5]); !ok || sz != 6 {
		t.Fatalf("size %d, %v", sz, ok)
	}
}
