package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"neuralzip/serve"
	"neuralzip/serve/mount"
)

func init() { commands["mount"] = command{runMount} }

// mountStoreHelp ends mount's usage: how a mounted store behaves.
const mountStoreHelp = `A STORE mounted stays writable: nzip store add, rm, gc and repack run beside the
mount, and its tree follows the store's index: models added appear and models removed
leave within about a second (the next lookup or listing looks). A file of a removed
model that is already open keeps reading while its units are in the store, then fails
with EIO (after gc), never with other bytes.
`

// runMount mounts an archive or a directory read-only with FUSE until
// SIGINT or SIGTERM (the context), then unmounts it.
func runMount(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mount", "[-allow-other] [-cache-bytes N] [-threads N] SOURCE MOUNTPOINT", stderr)
	allowOther := fs.Bool("allow-other", false, "let other users read the files (without root: user_allow_other in /etc/fuse.conf)")
	cacheBytes := fs.Int64("cache-bytes", serve.DefaultCacheBytes, "bytes of decoded blocks kept in memory (0: none)")
	threads := fs.Int("threads", 0, "blocks decoded at once ahead of sequential reads (0: all cores)")
	debug := fs.Bool("debug", false, "log every FUSE request")
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(stderr, mountStoreHelp)
	}
	if err := parse(fs, args, 2, 2); err != nil {
		return err
	}
	source, dir := fs.Arg(0), fs.Arg(1)
	if st, err := os.Stat(dir); err != nil {
		return err
	} else if !st.IsDir() {
		return fmt.Errorf("mount: %s is not a directory", dir)
	}
	if err := mount.Available(); err != nil {
		return err
	}
	lg := log.New(stderr, "", log.LstdFlags)
	cfg := serve.Config{Threads: *threads, CacheBytes: cacheFlag(*cacheBytes), Log: lg}
	src, err := serve.Open(source, cfg)
	if err != nil {
		return err
	}
	defer src.Close()
	m, err := mount.New(src, dir, mount.Options{AllowOther: *allowOther, Log: lg, Debug: *debug})
	if err != nil {
		return err
	}
	var n int64
	for _, f := range src.Files() {
		n += f.Size
	}
	fmt.Fprintf(stdout, "nzip mount: %s (%s, %d files, %d bytes) mounted read-only at %s; Ctrl-C unmounts\n",
		source, src.Kind(), len(src.Files()), n, dir)
	done := make(chan struct{})
	go func() { m.Wait(); close(done) }()
	select {
	case <-done: // unmounted from outside (fusermount3 -u, umount)
		return nil
	case <-ctx.Done():
	}
	if err := m.Unmount(); err != nil {
		return err
	}
	// a busy mount was detached lazily: its open files fail once this
	// process exits
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	return nil
}
