package main

import (
	"bytes"
	"os"
	"path/filepath"

	"neuralzip/checkpoint"
	"neuralzip/codec"
)

// readInput reads a checkpoint and its layout as the CLI's compress sees
// it (an unknown file is one opaque segment).
func readInput(path string) ([]byte, codec.Input, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, codec.Input{}, err
	}
	in := codec.Input{Name: filepath.Base(path), R: bytes.NewReader(src), Size: int64(len(src))}
	if l, err := checkpoint.Open(bytes.NewReader(src), int64(len(src))); err == nil {
		in.Segments = l.Segments
	}
	return src, in, nil
}
