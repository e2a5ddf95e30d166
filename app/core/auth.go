package core

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Servers started with nzip serve -token-file answer only requests that
// carry Authorization: Bearer TOKEN. The workbench keeps the token the
// user gives for a server by its origin (scheme, host and port), in
// memory only (never in the recent files, the URL or a report), and every
// request core makes to that origin carries it: the Hub screen's pages
// and downloads, the Open screen's listing and ranges, the files of a
// model opened from a served store; a redirect to another origin does
// not. Hugging Face clients do the same with HF_TOKEN for HF_ENDPOINT
// (TokenFromEnv).

// ErrToken: the server asks for a token the workbench did not send, or
// refused the one it sent.
var ErrToken = errors.New("the server asks for a bearer token (nzip serve -token-file)")

var tokens = struct {
	sync.Mutex
	m map[string]string // origin → token
}{m: map[string]string{}}

// SetToken sets the bearer token sent with every request to the server of
// URL u (any URL of it: its origin counts); "" forgets the server's
// token. A token is one word of printable characters.
func SetToken(u, token string) error {
	o, err := origin(u)
	if err != nil {
		return err
	}
	token = strings.TrimSpace(token)
	if strings.ContainsFunc(token, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
		return errors.New("the token holds spaces or control characters: give the bearer token alone (the contents of nzip serve's -token-file)")
	}
	tokens.Lock()
	defer tokens.Unlock()
	if token == "" {
		delete(tokens.m, o)
	} else {
		tokens.m[o] = token
	}
	return nil
}

// hasToken reports whether a token is set for the server of URL u.
func hasToken(u string) bool {
	o, err := origin(u)
	return err == nil && tokenOf(o) != ""
}

// TokenFromEnv sets HF_TOKEN as the token of HF_ENDPOINT, as Hugging
// Face clients send it (getenv: os.Getenv); nothing when either is unset,
// so that a token never goes to a server it was not given for.
func TokenFromEnv(getenv func(string) string) error {
	ep, tok := getenv("HF_ENDPOINT"), getenv("HF_TOKEN")
	if ep == "" || tok == "" {
		return nil
	}
	if err := SetToken(ep, tok); err != nil {
		return fmt.Errorf("HF_TOKEN for HF_ENDPOINT: %w", err)
	}
	return nil
}

func tokenOf(origin string) string {
	tokens.Lock()
	defer tokens.Unlock()
	return tokens.m[origin]
}

// origin is the scheme://host:port of an http(s) URL, the port explicit.
func origin(u string) (string, error) {
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" || (pu.Scheme != "http" && pu.Scheme != "https") {
		return "", fmt.Errorf("%q: not an http(s) URL of a server (http://HOST:PORT)", u)
	}
	return urlOrigin(pu), nil
}

func urlOrigin(pu *url.URL) string {
	port := pu.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[pu.Scheme]
	}
	return strings.ToLower(pu.Scheme + "://" + pu.Hostname() + ":" + port)
}

// checkNoCredentials refuses a URL with user information: a browser
// refuses to fetch it, and nzip serve reads a bearer token, not a user
// and password.
func checkNoCredentials(pu *url.URL, u string) error {
	if pu.User != nil {
		return fmt.Errorf("%s: a URL with a user or password: give the token in the Bearer token field instead", redact(pu))
	}
	return nil
}

// redact is u without its user information.
func redact(pu *url.URL) string {
	c := *pu
	c.User = nil
	return c.String()
}

// authTransport adds the token of a request's origin (SetToken).
type authTransport struct{ base http.RoundTripper }

func (t authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if tok := tokenOf(urlOrigin(req.URL)); tok != "" && req.Header.Get("Authorization") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return t.base.RoundTrip(req)
}

// newClient is the HTTP client of core's requests to servers: each
// request carries its server's token.
func newClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: authTransport{http.DefaultTransport}}
}

// tokenError is the error of a 401 answer to req: ErrToken, saying
// whether a token was sent.
func tokenError(req *http.Request) error {
	if req != nil && tokenOf(urlOrigin(req.URL)) != "" {
		return fmt.Errorf("%w: it refused the token given for %s", ErrToken, urlOrigin(req.URL))
	}
	return fmt.Errorf("%w: give it in the Bearer token field", ErrToken)
}

// do sends req with c; a 401 answer is ErrToken (its body closed).
func do(c *http.Client, req *http.Request) (*http.Response, error) {
	resp, err := c.Do(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		return nil, tokenError(resp.Request)
	}
	return resp, err
}
