//go:build unix

package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"neuralzip/codec"
)

// cpuTimes prints the CPU time (user+system, of the whole process) per
// compress and per decompress, averaged over r runs each: unlike wall time
// it does not count the time other processes hold the CPU.
func cpuTimes(src []byte, segs []codec.Segment, opt codec.EncodeOptions, r int) error {
	cpu := processCPU
	arc, err := codec.CompressBytes(context.Background(), src, segs, opt)
	if err != nil {
		return err
	}
	c0 := cpu()
	for range r {
		codec.CompressBytes(context.Background(), src, segs, opt)
	}
	c1 := cpu()
	for range r {
		codec.DecompressBytes(context.Background(), arc, skipHash(opt.Decoding()))
	}
	c2 := cpu()
	mb := float64(len(src)) / 1e6
	fmt.Printf("ratio %.4f compress %.0f MB/s decompress %.0f MB/s (CPU time, %d runs)\n",
		float64(len(src))/float64(len(arc)), mb/((c1-c0).Seconds()/float64(r)), mb/((c2-c1).Seconds()/float64(r)), r)
	return nil
}

// processCPU is the process's user + system CPU time, all threads.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
