package store

import (
	"context"
	"errors"
	"time"
)

// Deletions of an s3:// store beside a migration. A migration
// (migrate_s3.go) builds the version 2 store's shards and chunk files
// beside the live version 1 store, under names the version 1 index does
// not name; a gc, a shard sweep or an adopt of the version 1 store works
// out what is unused from that index, and would delete them once they are
// older than s3GCGrace. So each of them, once it has worked out what to
// delete and before its first delete, checks (s3Hold.check) that
//
//   - no migration is in flight: no root under prefix/migrate/ is younger
//     than s3GCGrace (a migration rewrites its root at every batch and
//     just before it checks its objects and switches; a crashed one's
//     root ages, and gc removes it: s3Blobs.clean), and
//   - the store's root is still of the format version the Store was
//     opened with (a migration that switched, and deleted its root, since
//     the index was read: what is unused was worked out from the old one),
//
// and deletes nothing when either fails. It checks again before a later
// delete once s3GCRecheck has passed since the last check. A migration
// whose root appears after a check lets the deletions decided then go on
// (for s3GCRecheck at most): it checks that its objects exist
// (s3Complete) no sooner than 2×s3GCRecheck after its root appeared, so a
// deletion of one it counts on has landed by then, and it stops before
// the switch. What remains: a delete request that takes longer than
// s3GCRecheck to land, a migration whose batch, or s3Complete, takes
// longer than s3GCGrace (its root ages while it runs), and the deleter's
// clock off the server's object times (as for every use of s3GCGrace).

// errS3Migrating: a migration of the store is in flight (s3Hold.check).
var errS3Migrating = errors.New("store: a migration of the store is in flight")

// s3Hold checks, for the deletions of one gc, sweep or adopt, that they
// may go on.
type s3Hold struct {
	k  *s3KV
	at time.Time // when the last check that passed began; zero: none yet
}

// check is nil when the deletions may go on; errS3Migrating while a
// migration is in flight; ErrMigrated once the store's root is of
// another format version than k is pinned to.
func (h *s3Hold) check(ctx context.Context) error {
	if !h.at.IsZero() && time.Since(h.at) < s3GCRecheck {
		return nil
	}
	now := time.Now()
	live := false
	if err := h.k.o.list(ctx, s3MigratePrefix, func(key string, mod time.Time) error {
		if now.Sub(mod) < s3GCGrace {
			live = true
		}
		return nil
	}); err != nil {
		return err
	}
	if live {
		return errS3Migrating
	}
	if err := h.k.refresh(ctx); err != nil {
		return err
	}
	base, _, _, etag := h.k.snapshot()
	if err := h.k.checkFormat(base, etag); err != nil {
		return err
	}
	h.at = now
	return nil
}
