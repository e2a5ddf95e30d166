//go:build !amd64 || noasm || !gc

package codec

import "hash/crc32"

func crc32cUpdate(crc uint32, p []byte) uint32 { return crc32.Update(crc, castagnoli, p) }
