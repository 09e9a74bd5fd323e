package diskquota

import (
	"io/fs"
	"math"
)

// BlockBytes is the unit a file's content counts in: what a non-empty
// file takes on disk at the least on common file systems (ext4, XFS,
// btrfs, tmpfs allocate 4 KiB blocks), so that a one-byte file counts what
// it takes, not one byte.
const BlockBytes = 4096

// RoundUp is n bytes of content as they count: rounded up to a whole
// number of blocks (BlockBytes); one within a block of the largest int64
// counts that (it cannot be rounded, and must not wrap to a negative).
func RoundUp(n int64) int64 {
	switch {
	case n <= 0:
		return 0
	case n > math.MaxInt64-(BlockBytes-1):
		return math.MaxInt64
	}
	return (n + BlockBytes - 1) / BlockBytes * BlockBytes
}

// Content is what the content of the regular file or symbolic link fi
// describes counts: its size rounded up to whole blocks, or the blocks the
// file system reports it takes (st_blocks) when they are more. A sparse
// file so counts its whole apparent size (a guest cannot fill its holes
// past the cap), and a file taking more than its size (preallocated, a file
// system with larger blocks) what it takes.
func Content(fi fs.FileInfo) int64 {
	return max(RoundUp(fi.Size()), allocated(fi))
}

// DirBytes is what the directory fi describes counts, its name included: a
// block (EntryBytes), or what the file system reports it takes when that is
// more — a directory grows with the names made in it, and keeps that room
// when they go. A counted directory itself counts what this gives past one
// block. A writer making or removing a name in a directory records what
// the directory's DirBytes changed by.
func DirBytes(fi fs.FileInfo) int64 {
	return max(EntryBytes, allocated(fi))
}
