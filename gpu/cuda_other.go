//go:build !(linux && (amd64 || arm64))

package gpu

import "runtime"

func openCUDA() (Backend, error) {
	return nil, &Unavailable{Backend: "cuda", Reason: "the CUDA backend is built for linux/amd64 and linux/arm64, not " + runtime.GOOS + "/" + runtime.GOARCH}
}
