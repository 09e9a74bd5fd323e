package diskquota

import "testing"

// TestCaps: a Dir's limit is the smallest of the caller's own cap and every
// cap declared on it; a cap set anew counts at its new value, and one
// released (twice, harmlessly) no more.
func TestCaps(t *testing.T) {
	d := openDir(t, t.TempDir())
	limit := func(own int64) int64 {
		d.Lock()
		defer d.Unlock()
		return d.Limit(own)
	}
	if got := limit(100); got != 100 {
		t.Fatalf("no cap declared: Limit(100) = %d", got)
	}
	a, b := d.Declare(50), d.Declare(80)
	for _, tc := range []struct {
		own, want int64
	}{{100, 50}, {40, 40}} {
		if got := limit(tc.own); got != tc.want {
			t.Errorf("caps 50, 80: Limit(%d) = %d; want %d", tc.own, got, tc.want)
		}
	}
	d.Lock()
	a.Set(90)
	d.Unlock()
	if got := limit(100); got != 80 {
		t.Errorf("caps 90, 80: Limit(100) = %d; want 80", got)
	}
	d.Lock()
	b.Release()
	b.Release()
	d.Unlock()
	if got := limit(100); got != 90 {
		t.Errorf("cap 90 left: Limit(100) = %d; want 90", got)
	}
	d.Lock()
	a.Release()
	d.Unlock()
	if got := limit(100); got != 100 {
		t.Errorf("none left: Limit(100) = %d; want 100", got)
	}
}

// TestLiveCaps: a cap declared live counts at what its function gives at
// each Limit, and not at all while the function says the writer may not
// write there; Release ends it.
func TestLiveCaps(t *testing.T) {
	d := openDir(t, t.TempDir())
	limit := func(own int64) int64 {
		d.Lock()
		defer d.Unlock()
		return d.Limit(own)
	}
	n, ok := int64(50), true
	c := d.DeclareLive(func() (int64, bool) { return n, ok })
	d.Declare(80)
	for _, tc := range []struct {
		n    int64
		ok   bool
		want int64
	}{{50, true, 50}, {90, true, 80}, {10, false, 80}} {
		n, ok = tc.n, tc.ok
		if got := limit(100); got != tc.want {
			t.Errorf("live cap %d (%v), cap 80: Limit(100) = %d; want %d", tc.n, tc.ok, got, tc.want)
		}
	}
	n, ok = 10, true
	d.Lock()
	c.Release()
	d.Unlock()
	if got := limit(100); got != 80 {
		t.Errorf("live cap released: Limit(100) = %d; want 80", got)
	}
}
