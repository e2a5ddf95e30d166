package store

import (
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
)

// ErrInputChanged is returned by an add whose input file was cut short
// while it was being added: its bytes are mapped in place (mapInput), and
// reading a page past the file's new end is a memory fault, which the
// goroutines that read inputs turn into this error (guardFaults) instead
// of a crash. Nothing is committed.
var ErrInputChanged = errors.New("store: an input file changed (was cut short) while it was being added")

// guardFaults makes memory faults on the calling goroutine recoverable
// panics (debug.SetPanicOnFault) until the returned function restores the
// previous setting: defer guardFaults()() in a goroutine that reads
// mapped inputs, with recoverFault deferred after it.
func guardFaults() func() {
	old := debug.SetPanicOnFault(true)
	return func() { debug.SetPanicOnFault(old) }
}

// recoverFault, deferred, turns a memory fault's panic into
// ErrInputChanged in *err; any other panic goes on.
func recoverFault(err *error) {
	if r := recover(); r != nil {
		*err = faultError(r)
	}
}

// faultError is ErrInputChanged for a recovered memory fault while a
// mapped input is shorter than it was mapped; it panics again with
// anything else (a fault with no input cut short is a bug). A fault
// carries its address (Addr) where the platform reports one; under
// emulation (qemu's user mode) it may come as a nil dereference instead,
// which the shrunk input then tells apart.
func faultError(r any) error {
	if e, ok := r.(runtime.Error); ok && inputCutShort() {
		if _, ok := e.(interface{ Addr() uintptr }); ok || strings.Contains(e.Error(), "invalid memory address") {
			return ErrInputChanged
		}
	}
	panic(r)
}

// mappedInputs are the inputs mapped now (mapInput), with the sizes they
// were mapped at.
var mappedInputs struct {
	sync.Mutex
	m map[*os.File]int64
}

// mappedInput records that f is mapped at size bytes until the returned
// function is called.
func mappedInput(f *os.File, size int64) func() {
	mappedInputs.Lock()
	defer mappedInputs.Unlock()
	if mappedInputs.m == nil {
		mappedInputs.m = map[*os.File]int64{}
	}
	mappedInputs.m[f] = size
	return func() {
		mappedInputs.Lock()
		defer mappedInputs.Unlock()
		delete(mappedInputs.m, f)
	}
}

// inputCutShort reports whether a mapped input is now shorter than it
// was mapped.
func inputCutShort() bool {
	mappedInputs.Lock()
	defer mappedInputs.Unlock()
	for f, size := range mappedInputs.m {
		if st, err := f.Stat(); err == nil && st.Size() < size {
			return true
		}
	}
	return false
}

// errStopped: the add ended before the step finished.
var errStopped = errors.New("store: the add stopped")
