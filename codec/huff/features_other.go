//go:build !amd64 || noasm || !gc

package huff

func cpuFeatures() Features { return Features{} }
