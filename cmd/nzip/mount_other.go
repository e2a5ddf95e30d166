//go:build !linux

package main

import (
	"context"
	"errors"
	"io"
)

func init() { commands["mount"] = command{runMount} }

// runMount says why there is no mount here.
func runMount(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("mount needs Linux FUSE; on this system use nzip serve or nzip decompress")
}
