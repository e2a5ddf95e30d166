//go:build !amd64 || noasm || !gc

package crc32c

import "hash/crc32"

const useFold = false

// Update returns the CRC-32C of p appended to the bytes whose CRC-32C is
// crc: crc32.Update(crc, crc32.MakeTable(crc32.Castagnoli), p).
func Update(crc uint32, p []byte) uint32 { return crc32.Update(crc, table, p) }
