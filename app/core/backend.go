package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"neuralzip/codec"
	"neuralzip/gpu"
)

// BackendCPU is the codec's own decoder on the CPU. The other backends are
// package gpu's ("cpu": the Go twin of the GPU kernels, "cuda", "webgpu"):
// they decode nzip archives on a device.
const BackendCPU = "CPU"

// Backends lists the backends a run can use: BackendCPU, then gpu.Names.
func Backends() []string { return append([]string{BackendCPU}, gpu.Names()...) }

// OnDevice reports whether backend is one of package gpu's.
func OnDevice(backend string) bool { return backend != "" && backend != BackendCPU }

// BackendInfo is a backend and whether it can run here.
type BackendInfo struct {
	Name   string // RunSpec.Backend
	Device string // what it runs on, when available
	Reason string // why it cannot run here; "" when available
}

// Available reports whether the backend can run here.
func (b BackendInfo) Available() bool { return b.Reason == "" }

// CodecBackend is BackendCPU's entry: always available.
func CodecBackend() BackendInfo {
	return BackendInfo{Name: BackendCPU, Device: runtime.GOARCH + " CPU (the codec's own decoder)"}
}

// ProbeBackends opens every backend once (in Backends' order) to learn its
// device or why it cannot run. Opening a GPU backend may take a while (a
// driver, a device context): call it off the UI's goroutine.
func ProbeBackends() []BackendInfo {
	out := []BackendInfo{CodecBackend()}
	for _, n := range gpu.Names() {
		info := BackendInfo{Name: n}
		b, err := gpu.Open(n, 0)
		if err != nil {
			info.Reason = err.Error()
			var u *gpu.Unavailable
			if errors.As(err, &u) {
				info.Reason = u.Reason
			}
		} else {
			info.Device = b.Device()
			b.Close()
		}
		out = append(out, info)
	}
	return out
}

// Check reports a codec and backend that do not go together.
func (s RunSpec) Check() error {
	if OnDevice(s.Backend) && s.Codec != CodecNZip && s.Codec != CodecNZipSetup {
		return fmt.Errorf("%s on backend %s: %w (choose backend %s for the baselines)", s.Codec, s.Backend, ErrNotOnDevice, BackendCPU)
	}
	return nil
}

// deviceRun is what decoding an archive on a device cost.
type deviceRun struct {
	devBytes, resident int64
	kernel, total      time.Duration
	host               map[string]int64 // bytes left to the CPU, by reason
}

// decodeOnDevice decompresses an nzip archive through b: each file of the
// archive with gpu.DecodeFile, joined in archive order (CompressBytes
// writes one file, so this is what codec.DecompressBytes returns). The
// device's blocks are checked by CRC-32C and every file by its SHA-256.
func decodeOnDevice(ctx context.Context, comp []byte, setup *codec.Setup, b gpu.Backend, threads int) ([]byte, deviceRun, error) {
	dr := deviceRun{host: map[string]int64{}}
	ra := bytes.NewReader(comp)
	rd, err := codec.NewReader(ra, int64(len(comp)))
	if err != nil {
		return nil, dr, err
	}
	defer rd.Close()
	if setup != nil {
		if err := rd.UseSetup(setup); err != nil {
			return nil, dr, err
		}
	}
	var out []byte
	for fi := range rd.Files() {
		dec, res, err := gpu.DecodeFile(ctx, rd, ra, fi, b, gpu.Options{Threads: threads})
		if err != nil {
			return nil, dr, err
		}
		if out == nil {
			out = dec
		} else {
			out = append(out, dec...)
		}
		dr.devBytes += res.DevBytes
		dr.resident += res.Resident
		dr.kernel += res.Kernel
		dr.total += res.Total
		for k, v := range res.Unhandled {
			dr.host[k] += v
		}
	}
	return out, dr, nil
}

// fill records the device's share of a run in r.
func (dr deviceRun) fill(r *RunResult) {
	r.DeviceBytes = dr.devBytes
	r.ResidentBytes = dr.resident
	r.DeviceSaved = dr.devBytes - dr.resident
	if dr.kernel > 0 {
		r.DeviceGBs = float64(dr.devBytes) / dr.kernel.Seconds() / 1e9
	}
	if dr.total > 0 {
		r.DeviceTotalGBs = float64(dr.devBytes) / dr.total.Seconds() / 1e9
	}
	for _, e := range gpu.SortUnhandled(dr.host) {
		r.HostBlocks = append(r.HostBlocks, e.Reason+" "+HumanBytes(e.Bytes))
	}
}

// DeviceShare is the fraction of the original bytes the device decoded (0
// for BackendCPU runs).
func (r RunResult) DeviceShare() float64 {
	if r.OriginalBytes <= 0 {
		return 0
	}
	return float64(r.DeviceBytes) / float64(r.OriginalBytes)
}
