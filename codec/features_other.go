//go:build !amd64 || noasm || !gc

package codec

func cpuFeatures() features { return features{} }
