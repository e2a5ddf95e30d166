package codec

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Notes says, one line each, what the coding of an archive's blocks did
// beyond the float coder (blocks coded against a reference, copies, floats
// found in opaque bytes, float blocks zstd coded smaller, cm blocks): the lines
// `nzip inspect` prints under "blocks:" and the workbench shows after a
// run. name quotes a tensor name for the output; size writes a byte count.
func (c Census) Notes(name func(string) string, size func(int64) string) []string {
	var out []string
	if c.Reference > 0 {
		out = append(out, fmt.Sprintf("%d coded against the reference (copies and differences)", c.Reference))
	}
	if c.Duplicate > 0 {
		out = append(out, fmt.Sprintf("%d stored as copies of earlier blocks (their tensors show 0 archive bytes)", c.Duplicate))
	}
	if c.FoundFloat > 0 {
		var types []string
		for _, d := range c.FoundTypes {
			types = append(types, d.String())
		}
		out = append(out, fmt.Sprintf("%d block(s) of opaque bytes coded as floats found in them (%s, %s)", c.FoundFloat, strings.Join(types, ", "), size(c.FoundBytes)))
	}
	if c.ZstdFloat > 0 {
		var parts []string
		for _, n := range slices.Sorted(maps.Keys(c.ZstdTensors)) {
			parts = append(parts, fmt.Sprintf("%s (%d)", name(n), c.ZstdTensors[n]))
		}
		how := "repeats"
		if c.ZstdPlanes > 0 {
			how = fmt.Sprintf("repeats; %d as byte planes", c.ZstdPlanes)
		}
		out = append(out, fmt.Sprintf("zstd coded %d float block(s) smaller than the float coder (%s): %s", c.ZstdFloat, how, strings.Join(parts, ", ")))
	}
	if c.Repeat > 0 {
		var parts []string
		for _, n := range slices.Sorted(maps.Keys(c.RepeatTensors)) {
			parts = append(parts, fmt.Sprintf("%s (%d)", name(n), c.RepeatTensors[n]))
		}
		out = append(out, fmt.Sprintf("%d float tensor(s) coded as rows that repeat each other's values, smaller than the float coder and zstd (repeat blocks, %s; they decode at about 150 MB/s a core): %s", c.Repeat, size(c.RepeatBytes), strings.Join(parts, ", ")))
	}
	if c.CM > 0 {
		out = append(out, fmt.Sprintf("%d block(s) of opaque bytes coded with adaptive byte models, smaller than zstd (%s; they decode at about 17 MB/s a core)", c.CM, size(c.CMBytes)))
	}
	return out
}
