package wasm

import (
	"fmt"
	"os"
	"sync"

	"github.com/tetratelabs/wazero/sys"
)

// quotas are the disk quotas of the writable directories open now, one per
// directory by its device and inode (not its path: two paths, through a
// symbolic link say, may name one directory), shared by every module
// writing there. The first module to open a directory counts it; the last
// to close it forgets the count.
var quotas = struct {
	mu    sync.Mutex
	byDir map[fileID]*diskQuota
}{byDir: map[fileID]*diskQuota{}}

// acquireQuota returns the disk quota of the directory root (opened from
// dir), counting it when no module writes there yet, for a module whose
// quota is max; releaseQuota(q, max) undoes it.
func acquireQuota(root *os.Root, dir string, max int64) (*diskQuota, error) {
	fi, err := root.Stat(".")
	if err != nil {
		return nil, fmt.Errorf("identifying it for the disk quota: %w", err)
	}
	st := sys.NewStat_t(fi)
	id := fileID{Dev: st.Dev, Ino: st.Ino}
	quotas.mu.Lock()
	defer quotas.mu.Unlock()
	q := quotas.byDir[id]
	if q == nil {
		if q, err = newDiskQuota(root, dir, max); err != nil {
			return nil, err
		}
		q.id = id
		quotas.byDir[id] = q
		return q, nil
	}
	q.lock()
	defer q.unlock()
	q.maxes[max]++
	q.cap.Set(q.own())
	return q, nil
}

// releaseQuota undoes acquireQuota(…, max): the directory's count is
// forgotten when no module writes there any more.
func releaseQuota(q *diskQuota, max int64) {
	quotas.mu.Lock()
	defer quotas.mu.Unlock()
	q.lock()
	defer q.unlock()
	if q.maxes[max]--; q.maxes[max] <= 0 {
		delete(q.maxes, max)
	}
	if len(q.maxes) > 0 {
		q.cap.Set(q.own())
		return
	}
	if quotas.byDir[q.id] == q {
		delete(quotas.byDir, q.id)
	}
	q.cap.Release()
}
