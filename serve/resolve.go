package serve

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// serveFile answers GET and HEAD of /{repo}/resolve/{rev}/{path}.
func (s *Server) serveFile(w http.ResponseWriter, req *http.Request, r *repo, rev, p string) {
	f := r.byName[p]
	if f == nil {
		apiError(w, http.StatusNotFound, "EntryNotFound", fmt.Sprintf("%s does not exist on %q", p, rev))
		return
	}
	if err := f.c.check(); err != nil {
		s.logf("serve: %s/%s: %v", r.id, p, err)
		apiError(w, http.StatusInternalServerError, "", "the source of this file changed under the server: a store's, ask again; an archive or a directory, restart the server")
		return
	}
	etag := `"` + hex.EncodeToString(f.sum[:]) + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("X-Linked-Etag", etag)
	h.Set("X-Linked-Size", strconv.FormatInt(f.size, 10))
	h.Set("Accept-Ranges", "bytes")
	h.Set("Content-Disposition", contentDisposition(path.Base(p)))
	ct := mime.TypeByExtension(path.Ext(p))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)

	// conditions, in RFC 9110's order (no dates: the server sends no
	// Last-Modified, so If-Unmodified-Since and If-Modified-Since do not
	// apply and an If-Range date never matches)
	if im := req.Header.Get("If-Match"); im != "" && !etagList(im, etag, false) {
		apiError(w, http.StatusPreconditionFailed, "", "If-Match does not match")
		return
	}
	if inm := req.Header.Get("If-None-Match"); inm != "" && etagList(inm, etag, true) {
		h.Del("Content-Type")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	start, n := int64(0), f.size
	status := http.StatusOK
	if rh := req.Header.Get("Range"); rh != "" {
		ir := req.Header.Get("If-Range")
		if ir == "" || strings.HasPrefix(ir, `"`) && ir == etag {
			br := parseRange(rh, f.size)
			switch {
			case br.unsat:
				h.Set("Content-Range", fmt.Sprintf("bytes */%d", f.size))
				apiError(w, http.StatusRequestedRangeNotSatisfiable, "", "Requested Range Not Satisfiable")
				return
			case br.ok:
				start, n = br.start, br.length
				status = http.StatusPartialContent
				h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, start+n-1, f.size))
			}
		}
	}
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	if req.Method == http.MethodHead || n == 0 {
		w.WriteHeader(status)
		return
	}
	ctx := req.Context()
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-s.sem }()
	w.WriteHeader(status)
	hb := &holdback{w: &deadlineWriter{w: w, rc: http.NewResponseController(w), d: s.cfg.WriteTimeout}}
	err := f.c.write(ctx, hb, start, n, start == 0 && n == f.size)
	if err == nil {
		err = hb.flush()
	}
	if err != nil {
		if ctx.Err() == nil && !isClientGone(err) {
			s.logf("serve: %s/%s bytes %d-%d: aborting the response: %v", r.id, p, start, start+n-1, err)
		}
		// close the connection: the client sees a failed download, never
		// a complete-looking wrong file
		panic(http.ErrAbortHandler)
	}
}

// isClientGone reports errors of writing to a client that went away.
func isClientGone(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, errWrite)
}

var errWrite = errors.New("serve: writing the response")

// deadlineWriter gives each write to the client its own deadline.
type deadlineWriter struct {
	w  io.Writer
	rc *http.ResponseController
	d  time.Duration
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.d)) // not supported by recorders in tests
	n, err := d.w.Write(p)
	if err != nil {
		err = fmt.Errorf("%w: %w", errWrite, err)
	}
	return n, err
}

// holdbackBytes is how much of a response holdback keeps until the source
// has checked everything it read.
const holdbackBytes = 64 << 10

// holdback passes writes on except for the last holdbackBytes, which flush
// sends: the caller flushes only when the whole body checked out.
type holdback struct {
	w    io.Writer
	held []byte
}

func (h *holdback) Write(p []byte) (int, error) {
	n := len(p)
	if h.held == nil {
		h.held = make([]byte, 0, holdbackBytes)
	}
	if len(h.held)+len(p) <= holdbackBytes {
		h.held = append(h.held, p...)
		return n, nil
	}
	emit := len(h.held) + len(p) - holdbackBytes // bytes to send now
	if emit <= len(h.held) {
		if _, err := h.w.Write(h.held[:emit]); err != nil {
			return 0, err
		}
		k := copy(h.held, h.held[emit:])
		h.held = append(h.held[:k], p...)
		return n, nil
	}
	if len(h.held) > 0 {
		if _, err := h.w.Write(h.held); err != nil {
			return 0, err
		}
	}
	cut := emit - len(h.held)
	if _, err := h.w.Write(p[:cut]); err != nil {
		return 0, err
	}
	h.held = append(h.held[:0], p[cut:]...)
	return n, nil
}

func (h *holdback) flush() error {
	if len(h.held) == 0 {
		return nil
	}
	_, err := h.w.Write(h.held)
	h.held = h.held[:0]
	return err
}

// contentDisposition is the header the hub's file server sends.
func contentDisposition(name string) string {
	ascii := []byte(name)
	for i, c := range ascii {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			ascii[i] = '_'
		}
	}
	return fmt.Sprintf(`inline; filename*=UTF-8''%s; filename="%s";`, url.PathEscape(name), ascii)
}
