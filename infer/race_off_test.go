//go:build !race

package infer

// raceOn: the race detector is on (sync.Pool then drops items at random).
const raceOn = false
