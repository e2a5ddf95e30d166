package main

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"fyne.io/fyne/v2/test"

	"neuralzip/codec"
	"neuralzip/serve"
)

// TestOpenURLScreen: a URL typed on the Open screen opens the model from
// nzip serve, and the Histograms screen reads its tensors through it; a
// text that is no URL is refused with a message.
func TestOpenURLScreen(t *testing.T) {
	src := filepath.Join("..", "..", "shared", "models", "original", "stories260K.bf16.safetensors")
	b, err := os.ReadFile(src)
	if err != nil {
		t.Skipf("%s not present (../shared): %v", src, err)
	}
	var arc bytes.Buffer
	if _, err := codec.Encode(context.Background(), &arc, []codec.Input{{Name: filepath.Base(src), R: bytes.NewReader(b), Size: int64(len(b))}}, codec.EncodeOptions{}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "stories.nzip")
	if err := os.WriteFile(p, arc.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s := serve.New(serve.Config{Log: log.New(io.Discard, "", 0)})
	if err := s.Add("demo/stories", p); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Start(ctx)
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64 // file bytes the server sent (resolve responses)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &countingWriter{ResponseWriter: w}
		s.ServeHTTP(cw, r)
		if strings.Contains(r.URL.Path, "/resolve/") {
			sent.Add(cw.n)
		}
	}))
	defer ts.Close()

	wb := newTestBench(t)
	u := ts.URL + "/demo/stories"
	test.Type(wb.open_.url, u)
	test.Tap(wb.open_.urlBtn)
	wb.wait()
	if wb.current == nil || wb.current.Path != u || wb.current.Name != "stories260K.bf16.safetensors" || len(wb.current.Tensors) == 0 {
		t.Fatalf("the URL did not open the model: %+v", wb.current)
	}
	wb.wait()
	wb.selectTab("Histograms")
	wb.wait()
	if wb.hist.hist.plot == nil {
		t.Error("no histogram of the model opened from a URL")
	}
	// a model on a server is read as the screens need it: its header and
	// the histogram's tensor, not the whole file
	if got := sent.Load(); got <= 0 || got > int64(len(b))/2 {
		t.Errorf("opening and the histogram read %d of %d bytes from the server", got, len(b))
	}
	if ls := wb.lazy[wb.current]; ls == nil || len(ls.have) != 1 || !ls.have[wb.focus] {
		t.Errorf("lazy statistics: %+v, want the focused tensor %d only", ls, wb.focus)
	}
	// the whole model, when asked for, reads every tensor
	wb.hist.scope.SetSelected(scopeModel)
	wb.wait()
	wb.wait()
	if ls := wb.lazy[wb.current]; len(ls.have) != wb.current.FloatCount() || wb.hist.hist.plot == nil {
		t.Errorf("whole model: statistics of %d of %d float tensors, plot %v", len(ls.have), wb.current.FloatCount(), wb.hist.hist.plot != nil)
	}
	wb.open_.url.SetText("not a url")
	test.Tap(wb.open_.urlBtn)
	if len(wb.models) != 1 {
		t.Errorf("%d models after a text that is no URL", len(wb.models))
	}
}

// countingWriter counts the body bytes written through it.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}
