//go:build !js

package gpu

func openWebGPU() (Backend, error) {
	return nil, &Unavailable{Backend: "webgpu", Reason: "WebGPU runs in the browser build (GOOS=js) only"}
}
