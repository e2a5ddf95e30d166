package serve

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzParsePath: the request-path parser never yields a file path that
// could leave a source (absolute, dot segments, backslashes, empty
// segments), and a parsed resolve path escapes back to a path that parses
// the same.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{
		"/local/m/resolve/main/model.safetensors", "/api/models/a/b", "/api/models/a/b/revision/main",
		"/api/models/a/b/tree/main/sub/", "/api/models/a/b/paths-info/main", "/a/b/resolve/main/%2e%2e/x",
		"/a/b/resolve/main/sub%2fx", "/a/b/resolve/refs%2Fpr%2F1/x", "//a/b", "/a/b/resolve/main/d/%00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rt, err := parsePath(p)
		if err != nil {
			return
		}
		if !ValidRepoPart(strings.Split(rt.repo, "/")[0]) || strings.Count(rt.repo, "/") != 1 {
			t.Fatalf("%q: repo %q", p, rt.repo)
		}
		if rt.path != "" {
			if strings.HasPrefix(rt.path, "/") || strings.Contains(rt.path, "\\") || strings.Contains(rt.path, "//") || strings.HasSuffix(rt.path, "/") {
				t.Fatalf("%q: path %q", p, rt.path)
			}
			for _, s := range strings.Split(rt.path, "/") {
				if s == "." || s == ".." {
					t.Fatalf("%q: path %q", p, rt.path)
				}
			}
		}
		if rt.kind == routeResolve {
			var segs []string
			for _, s := range strings.Split(rt.path, "/") {
				segs = append(segs, url.PathEscape(s))
			}
			q := "/" + rt.repo + "/resolve/" + url.PathEscape(rt.rev) + "/" + strings.Join(segs, "/")
			rt2, err := parsePath(q)
			if err != nil || rt2 != rt {
				t.Fatalf("%q → %+v → %q → %+v, %v", p, rt, q, rt2, err)
			}
		}
	})
}
