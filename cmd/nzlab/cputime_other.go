//go:build !unix

package main

import (
	"errors"
	"time"

	"neuralzip/codec"
)

func cpuTimes(src []byte, segs []codec.Segment, opt codec.EncodeOptions, r int) error {
	return errors.New("icount -repeat: CPU times need getrusage (unix)")
}

// processCPU is 0 here: the tables' per-CPU-second columns need getrusage.
func processCPU() time.Duration { return 0 }
