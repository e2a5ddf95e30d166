package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"neuralzip/codec"
	"neuralzip/codec/baseline"
	"neuralzip/gpu"
)

// gpuFields are the bench columns of a decode on a gpu backend.
type gpuFields struct {
	Backend       string  `json:"backend,omitempty"`
	Device        string  `json:"device,omitempty"`
	DeviceBytes   int64   `json:"device_bytes,omitempty"`   // original bytes decoded on the device (all copies)
	DeviceShare   float64 `json:"device_share,omitempty"`   // of the file's bytes
	KernelGBs     float64 `json:"kernel_gb_s,omitempty"`    // device decode rate, kernels only
	TotalGBs      float64 `json:"total_gb_s,omitempty"`     // including copies to and from the device
	ResidentBytes int64   `json:"resident_bytes,omitempty"` // device memory of the compressed form
	Copies        int     `json:"copies,omitempty"`         // copies of the file's device work decoded at once
	Streams       int     `json:"streams,omitempty"`        // Huffman streams decoded in parallel (one thread each)
	MaxStreamSyms int     `json:"max_stream_symbols,omitempty"`
}

// benchBackend compresses src with nzip and decodes the archive on the
// named backend (gpu.Bench), repeating the device work to minBytes.
func benchBackend(ctx context.Context, name, file string, src []byte, segs []codec.Segment, threads, runs, chunk int, minBytes int64) benchRow {
	row := benchRow{Measurement: baseline.Measurement{File: file, Codec: "nzip@" + name, OriginalBytes: int64(len(src)), Threads: threads, Runs: runs}}
	fail := func(err error) benchRow {
		row.Error = err.Error()
		return row
	}
	b, err := gpu.Open(name, threads)
	if err != nil {
		return fail(err)
	}
	defer b.Close()
	var buf bytes.Buffer
	// the archive the nzip row measures (same chunk size)
	if _, err := codec.Encode(ctx, &buf, []codec.Input{{Name: file, R: bytes.NewReader(src), Size: int64(len(src)), Segments: segs}}, codec.EncodeOptions{Threads: threads, ChunkValues: chunk}); err != nil {
		return fail(err)
	}
	ra := bytes.NewReader(buf.Bytes())
	rd, err := codec.NewReader(ra, int64(buf.Len()))
	if err != nil {
		return fail(err)
	}
	res, err := gpu.Bench(ctx, rd, ra, 0, b, minBytes, runs)
	if err != nil {
		return fail(err)
	}
	row.Compressed = int64(buf.Len())
	row.Ratio = float64(len(src)) / float64(buf.Len())
	row.DecompressMBs = res.KernelGBps() * 1000
	row.RoundtripOK = res.Exact
	share := 0.0
	if res.Copies > 0 && len(src) > 0 {
		share = float64(res.DevBytes) / float64(int64(res.Copies)*int64(len(src)))
	}
	row.gpuFields = &gpuFields{Backend: name, Device: res.Device, DeviceBytes: res.DevBytes, DeviceShare: share,
		KernelGBs: res.KernelGBps(), TotalGBs: res.TotalGBps(), ResidentBytes: res.Resident, Copies: res.Copies,
		Streams: res.Streams, MaxStreamSyms: res.MaxStreamSymbols}
	return row
}

// decompressBackend writes file fi of the archive at path, decoded on the
// backend in batches (bounded memory), to w, and reports the device's
// share and rate.
func decompressBackend(ctx context.Context, b gpu.Backend, rd *codec.Reader, path string, fi, threads int, w io.Writer) (gpu.Result, error) {
	f, _, err := openRegular(path, os.O_RDONLY)
	if err != nil {
		return gpu.Result{}, err
	}
	defer f.Close()
	// streamed in batches of blocks; writeOutput removes the temporary
	// file when this fails
	return gpu.DecodeTo(ctx, w, rd, f, fi, b, gpu.Options{Threads: threads})
}

// reportBackend prints what the device did for each decoded file.
func reportBackend(w io.Writer, rs []gpu.Result) {
	for _, r := range rs {
		fmt.Fprintf(w, "  %s on %s: %s of %s decoded on the device at %.2f GB/s (kernels; %.2f GB/s with copies)\n",
			r.File, r.Device, humanBytes(r.DevBytes), humanBytes(r.Bytes), r.KernelGBps(), r.TotalGBps())
	}
}
