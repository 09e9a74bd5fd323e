package diskquota

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestCountOfADeepTreeIsLinear: each entry is looked up in its own
// directory, not resolved from the top (os.Root opens one component at a
// time), so counting a chain of directories costs what counting as many
// entries side by side does — not the square of its depth (4 000 levels,
// which a WASM guest could make within 1 MiB of quota, took nearly two
// minutes a count). The two counts are timed against each other, on the
// same machine at the same moment: the chain took hundreds of times the
// flat directory's time, and takes a few times it now.
func TestCountOfADeepTreeIsLinear(t *testing.T) {
	const depth = 1500 // "d/" × 1500 stays below PATH_MAX with the temporary directory
	base := t.TempDir()
	deep, flat := filepath.Join(base, "deep"), filepath.Join(base, "flat")
	p := deep
	for range depth {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		p = filepath.Join(p, "d")
	}
	for i := range depth {
		if err := os.MkdirAll(filepath.Join(flat, "d"+strconv.Itoa(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	count := func(dir string) (int64, time.Duration) {
		start := time.Now()
		n, err := Count(dir)
		if err != nil {
			t.Fatal(err)
		}
		return n, time.Since(start)
	}
	nDeep, tDeep := count(deep)
	_, tFlat := count(flat)
	if nDeep != (depth-1)*EntryBytes {
		t.Errorf("the chain counts %d bytes, want %d", nDeep, (depth-1)*EntryBytes)
	}
	if tDeep > 30*tFlat+time.Second {
		t.Errorf("counting %d nested directories took %s, %d side by side %s: want about the same",
			depth, tDeep, depth, tFlat)
	}
}
