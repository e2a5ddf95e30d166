package store

import (
	"errors"
	"runtime/debug"
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

// faultError is ErrInputChanged for a recovered memory fault; it panics
// again with anything else.
func faultError(r any) error {
	if _, ok := r.(interface{ Addr() uintptr }); ok {
		return ErrInputChanged
	}
	panic(r)
}

// errStopped: the add ended before the step finished.
var errStopped = errors.New("store: the add stopped")
