package serve

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
)

// blocked is a file made of consecutive blocks, each decoded whole and
// checked (an archive's blocks, a store's units), read through the
// server's block cache.
type blocked interface {
	numBlocks() int
	// blockSpan is block bi's offset in the file and its length.
	blockSpan(bi int) (off, n int64)
	blockKey(bi int) blockKey
	// decoder fills dst (of the block's length) with block bi, checked.
	decoder(bi int) func(dst []byte) error
	srv() *Server
	// lastRead holds the block after the last read's, to spot sequential
	// reads.
	lastRead() *atomic.Int64
}

// getBlock returns block bi decoded, from the server's block cache.
func getBlock(f blocked, bi int) ([]byte, error) {
	_, n := f.blockSpan(bi)
	return f.srv().cache.get(f.blockKey(bi), n, f.decoder(bi))
}

// span returns the blocks [first, last) that cover [off, end).
func span(f blocked, off, end int64) (first, last int) {
	nb := f.numBlocks()
	first = sort.Search(nb, func(i int) bool { o, n := f.blockSpan(i); return o+n > off })
	last = sort.Search(nb, func(i int) bool { o, _ := f.blockSpan(i); return o >= end })
	return first, last
}

// readBlocks reads bytes of a file of size bytes at off, decoding only the
// blocks that cover them (through the block cache). A read that starts
// where the previous one ended, or in the block after it, also starts
// decoding the blocks that follow in the background, up to the server's
// thread count at once, so that sequential readers (a FUSE mount's 128 KiB
// requests, the kernel's read-ahead) find them decoded.
func readBlocks(ctx context.Context, f blocked, size int64, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("serve: negative offset %d", off)
	}
	if off >= size {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), size)
	first, last := span(f, off, end)
	prev := f.lastRead().Swap(int64(last))
	if s := f.srv(); s.cache.max > 0 {
		// the read's own blocks after the first, in parallel, and when
		// the read is sequential those ahead of it
		// (no further than a quarter of the cache, which must still hold
		// the blocks being read)
		stop := last
		if int64(first) == prev || int64(first) == prev-1 {
			stop = last + 4*cap(s.ahead)
		}
		budget := s.cache.max / 4
		for bi := first + 1; bi < min(stop, f.numBlocks()); bi++ {
			_, n := f.blockSpan(bi)
			if bi >= last {
				if budget -= n; budget < 0 {
					break
				}
			}
			s.cache.prefetch(f.blockKey(bi), n, f.decoder(bi), s.ahead)
		}
	}
	n := 0
	for bi := first; bi < last; bi++ {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		data, err := getBlock(f, bi)
		if err != nil {
			return n, err
		}
		bo, bn := f.blockSpan(bi)
		lo, hi := max(off, bo)-bo, min(end, bo+bn)-bo
		n += copy(p[n:], data[lo:hi])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// writeBlocks decodes the blocks that cover [off, off+n) — several at a
// time, each checked — and writes the range in order. It stops decoding
// when ctx ends or a write fails.
func writeBlocks(ctx context.Context, f blocked, w io.Writer, off, n int64) error {
	if n == 0 {
		return nil
	}
	end := off + n
	first, last := span(f, off, end)
	threads := min(f.srv().threads(), last-first)
	type job struct {
		bi   int
		buf  []byte
		err  error
		done chan struct{}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan *job)
	order := make(chan *job, 2*threads)
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				j.buf, j.err = getBlock(f, j.bi)
				close(j.done)
			}
		}()
	}
	go func() {
		defer close(work)
		defer close(order)
		for bi := first; bi < last; bi++ {
			j := &job{bi: bi, done: make(chan struct{})}
			select {
			case order <- j:
			case <-ctx.Done():
				return
			}
			select {
			case work <- j:
			case <-ctx.Done():
				close(j.done)
				return
			}
		}
	}()
	var werr error
	for j := range order {
		<-j.done
		if werr == nil && j.err != nil {
			werr = j.err
		}
		if werr == nil {
			werr = ctx.Err()
		}
		if werr == nil {
			bo, bn := f.blockSpan(j.bi)
			lo, hi := max(off, bo)-bo, min(end, bo+bn)-bo
			if _, err := w.Write(j.buf[lo:hi]); err != nil {
				werr = err
			}
		}
		if werr != nil {
			cancel()
		}
	}
	wg.Wait()
	return werr
}
