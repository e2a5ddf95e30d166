//go:build !(linux || darwin || freebsd)

package infer

import "time"

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }
