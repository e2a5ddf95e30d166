package codec

import "context"

// ArchiveDecoder decodes whole archives of one file held in memory, one
// after another, with as little setup per archive as decoding a block
// inside a larger archive costs: the store's units are such archives, a
// tensor each, thousands per model. It reads the index in place and into
// a buffer it keeps, and decodes the blocks in the calling goroutine
// with a block decoder (and its tables' memory) it keeps from call to
// call. The zero value is ready; it is not safe for concurrent use.
type ArchiveDecoder struct {
	// SkipCRC leaves the blocks' CRC-32Cs unchecked where Decode
	// decodes the blocks itself (not where it hands an archive on to
	// DecompressBytesTo or ReadFileTo), for a caller that
	// checks every decoded byte itself (the store: a unit's BLAKE3
	// address, and its stored bytes' CRC before they are decoded).
	// Damaged blocks may then decode to other bytes instead of an
	// error; the decoders still stay within their buffers.
	SkipCRC bool

	index []byte        // the last index's decoded bytes (reused)
	bd    *blockDecoder // kept across archives
	comp  []byte        // never used in memory; decodeBlock's argument
}

// Decode is DecompressBytesTo(ctx, dst, archive, opt) with opt.Threads
// 1 (the same bytes, the same errors; with SkipCRC, the same bytes
// where that decodes), decoding the blocks one after
// another in this goroutine whatever opt.Threads (which only has to be
// valid). Archives it cannot take
// this way (the digest to check: opt.SkipHash false; opt.Progress set;
// a file larger than the archive makes plausible) go through
// DecompressBytesTo itself.
func (d *ArchiveDecoder) Decode(dst, archive []byte, opt DecodeOptions) ([]byte, error) {
	if !opt.SkipHash || opt.Progress != nil || opt.Threads < 0 {
		return DecompressBytesTo(context.Background(), dst, archive, opt)
	}
	rd, index, err := openArchive(memArchive(archive), int64(len(archive)), 0, d.index)
	d.index = index
	if err != nil {
		return nil, err
	}
	if err := rd.prepareOne(opt); err != nil {
		return nil, err
	}
	if err := rd.needSetup(); err != nil {
		return nil, err
	}
	if err := rd.needRef(); err != nil {
		return nil, err
	}
	f := rd.idx.files[0]
	if f.Size > rd.plausibleOutput() {
		return rd.ReadFileTo(context.Background(), dst, 0, opt)
	}
	var out []byte
	if int64(cap(dst)) >= f.Size {
		out = dst[:f.Size]
	} else {
		out = makeNoZero(int(f.Size))
	}
	if d.bd == nil {
		d.bd = &blockDecoder{}
	}
	bd := d.bd
	rd.initBlockDecoder(bd)
	rd.skipCRC = d.SkipCRC
	defer func() { bd.setup = nil }() // not kept past the call
	for b, k := range f.blocks {
		if err := rd.decodeBlock(bd, 0, b, out[k.origOff:k.origOff+k.origLen], &d.comp); err != nil {
			return nil, err
		}
	}
	return out, nil
}
