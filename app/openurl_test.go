package main

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	ts := httptest.NewServer(s)
	defer ts.Close()

	wb := newTestBench(t)
	u := ts.URL + "/demo/stories"
	test.Type(wb.open_.url, u)
	test.Tap(wb.open_.urlBtn)
	wb.wait()
	if wb.current == nil || wb.current.Path != u || wb.current.Name != "stories260K.bf16.safetensors" || len(wb.current.Tensors) == 0 {
		t.Fatalf("the URL did not open the model: %+v", wb.current)
	}
	wb.selectTab("Histograms")
	wb.wait()
	if wb.hist.hist.plot == nil {
		t.Error("no histogram of the model opened from a URL")
	}
	wb.open_.url.SetText("not a url")
	test.Tap(wb.open_.urlBtn)
	if len(wb.models) != 1 {
		t.Errorf("%d models after a text that is no URL", len(wb.models))
	}
}
