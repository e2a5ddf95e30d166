//go:build js

// Command gputest is the browser half of the WebGPU test (make
// webgpu-test, wasm/test/webgpu.test.mjs): it fetches the models named in
// the page's ?files= parameter, compresses each with nzip, decodes the
// archive on the WebGPU backend (decode.wgsl in the browser's adapter) and
// on the kernels' Go twin, and checks both bit-exact against the original
// file and against each other (bytes and exponent histograms). A damaged
// archive must fail with an error. The result is JSON in
// globalThis.nzgpuResult.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"syscall/js"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/gpu"
)

type fileResult struct {
	File       string   `json:"file"`
	Chunk      int      `json:"chunk"`
	Bytes      int64    `json:"bytes"`
	DevBytes   int64    `json:"device_bytes"`
	Exact      bool     `json:"exact"`
	TwinEqual  bool     `json:"twin_equal"`
	HistEqual  bool     `json:"hist_equal"`
	KernelGBs  float64  `json:"kernel_gb_s"`
	TotalGBs   float64  `json:"total_gb_s"`
	DamageSeen bool     `json:"damage_detected"`
	Sparse     int      `json:"sparse_blocks"`        // sparse blocks in the archive
	SparseDev  int      `json:"sparse_device_blocks"` // of which the device decoded
	CPU        []string `json:"cpu_blocks,omitempty"`
	Error      string   `json:"error,omitempty"`
}

type result struct {
	Device string       `json:"device"`
	Files  []fileResult `json:"files"`
	Error  string       `json:"error,omitempty"`
}

func main() {
	b, _ := json.Marshal(runAll())
	js.Global().Set("nzgpuResult", string(b))
	// Stay alive: when main returns the Go program exits, and a timer the
	// runtime still had pending (its callbacks resume the Go program) then
	// fails on the page as "Go program has already exited", now and then.
	select {}
}

func runAll() (res result) {
	defer func() {
		if r := recover(); r != nil {
			res.Error = fmt.Sprintf("panic: %v", r)
		}
	}()
	q, _ := url.ParseQuery(strings.TrimPrefix(js.Global().Get("location").Get("search").String(), "?"))
	b, err := gpu.Open("webgpu", 0)
	if err != nil {
		res.Error = err.Error()
		return
	}
	res.Device = b.Device()
	for _, u := range strings.Split(q.Get("files"), ",") {
		if u == "" {
			continue
		}
		if strings.HasSuffix(u, ".nzip") { // an archive as it is: decoded, not compressed
			res.Files = append(res.Files, run(b, u, -1))
			continue
		}
		for _, chunk := range []int{0, 4096} {
			res.Files = append(res.Files, run(b, u, chunk))
		}
	}
	return res
}

func run(b gpu.Backend, u string, chunk int) (fr fileResult) {
	fr = fileResult{File: path.Base(u), Chunk: chunk}
	fail := func(err error) fileResult { fr.Error = err.Error(); return fr }
	resp, err := http.Get(u)
	if err != nil {
		return fail(err)
	}
	src, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		return fail(fmt.Errorf("fetch %s: %v %s", u, err, resp.Status))
	}
	var arc []byte
	if chunk < 0 {
		// an archive of an earlier encoder (1-stream Huffman blocks the
		// encoder no longer writes in blocks the device takes)
		arc = src
		if src, err = codec.DecompressBytes(context.Background(), arc, codec.DecodeOptions{}); err != nil {
			return fail(err)
		}
	} else {
		l, err := checkpoint.Open(bytes.NewReader(src), int64(len(src)))
		if err != nil {
			return fail(err)
		}
		if arc, err = codec.CompressBytes(context.Background(), src, l.Segments, codec.EncodeOptions{ChunkValues: chunk}); err != nil {
			return fail(err)
		}
	}
	rd, err := codec.NewReader(bytes.NewReader(arc), int64(len(arc)))
	if err != nil {
		return fail(err)
	}
	out, r, err := gpu.DecodeFile(context.Background(), rd, bytes.NewReader(arc), 0, b, gpu.Options{Hist: true, Repeat: 2})
	if err != nil {
		return fail(err)
	}
	twin, tr, err := gpu.DecodeFile(context.Background(), rd, bytes.NewReader(arc), 0, gpu.CPU(0), gpu.Options{Hist: true})
	if err != nil {
		return fail(err)
	}
	fr.Bytes, fr.DevBytes = r.Bytes, r.DevBytes
	fr.Exact = r.Exact && bytes.Equal(out, src)
	fr.TwinEqual = bytes.Equal(out, twin)
	fr.HistEqual = r.ExpHist == tr.ExpHist
	fr.KernelGBs, fr.TotalGBs = r.KernelGBps(), r.TotalGBps()
	fr.CPU = r.UnhandledSummary()
	if c, err := rd.Census(); err == nil {
		fr.Sparse = c.Sparse
	}
	if p, err := gpu.NewPlan(rd, bytes.NewReader(arc), 0); err == nil {
		for _, bj := range p.Blocks {
			if bj.Sparse != 0 {
				fr.SparseDev++
			}
		}
	}
	// damage one float block's payload: the device decode must fail
	for _, bl := range rd.Files()[0].Blocks() {
		if bl.Kind == codec.KindFloat && bl.Compressed > 64 {
			bad := append([]byte(nil), arc...)
			for i := bl.Payload + bl.Compressed/3; i < bl.Payload+bl.Compressed/3+8; i++ {
				bad[i] ^= 0x5a
			}
			rb, err := codec.NewReader(bytes.NewReader(bad), int64(len(bad)))
			if err == nil {
				_, _, err = gpu.DecodeFile(context.Background(), rb, bytes.NewReader(bad), 0, b, gpu.Options{})
			}
			fr.DamageSeen = err != nil
			break
		}
	}
	return fr
}
