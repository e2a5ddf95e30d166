package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/store"
)

// modelRef is one model to ingest: its place in the order, its name in
// the store and where its (first) file lies: a local path or
// s3://bucket/key.
type modelRef struct {
	Seq  int
	Name string
	Path string
}

// inputFile is one file of a model, opened.
type inputFile struct {
	Name   string // the name stored in the manifest
	Src    string // where its bytes are read
	R      io.ReaderAt
	Size   int64
	Format string
	Segs   []codec.Segment
	close  func() error
}

// expand turns FILE and PREFIX arguments into models in order: a file is
// one model named by its path as given (as nzip store add names it); a
// directory or an s3:// prefix holds one model per file under it, in
// lexical order, except the files another model there names as its own
// (the shards of a sharded index, the weights of a TF.js model, ONNX
// external data).
func expand(ctx context.Context, args []string) ([]modelRef, error) {
	var out []modelRef
	seen := map[string]bool{}
	add := func(name, p string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, modelRef{Seq: len(out), Name: name, Path: p})
		}
	}
	for _, a := range args {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var paths []string
		if store.IsS3(a) {
			keys, err := listS3(ctx, a)
			if err != nil {
				return nil, err
			}
			paths = keys
		} else {
			st, err := os.Stat(a)
			if err != nil {
				return nil, err
			}
			if !st.IsDir() {
				add(filepath.ToSlash(a), a)
				continue
			}
			err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.Type().IsRegular() {
					paths = append(paths, p)
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		// files that are parts of another model under this prefix
		part := map[string]bool{}
		for _, p := range paths {
			files, err := openModel(p, io.Discard)
			if err != nil {
				return nil, err
			}
			for _, f := range files[1:] {
				part[f.Src] = true
			}
			closeFiles(files)
		}
		for _, p := range paths {
			if !part[p] {
				add(filepath.ToSlash(p), p)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no files to ingest")
	}
	return out, nil
}

// openModel opens a model's files with their layouts (a file no loader
// understands is opaque bytes, with a warning, as nzip store add does).
func openModel(p string, warn io.Writer) ([]inputFile, error) {
	var m *checkpoint.Model
	var err error
	var fsys fs.FS
	prefix := ""
	if store.IsS3(p) {
		var key string
		fsys, prefix, key, err = s3FS(p)
		if err != nil {
			return nil, err
		}
		m, err = checkpoint.OpenFS(fsys, key)
	} else {
		if st, serr := os.Stat(p); serr == nil && !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file", p)
		}
		m, err = checkpoint.OpenPath(p)
	}
	var fe *checkpoint.FormatError
	if err != nil && errors.As(err, &fe) && !strings.HasSuffix(p, ".index.json") {
		fmt.Fprintf(warn, "nzip-beam: warning: %s: %v; storing it as opaque bytes\n", p, err)
		m = nil
	} else if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if m == nil {
		m = &checkpoint.Model{Files: []checkpoint.File{{Path: p, Name: path.Base(filepath.ToSlash(p))}}}
		if store.IsS3(p) {
			m.Files[0].Path = strings.TrimPrefix(p, prefix)
		}
	}
	var out []inputFile
	for _, f := range m.Files {
		src := f.Path
		if store.IsS3(p) {
			src = prefix + f.Path
		}
		r, size, closeFn, err := openSrc(src)
		if err != nil {
			closeFiles(out)
			return nil, err
		}
		in := inputFile{Name: f.Name, Src: src, R: r, Size: size, Format: checkpoint.FormatUnknown, close: closeFn}
		if f.Layout != nil {
			if f.Layout.Size != size {
				closeFn()
				closeFiles(out)
				return nil, fmt.Errorf("%s: file changed while reading it", src)
			}
			in.Format = f.Layout.Format
			in.Segs = f.Layout.Segments
		}
		out = append(out, in)
	}
	return out, nil
}

func closeFiles(fs []inputFile) {
	for _, f := range fs {
		if f.close != nil {
			f.close()
		}
	}
}

// openSrc opens a local file or s3://bucket/key for reading at offsets.
func openSrc(src string) (io.ReaderAt, int64, func() error, error) {
	if store.IsS3(src) {
		fsys, _, key, err := s3FS(src)
		if err != nil {
			return nil, 0, nil, err
		}
		return checkpoint.ReaderAtFS(fsys, key)
	}
	f, err := os.Open(src)
	if err != nil {
		return nil, 0, nil, err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s: not a regular file", src)
		}
		return nil, 0, nil, err
	}
	return f, st.Size(), f.Close, nil
}

// readSpan reads n bytes at off of src (an s3:// object with one ranged
// GET: the caller checks the bytes against the unit's hash).
func readSpan(src string, off, n int64) ([]byte, error) {
	if store.IsS3(src) {
		fsys, _, key, err := s3FS(src)
		if err != nil {
			return nil, err
		}
		b := make([]byte, n)
		f := &s3File{b: fsys.(bucketFS), key: key, size: off + n}
		if _, err := f.ReadAt(b, off); err != nil {
			return nil, err
		}
		return b, nil
	}
	r, size, closeFn, err := openSrc(src)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	if off+n > size {
		return nil, fmt.Errorf("%s: %d bytes at %d beyond its %d bytes (did it change?)", src, n, off, size)
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, off); err != nil && !(errors.Is(err, io.EOF) && n > 0) {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	return b, nil
}

// s3 inputs: s3://bucket/key read with ranged GETs through an fs.FS, so
// the checkpoint loaders (and their companions) work on them unchanged.

// s3FS splits s3://bucket/key into an fs.FS of the bucket (on the
// store's shared client), the prefix "s3://bucket/" and the key.
func s3FS(loc string) (fs.FS, string, string, error) {
	cl, bucket, key, err := store.S3Client(loc)
	if err != nil {
		return nil, "", "", err
	}
	return bucketFS{cl: cl, bucket: bucket}, "s3://" + bucket + "/", key, nil
}

// listS3 lists the objects under an s3:// prefix, in key order.
func listS3(ctx context.Context, loc string) ([]string, error) {
	fsys, prefix, key, err := s3FS(loc)
	if err != nil {
		return nil, err
	}
	b := fsys.(bucketFS)
	var out []string
	for o := range b.cl.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: key, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("%s: %w", loc, o.Err)
		}
		if !strings.HasSuffix(o.Key, "/") {
			out = append(out, prefix+o.Key)
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no objects", loc)
	}
	return out, nil
}

type bucketFS struct {
	cl     *minio.Client
	bucket string
}

func (b bucketFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	st, err := b.cl.StatObject(context.Background(), b.bucket, name, minio.StatObjectOptions{})
	if err != nil {
		if minio.ToErrorResponse(err).StatusCode == 404 {
			err = fs.ErrNotExist
		}
		return nil, &fs.PathError{Op: "open", Path: "s3://" + b.bucket + "/" + name, Err: err}
	}
	return &s3File{b: b, key: name, size: st.Size, mod: st.LastModified, etag: st.ETag}, nil
}

// s3File reads one object at offsets (each ReadAt one ranged GET, bound
// to the ETag first seen when it is known, so a changed object is an
// error, not a mix).
type s3File struct {
	b    bucketFS
	key  string
	size int64
	mod  time.Time
	etag string
	off  int64
}

func (f *s3File) ReadAt(p []byte, off int64) (int, error) {
	if off >= f.size || len(p) == 0 {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := min(int64(len(p)), f.size-off)
	var opt minio.GetObjectOptions
	if err := opt.SetRange(off, off+want-1); err != nil {
		return 0, err
	}
	if f.etag != "" {
		if err := opt.SetMatchETag(f.etag); err != nil {
			return 0, err
		}
	}
	obj, _, _, err := minio.Core{Client: f.b.cl}.GetObject(context.Background(), f.b.bucket, f.key, opt)
	if err != nil {
		return 0, fmt.Errorf("s3://%s/%s: %w", f.b.bucket, f.key, err)
	}
	defer obj.Close()
	n, err := io.ReadFull(obj, p[:want])
	if err != nil {
		return n, fmt.Errorf("s3://%s/%s: %w", f.b.bucket, f.key, err)
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

func (f *s3File) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	return n, err
}

func (f *s3File) Stat() (fs.FileInfo, error) { return s3Info{f}, nil }
func (f *s3File) Close() error               { return nil }

type s3Info struct{ f *s3File }

func (i s3Info) Name() string       { return path.Base(i.f.key) }
func (i s3Info) Size() int64        { return i.f.size }
func (i s3Info) Mode() fs.FileMode  { return 0o444 }
func (i s3Info) ModTime() time.Time { return i.f.mod }
func (i s3Info) IsDir() bool        { return false }
func (i s3Info) Sys() any           { return nil }
