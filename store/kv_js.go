//go:build js

package store

import (
	"errors"
	"time"
)

// bbolt does not build for js/wasm: the browser has only the in-memory store.
func openBolt(path string, create bool, wait time.Duration) (kv, error) {
	return nil, errors.New("store: directory stores are not available in the browser build (bbolt does not build for js); use NewMem")
}

func openKV(path string, opt Options) (kv, error) { return openBolt(path, false, opt.LockWait) }
