package files

import (
	"os"
	"sync/atomic"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/diskquota"
	"github.com/xml-pipeline/xmlpipe/listeners/tools"
)

// TestDiskQuotaCapFollowsTheConfiguration: the cap an agent's files
// config declared on a directory holds the directory's other writers (a
// WASM guest's dir) only while the organism's configuration still gives
// that agent the directory: a reload that removes the agent (or its
// files config) ends the cap at once — not at shutdown — and one that
// changes its max_disk_bytes changes the cap, with no call to the files
// listener in between.
func TestDiskQuotaCapFollowsTheConfiguration(t *testing.T) {
	root := t.TempDir()
	var cur atomic.Pointer[tools.Config] // agent's config (nil: the agent is gone)
	set := func(c *tools.Config) { cur.Store(c) }
	set(&tools.Config{AllowedPaths: []string{root}, MaxDiskBytes: 4 * block})
	tool := &Tool{Policy: tools.PolicyFunc(func(caller, _ string) tools.Config {
		if c := cur.Load(); c != nil && caller == "agent" {
			return *c
		}
		return tools.Config{}
	})}
	t.Cleanup(func() { _ = tool.Close() })
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d, err := diskquota.DirOf(r)
	if err != nil {
		t.Fatal(err)
	}
	limit := func() int64 { // what the directory allows a writer capped at 1 TiB (a guest)
		d.Lock()
		defer d.Unlock()
		return d.Limit(1 << 40)
	}
	if res := callTool(t, tool, Files{Op: "write", Path: "a", Content: "x"}); res.Error != "" {
		t.Fatal(res.Error)
	}
	for _, step := range []struct {
		name string
		cfg  *tools.Config
		want int64
	}{
		{"declared", &tools.Config{AllowedPaths: []string{root}, MaxDiskBytes: 4 * block}, 4 * block},
		{"raised", &tools.Config{AllowedPaths: []string{root}, MaxDiskBytes: 8 * block}, 8 * block},
		{"read-only", &tools.Config{AllowedPaths: []string{root}, MaxDiskBytes: 4 * block, ReadOnly: true}, 1 << 40},
		{"another root", &tools.Config{AllowedPaths: []string{t.TempDir()}, MaxDiskBytes: 4 * block}, 1 << 40},
		{"agent removed", nil, 1 << 40},
		{"back", &tools.Config{AllowedPaths: []string{root}}, DefaultMaxDiskBytes},
	} {
		set(step.cfg)
		if got := limit(); got != step.want {
			t.Errorf("%s: the directory's cap is %d; want %d", step.name, got, step.want)
		}
	}
}
