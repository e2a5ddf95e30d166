// Package mount shows the files of a serve.Source (an .nzip archive, a
// directory or a store) as a read-only FUSE file system: nzip mount. Files
// keep their names and sizes (mode 0444, directories 0555); a read decodes
// only the blocks it touches, through the source's block cache, and a
// block whose CRC fails gives EIO. A store's tree follows its index
// (tree.go): models added appear, removed ones leave. It needs Linux and
// FUSE (/dev/fuse, and root or fusermount3); on other systems the package
// is empty. docs/serve.md describes its use.
package mount
