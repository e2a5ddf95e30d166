package serve

import (
	"errors"
	"net/url"
	"strings"
)

// route kinds.
const (
	routeModel     = iota + 1 // GET /api/models/{repo}[/revision/{rev}]
	routeTree                 // GET /api/models/{repo}/tree/{rev}[/{path}]
	routePathsInfo            // POST /api/models/{repo}/paths-info/{rev}
	routeResolve              // GET, HEAD /{repo}/resolve/{rev}/{path}
)

// ErrBadPath is returned by parsePath for a request path that is not one of
// the server's routes or that names a file in a way the server refuses
// (dot segments, encoded slashes, backslashes, control characters, empty
// segments).
var ErrBadPath = errors.New("serve: bad request path")

// route is a parsed request path.
type route struct {
	kind int
	repo string // "ORG/NAME"
	rev  string // "" for routeModel without /revision/
	path string // slash-separated file or directory path, "" for the root
}

// parsePath parses the escaped path of a request (url.URL.EscapedPath).
// Every segment is unescaped on its own, so an encoded slash never splits
// or joins segments; the file path it returns is clean and relative.
func parsePath(escaped string) (route, error) {
	if !strings.HasPrefix(escaped, "/") {
		return route{}, ErrBadPath
	}
	raw := strings.Split(escaped[1:], "/")
	segs := make([]string, len(raw))
	for i, s := range raw {
		u, err := url.PathUnescape(s)
		if err != nil {
			return route{}, ErrBadPath
		}
		segs[i] = u
	}
	if len(segs) >= 2 && segs[0] == "api" && segs[1] == "models" {
		return parseAPI(segs[2:])
	}
	// /{org}/{name}/resolve/{rev}/{path...}
	if len(segs) < 5 || segs[2] != "resolve" {
		return route{}, ErrBadPath
	}
	repo, ok := repoOf(segs[0], segs[1])
	if !ok {
		return route{}, ErrBadPath
	}
	p, ok := filePath(segs[4:])
	if !ok || p == "" || !validRev(segs[3]) {
		return route{}, ErrBadPath
	}
	return route{kind: routeResolve, repo: repo, rev: segs[3], path: p}, nil
}

// parseAPI parses what follows /api/models/.
func parseAPI(segs []string) (route, error) {
	if len(segs) < 2 {
		return route{}, ErrBadPath
	}
	repo, ok := repoOf(segs[0], segs[1])
	if !ok {
		return route{}, ErrBadPath
	}
	rest := segs[2:]
	if len(rest) == 0 {
		return route{kind: routeModel, repo: repo}, nil
	}
	if len(rest) < 2 || !validRev(rest[1]) {
		return route{}, ErrBadPath
	}
	switch rest[0] {
	case "revision":
		if len(rest) == 2 {
			return route{kind: routeModel, repo: repo, rev: rest[1]}, nil
		}
	case "paths-info":
		if len(rest) == 2 {
			return route{kind: routePathsInfo, repo: repo, rev: rest[1]}, nil
		}
	case "tree":
		p := ""
		if len(rest) > 2 {
			// a trailing slash (tree/main/) names the root or the directory
			tail := rest[2:]
			if tail[len(tail)-1] == "" {
				tail = tail[:len(tail)-1]
			}
			if len(tail) > 0 {
				q, ok := filePath(tail)
				if !ok {
					return route{}, ErrBadPath
				}
				p = q
			}
		}
		return route{kind: routeTree, repo: repo, rev: rest[1], path: p}, nil
	}
	return route{}, ErrBadPath
}

// repoOf checks the two parts of a repository name.
func repoOf(org, name string) (string, bool) {
	if !ValidRepoPart(org) || !ValidRepoPart(name) {
		return "", false
	}
	return org + "/" + name, true
}

// ValidRepoPart reports whether s may be one half of a repository name
// ORG/NAME: 1 to 96 letters, digits, '-', '_' and '.', not starting or
// ending with '.' or '-', without "..".
func ValidRepoPart(s string) bool {
	if s == "" || len(s) > 96 || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		case c == '-' || c == '.':
			if i == 0 || i == len(s)-1 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// validRev accepts any revision without control characters: a revision is
// only compared with the ones the server has, so an encoded slash (as in
// refs%2Fpr%2F1) names a revision the server does not have, not a path.
func validRev(s string) bool {
	return s != "" && len(s) <= 256 && clean(s)
}

// filePath joins unescaped segments into a relative path, refusing empty,
// "." and ".." segments, segments holding a slash or backslash (encoded in
// the request), and control characters.
func filePath(segs []string) (string, bool) {
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || len(s) > 255 || strings.ContainsAny(s, "/\\") || !clean(s) {
			return "", false
		}
	}
	p := strings.Join(segs, "/")
	return p, len(p) <= 4096
}

// clean reports whether s holds no control characters and is valid UTF-8.
func clean(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return false
		}
	}
	return true
}
