//go:build !linux

package store

// physMem is the machine's memory in bytes: unknown here (0), so that a
// model larger than BatchBytes goes through Add (Batcher.Flush).
func physMem() uint64 { return 0 }
