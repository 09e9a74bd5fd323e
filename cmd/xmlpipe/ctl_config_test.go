package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCtlConfigOfABrokenFile: an organism file an edit broke — the running
// organism refused its reload and runs on — still tells ctl where the OOB
// channel and the owner key are, from its organism: and oob: sections, so
// get-status and shutdown keep working; ctl warns that the file does not
// load. A file whose organism: or oob: section itself is broken is refused
// as before.
func TestCtlConfigOfABrokenFile(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		port       int    // 0: refused
		warn       string // in the warning ("": none)
	}{
		{"loads", "organism: {name: x, data_dir: d}\noob: {port: 18766}\n", 18766, ""},
		{"a gateway broken", "organism: {name: x, data_dir: d}\noob: {port: 18767}\ngateways:\n  - {name: b, trusted_identity: b.pub, queue_bytes: -5}\n",
			18767, "gateways[0].queue_bytes: must not be negative"},
		{"a listener unknown key", "organism: {name: x, data_dir: d}\noob: {port: 18768}\nlisteners:\n  - {name: l, payload_clas: x}\n",
			18768, "payload_clas"},
		{"oob broken", "organism: {name: x, data_dir: d}\noob: {port: -1}\n", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "organism.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, warn, err := ctlConfig(configSource{path: path})
			if tc.port == 0 {
				if err == nil {
					t.Fatalf("a broken oob: section loaded: %+v", cfg.OOB)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.OOB.Port != tc.port || cfg.Organism.DataDir != filepath.Join(dir, "d") {
				t.Errorf("oob port %d, data dir %q; want %d, %q", cfg.OOB.Port, cfg.Organism.DataDir, tc.port, filepath.Join(dir, "d"))
			}
			if tc.warn == "" && warn != "" || !strings.Contains(warn, tc.warn) {
				t.Errorf("warning %q, want one saying %q", warn, tc.warn)
			}
		})
	}
}
