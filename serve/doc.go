// Package serve serves the original bytes of models held in .nzip
// archives and in directories of plain files over HTTP: plain HTTP/1.1
// file serving (ranges, strong ETags, conditional requests) and the
// download half of the Hugging Face Hub API, so that existing clients
// (huggingface_hub, transformers, @huggingface/hub, curl, aria2c) download
// from it unchanged. docs/serve.md describes the routes, the revision rule
// and the safety measures.
//
// Each source is one repository ORG/NAME. A range decodes only the archive
// blocks that cover it; a whole file streams through the codec's parallel
// decoder with its digest checked, and its last bytes are held back until
// the check passes: a damaged archive never yields a complete-looking
// wrong file (the connection is closed instead).
//
// Open reads a source by ranges outside HTTP (nzip mount, package
// serve/mount), with the same CRC checks and the same block cache: decoded
// blocks, bounded in bytes (Config.CacheBytes), each decoded once however
// many readers ask for it.
package serve
