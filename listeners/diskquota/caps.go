package diskquota

// Cap is one writer's max_disk_bytes for a directory, declared on its Dir
// (Declare) for as long as the writer may write there. A directory holds
// at most the smallest cap any of its writers declares (Limit): writers of
// one directory with different caps — a files root of 1 GiB that is also a
// WASM guest's 64 MiB dir — are each held to the smallest, so none finds
// the directory holding more than it allows, whichever writer filled it.
type Cap struct {
	d *Dir
	n int64
	// live, when set, gives the cap at each Limit instead of n, and false
	// while the writer may not write there (DeclareLive).
	live func() (n int64, ok bool)
}

// Declare declares a writer's cap of n bytes on d until Release. It takes
// the lock.
func (d *Dir) Declare(n int64) *Cap {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := &Cap{d: d, n: n}
	if d.caps == nil {
		d.caps = map[*Cap]struct{}{}
	}
	d.caps[c] = struct{}{}
	return c
}

// DeclareLive declares a writer's cap on d until Release, as the
// writer's configuration gives it at each Limit: live returns the cap, and
// false while the configuration lets the writer write there no more (its
// agent removed by a reload, say), when the cap does not count. live runs
// with d's lock held and must not take it. It takes the lock.
func (d *Dir) DeclareLive(live func() (n int64, ok bool)) *Cap {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := &Cap{d: d, live: live}
	if d.caps == nil {
		d.caps = map[*Cap]struct{}{}
	}
	d.caps[c] = struct{}{}
	return c
}

// Set changes the cap to n (the writer's configuration changed); the
// caller holds the Dir's lock.
func (c *Cap) Set(n int64) { c.n = n }

// Release ends the declaration: the writer no longer writes there. The
// caller holds the Dir's lock; a second Release does nothing.
func (c *Cap) Release() { delete(c.d.caps, c) }

// Limit is what the directory may hold for a writer whose own cap is own:
// the smallest of own and every cap declared on it. The caller holds the
// lock.
func (d *Dir) Limit(own int64) int64 {
	least := own
	for c := range d.caps {
		n := c.n
		if c.live != nil {
			var ok bool
			if n, ok = c.live(); !ok {
				continue
			}
		}
		least = min(least, n)
	}
	return least
}
