package diskquota

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCountBlocks: a file counts what it takes on disk — its size in whole
// blocks (a one-byte file a block, a sparse one its whole apparent size),
// or the blocks the file system gives it when more (preallocated) — and
// its name a block more. Before, a one-byte file counted 257 bytes.
func TestCountBlocks(t *testing.T) {
	tests := []struct {
		name string
		make func(f *os.File) error
		want int64 // besides the name
	}{
		{"empty", func(*os.File) error { return nil }, 0},
		{"one byte", func(f *os.File) error { _, err := f.Write([]byte("x")); return err }, BlockBytes},
		{"a block and a byte", func(f *os.File) error { _, err := f.Write(make([]byte, BlockBytes+1)); return err }, 2 * BlockBytes},
		{"sparse", func(f *os.File) error { return f.Truncate(1<<20 + 1) }, 1<<20 + BlockBytes},
		{"a byte far in", func(f *os.File) error { _, err := f.WriteAt([]byte("x"), 1<<20); return err }, 1<<20 + BlockBytes},
		{"preallocated", func(f *os.File) error {
			if _, err := f.Write([]byte("x")); err != nil {
				return err
			}
			if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, 1<<20); err != nil {
				t.Skipf("no fallocate here: %v", err)
			}
			return nil
		}, 1 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f, err := os.Create(filepath.Join(dir, "f"))
			if err != nil {
				t.Fatal(err)
			}
			err = tc.make(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, err := Count(dir); err != nil || got != EntryBytes+tc.want {
				t.Errorf("Count = %d, %v; want %d", got, err, EntryBytes+tc.want)
			}
		})
	}
}

// TestRoundUp: sizes round up to whole blocks, and one too large to round
// (a guest's write or truncate far past any disk) counts as much as can
// be: it wrapped to a negative count, which every cap let through.
func TestRoundUp(t *testing.T) {
	for _, tc := range []struct{ n, want int64 }{
		{-1, 0}, {0, 0}, {1, BlockBytes}, {BlockBytes, BlockBytes}, {BlockBytes + 1, 2 * BlockBytes},
		{math.MaxInt64 - BlockBytes, math.MaxInt64 - BlockBytes + 1}, {math.MaxInt64 - 1, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64},
	} {
		if got := RoundUp(tc.n); got != tc.want {
			t.Errorf("RoundUp(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}
