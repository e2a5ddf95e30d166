//go:build !js

package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// A store on S3-compatible object storage (STORE = s3://bucket/prefix):
//
//	prefix/packs/<hex>.pack   the chunk files, immutable, named by their address (version.go)
//	prefix/index              the index's root (s3shard.go, s3kv.go), or the
//	                          whole index of a store before it (s3index.go)
//	prefix/shards/<hex>       the index's shards, immutable, named by their SHA-256
//	prefix/retired/<time>-<generation>  shards that left the root, deleted later
//	prefix/migrate/<time>-<random>  the root of a version 2 index that nzip
//	                          store migrate builds beside the store (migrate_s3.go)
//
// A pack is written before the index that names it, and the index's root
// is replaced with a conditional PUT (If-Match the ETag it was read with; a
// new store's with If-None-Match *): an add is in the store exactly when
// its index write lands. Two writers at once cannot both land: the loser
// reads the root again and redoes its update (up to s3Retries times);
// packs of an add that never landed are orphans, which gc removes. The
// server must honour conditional writes; one that ignores them could let
// a concurrent writer's index overwrite another's (a single writer is
// always safe).
//
// The endpoint and credentials come from the environment: AWS_ENDPOINT_URL
// (or S3_ENDPOINT; http:// or https://; default https://s3.amazonaws.com),
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN;
// anonymous when unset), AWS_REGION.

type s3Loc struct {
	cl     *minio.Client
	bucket string
	prefix string // "" or ending in "/"
}

func parseS3(loc string) (*s3Loc, error) {
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return nil, fmt.Errorf("store: %q is not s3://bucket/prefix", loc)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix != "" {
		prefix += "/"
	}
	ep := os.Getenv("AWS_ENDPOINT_URL")
	if ep == "" {
		ep = os.Getenv("S3_ENDPOINT")
	}
	if ep == "" {
		ep = "https://s3.amazonaws.com"
	}
	eu, err := url.Parse(ep)
	if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" {
		return nil, fmt.Errorf("store: endpoint %q: want http://host[:port] or https://host[:port]", ep)
	}
	region, keyID := os.Getenv("AWS_REGION"), os.Getenv("AWS_ACCESS_KEY_ID")+"\x00"+os.Getenv("AWS_ACCESS_KEY")
	ck := ep + "\x00" + region + "\x00" + keyID
	if v, ok := s3Clients.Load(ck); ok {
		return &s3Loc{cl: v.(*minio.Client), bucket: u.Host, prefix: prefix}, nil
	}
	creds := credentials.NewEnvAWS()
	if keyID == "\x00" {
		creds = credentials.NewStatic("", "", "", credentials.SignatureAnonymous)
	}
	cl, err := minio.New(eu.Host, &minio.Options{Creds: creds, Secure: eu.Scheme == "https", Region: region})
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", loc, err)
	}
	v, _ := s3Clients.LoadOrStore(ck, cl)
	return &s3Loc{cl: v.(*minio.Client), bucket: u.Host, prefix: prefix}, nil
}

// s3Clients holds one client per endpoint, region and key, so that every
// store and input on it shares its connections.
var s3Clients sync.Map

func (l *s3Loc) index() string { return l.prefix + "index" }

func (l *s3Loc) pack(id Hash) string {
	return l.prefix + "packs/" + hex.EncodeToString(id[:]) + ".pack"
}

func notFound(err error) bool {
	return minio.ToErrorResponse(err).Code == "NoSuchKey" || minio.ToErrorResponse(err).StatusCode == 404
}

// transient: a server error that S3 asks to retry.
func transient(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.StatusCode >= 500 || r.Code == "InternalError" || r.Code == "SlowDown" || r.Code == "ServiceUnavailable"
}

// putRetry is PutObject, tried again (up to 5 times, backing off) while the
// server answers with a transient error.
func (l *s3Loc) putRetry(ctx context.Context, key string, data []byte, opt minio.PutObjectOptions) (minio.UploadInfo, error) {
	for try := 0; ; try++ {
		info, err := l.cl.PutObject(ctx, l.bucket, key, bytes.NewReader(data), int64(len(data)), opt)
		if err == nil || !transient(err) || try == 4 {
			return info, err
		}
		select {
		case <-ctx.Done():
			return info, ctx.Err()
		case <-time.After(time.Duration(100<<try) * time.Millisecond):
		}
	}
}

func preconditionFailed(err error) bool {
	r := minio.ToErrorResponse(err)
	return r.StatusCode == 412 || r.Code == "PreconditionFailed"
}

// initS3 creates an empty store (the bucket must exist; the prefix must
// hold no store).
func initS3(loc string, v int, o InitOptions) error {
	l, err := parseS3(loc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if ok, err := l.cl.BucketExists(ctx, l.bucket); err != nil {
		return fmt.Errorf("store: %s: %w", loc, err)
	} else if !ok {
		return fmt.Errorf("store: %s: no bucket %q", loc, l.bucket)
	}
	return initS3KVWith(s3Objs{l}, l.bucket+"/"+l.prefix, initRecords(v, o))
}

// openS3 opens the store at loc.
func openS3(loc string, opt Options) (*Store, error) {
	l, err := parseS3(loc)
	if err != nil {
		return nil, err
	}
	k := newS3KV(s3Objs{l}, l.bucket+"/"+l.prefix)
	if err := k.refresh(context.Background()); err != nil {
		if errors.Is(err, errS3NotFound) {
			return nil, fmt.Errorf("%w: %s", ErrNotStore, loc)
		}
		return nil, err
	}
	return newS3Store(loc, l, k, opt)
}

// newS3Store is the Store at loc with index k.
func newS3Store(loc string, l *s3Loc, k kv, opt Options) (*Store, error) {
	s := &Store{dir: loc, kv: k, bl: &s3Blobs{l: l}, opt: opt, cache: newRawCache(256 << 20)}
	if err := s.readFormat(); err != nil {
		return nil, err
	}
	if sk, ok := k.(*s3KV); ok {
		sk.pinFormat(s.ver)
	}
	if !opt.ReadOnly {
		if err := s.ensureLSH(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// s3Objs is s3Objects on the store's bucket and prefix.
type s3Objs struct{ l *s3Loc }

// get takes the object's ETag and bytes from one GET (minio's Object would
// stat first and read later conditional on that ETag, which fails when
// another writer lands in between), and reads no bytes when the ETag is etag.
func (o s3Objs) get(ctx context.Context, key string, max int64, etag string) ([]byte, string, error) {
	core := minio.Core{Client: o.l.cl}
	obj, st, _, err := core.GetObject(ctx, o.l.bucket, o.l.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		if notFound(err) {
			return nil, "", errS3NotFound
		}
		return nil, "", err
	}
	defer obj.Close()
	if st.ETag == etag && etag != "" {
		return nil, etag, nil
	}
	if st.Size > max {
		return nil, "", fmt.Errorf("%w: %s: an object of %d bytes", ErrIndexDamaged, o.l.prefix+key, st.Size)
	}
	raw, err := io.ReadAll(io.LimitReader(obj, max+1))
	if err != nil {
		return nil, "", err
	}
	if int64(len(raw)) > max {
		return nil, "", fmt.Errorf("%w: %s: more than %d bytes", ErrIndexDamaged, o.l.prefix+key, max)
	}
	return raw, st.ETag, nil
}

func (o s3Objs) put(ctx context.Context, key string, data []byte, match string, noneMatch bool) (string, error) {
	var opt minio.PutObjectOptions
	if match != "" {
		opt.SetMatchETag(match)
	}
	if noneMatch {
		opt.SetMatchETagExcept("*")
	}
	info, err := o.l.putRetry(ctx, o.l.prefix+key, data, opt)
	if preconditionFailed(err) {
		return "", fmt.Errorf("%w: %s", errS3Precondition, o.l.prefix+key)
	}
	return info.ETag, err
}

func (o s3Objs) del(ctx context.Context, key string) error {
	return o.l.cl.RemoveObject(ctx, o.l.bucket, o.l.prefix+key, minio.RemoveObjectOptions{})
}

func (o s3Objs) list(ctx context.Context, prefix string, fn func(key string, mod time.Time) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for obj := range o.l.cl.ListObjects(ctx, o.l.bucket, minio.ListObjectsOptions{Prefix: o.l.prefix + prefix, Recursive: true}) {
		if obj.Err != nil {
			return obj.Err
		}
		if err := fn(strings.TrimPrefix(obj.Key, o.l.prefix), obj.LastModified); err != nil {
			return err
		}
	}
	return nil
}

// s3Blobs keeps packs as objects.
type s3Blobs struct {
	l   *s3Loc
	sum func(...[]byte) Hash // the store's address function
	mod sync.Map             // Hash → time.Time: when each pack was written, as the last list saw
}

// young reports whether pack id (seen by the last list) is within the grace period.
func (b *s3Blobs) young(id Hash) bool {
	v, ok := b.mod.Load(id)
	return ok && time.Since(v.(time.Time)) < s3GCGrace
}

func (b *s3Blobs) setFormat(v int) { b.sum = partsSum(v) }

func (b *s3Blobs) create() (packWriter, error) { return &gatherPack{bl: b}, nil }

func (b *s3Blobs) put(parts ...[]byte) (Hash, error) {
	data := bytes.Join(parts, nil) // one request body
	id := b.sum(data)
	ctx := context.Background()
	if _, ok := b.stat(id); ok {
		return id, nil
	}
	_, err := b.l.putRetry(ctx, b.l.pack(id), data, minio.PutObjectOptions{})
	return id, err
}

func (b *s3Blobs) readAt(id Hash, p []byte, off int64) error {
	if len(p) == 0 {
		return nil
	}
	var opt minio.GetObjectOptions
	if err := opt.SetRange(off, off+int64(len(p))-1); err != nil {
		return err
	}
	obj, err := b.l.cl.GetObject(context.Background(), b.l.bucket, b.l.pack(id), opt)
	if err != nil {
		return err
	}
	defer obj.Close()
	if _, err := io.ReadFull(obj, p); err != nil {
		if notFound(err) {
			return os.ErrNotExist
		}
		return err
	}
	return nil
}

func (b *s3Blobs) remove(id Hash) error {
	return b.l.cl.RemoveObject(context.Background(), b.l.bucket, b.l.pack(id), minio.RemoveObjectOptions{})
}

func (b *s3Blobs) list(fn func(id Hash, size int64) error) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for o := range b.l.cl.ListObjects(ctx, b.l.bucket, minio.ListObjectsOptions{Prefix: b.l.prefix + "packs/", Recursive: true}) {
		if o.Err != nil {
			return o.Err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(o.Key, b.l.prefix+"packs/"), ".pack")
		raw, err := hex.DecodeString(name)
		if err != nil || len(raw) != len(Hash{}) {
			continue // not a pack
		}
		b.mod.Store(Hash(raw), o.LastModified)
		if err := fn(Hash(raw), o.Size); err != nil {
			return err
		}
	}
	return nil
}

// clean removes the roots of migrations (migrate_s3.go) that crashed or
// failed, those not written for s3GCGrace (a migration in flight
// rewrites its root at every batch; one that lost its root fails and
// switches nothing). Nothing else is left half-written: S3 writes are
// whole or absent.
func (b *s3Blobs) clean() (int, error) {
	o := s3Objs{b.l}
	ctx := context.Background()
	var old []string
	if err := o.list(ctx, s3MigratePrefix, func(key string, mod time.Time) error {
		if time.Since(mod) >= s3GCGrace {
			old = append(old, key)
		}
		return nil
	}); err != nil {
		return 0, err
	}
	for _, key := range old {
		if err := o.del(ctx, key); err != nil {
			return 0, err
		}
	}
	return len(old), nil
}

// S3Client is the client, bucket and key prefix of s3://bucket/prefix,
// configured from the environment as the s3:// store is (AWS_ENDPOINT_URL,
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION) and shared with it:
// for reading inputs that lie on the same storage.
func S3Client(loc string) (cl *minio.Client, bucket, prefix string, err error) {
	l, err := parseS3(loc)
	if err != nil {
		return nil, "", "", err
	}
	return l.cl, l.bucket, strings.TrimSuffix(l.prefix, "/"), nil
}

// stat is a pack's size, one request away (not cheap enough for blobSize).
func (b *s3Blobs) stat(id Hash) (int64, bool) {
	st, err := b.l.cl.StatObject(context.Background(), b.l.bucket, b.l.pack(id), minio.StatObjectOptions{})
	if err != nil {
		return 0, false
	}
	return st.Size, true
}
