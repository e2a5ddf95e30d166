//go:build !js

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "gputest runs in the browser: GOOS=js GOARCH=wasm go build ./wasm/cmd/gputest (make webgpu-test)")
	os.Exit(2)
}
