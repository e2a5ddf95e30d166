//go:build !unix

package main

import (
	"errors"

	"neuralzip/codec"
)

func cpuTimes(src []byte, segs []codec.Segment, opt codec.EncodeOptions, r int) error {
	return errors.New("icount -repeat: CPU times need getrusage (unix)")
}
