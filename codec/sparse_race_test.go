//go:build race

package codec

// raceEnabled: allocation counts differ under the race detector.
const raceEnabled = true
