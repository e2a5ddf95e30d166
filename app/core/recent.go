package core

// MaxRecent is how many recent files the workbench remembers.
const MaxRecent = 8

// PushRecent puts p first in the list of recent paths, without
// duplicates, keeping at most MaxRecent.
func PushRecent(list []string, p string) []string {
	out := []string{p}
	for _, q := range list {
		if q != p && q != "" && len(out) < MaxRecent {
			out = append(out, q)
		}
	}
	return out
}
