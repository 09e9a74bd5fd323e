package config

import (
	"strings"
	"testing"
	"time"
)

func TestToolConfigChecks(t *testing.T) {
	base := `organism: {name: t}
listeners:
  - name: a
    payload_class: p
    handler: h
    description: d
    tools: [web_search, fetch, librarian]
    tool_config:
`
	tests := []struct{ yaml, want string }{
		{"      fetch: {max_bytes: -1}", "max_bytes: must not be negative"},
		// A max_bytes no answer can carry is refused at load, with its line.
		{"      fetch: {max_bytes: 2097152}", "t.yaml:9: listeners[0].tool_config.fetch.max_bytes: 2097152 is over " +
			"the 1048576-byte message cap: nothing larger reaches the tool or comes back from it (want at most 1048576; " +
			"0 or unset: the tool's default)"},
		{"      librarian: {max_bytes: 1048577}", "librarian.max_bytes: 1048577 is over the 1048576-byte message cap"},
		{"      fetch: {timeout: -1s}", "timeout: must not be negative"},
		{"      web_search: {provider: altavista, api_key_env: K}", `unknown provider "altavista"`},
		{"      web_search: {provider: bing}", "needs api_key_env"},
		{"      librarian: {url: ftp://x}", "want an http:// or https:// URL"},
		{"      calculate: {max_exponent: 3}", `tool "calculate" is not listed in tools`},
	}
	for _, tc := range tests {
		_, err := Parse("t.yaml", []byte(base+tc.yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.yaml, err, tc.want)
		}
	}
	ok := base + "      web_search: {provider: google, api_key_env: K, engine_id: e}\n      fetch: {allowed_domains: [example.org], max_redirects: 2, timeout: 5s}\n"
	if _, err := Parse("t.yaml", []byte(ok)); err != nil {
		t.Fatal(err)
	}
	// Within the cap, and within a smaller organism.max_message_bytes.
	if _, err := Parse("t.yaml", []byte(base+"      fetch: {max_bytes: 1048576}\n")); err != nil {
		t.Fatal(err)
	}
	small := strings.Replace(base, "organism: {name: t}", "organism: {name: t, max_message_bytes: 65536}", 1)
	if _, err := Parse("t.yaml", []byte(small+"      fetch: {max_bytes: 65537}\n")); err == nil ||
		!strings.Contains(err.Error(), "65537 is over the 65536-byte message cap") {
		t.Errorf("max_bytes over max_message_bytes: err = %v", err)
	}
	// A tool listener configures itself under its own name.
	self := `organism: {name: t}
listeners:
  - name: files
    payload_class: tools.Files
    handler: tools.Files
    description: files for everyone
    tool_config:
      files: {allowed_paths: [data], read_only: true}
`
	o, err := Parse("/etc/xmlpipe/organism.yaml", []byte(self))
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Listeners[0].ToolConfig["files"].AllowedPaths[0]; got != "/etc/xmlpipe/data" {
		t.Fatalf("allowed_paths not resolved beside the config: %q", got)
	}
}

func TestAllowedCommands(t *testing.T) {
	base := `organism: {name: t}
listeners:
  - name: a
    payload_class: p
    handler: h
    description: d
    tools: [run_command]
    tool_config:
      run_command:
`
	o, err := Parse("t.yaml", []byte(base+`        allowed_commands: [date, {command: wc, args: ["-l", "-w", "{file}"]}, {command: /bin/ls}]
        run_as: "65534:65534"
`))
	if err != nil {
		t.Fatal(err)
	}
	tc := o.Listeners[0].ToolConfig["run_command"]
	want := []AllowedCommand{{Command: "date"}, {Command: "wc", Args: []string{"-l", "-w", "{file}"}}, {Command: "/bin/ls"}}
	if len(tc.AllowedCommands) != len(want) || tc.RunAs != "65534:65534" {
		t.Fatalf("got %+v", tc)
	}
	for i := range want {
		if got := tc.AllowedCommands[i]; got.Command != want[i].Command || strings.Join(got.Args, " ") != strings.Join(want[i].Args, " ") {
			t.Errorf("entry %d: %+v, want %+v", i, got, want[i])
		}
	}
	for _, tc := range []struct{ yaml, want string }{
		{`        allowed_commands: [{command: wc, args: [-l, {file}]}]`, `quote placeholders: "{file}"`},
		{`        allowed_commands: [{command: wc, flags: [-l]}]`, `unknown key "flags"`},
		{`        allowed_commands: [{args: [-l]}]`, "needs command"},
		{`        allowed_commands: [[wc, -l]]`, "want a program name or {command: NAME, args: [...]}"},
		{`        allowed_commands: [{command: wc, args: -l}]`, "args: want a list"},
		{`        allowed_commands: [{command: [wc]}]`, "command: want a program name"},
		{`        allowed_commands: [{command: wc, command: ls}]`, "duplicate key"},
	} {
		_, err := Parse("t.yaml", []byte(base+tc.yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "t.yaml:") {
			t.Errorf("%s: err = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// TestToolQuotaConfig: the files tool's max_disk_bytes and key_value's
// max_keys, max_total_bytes and conversation_ttl are read, and a negative one is refused
// with its file:line.
func TestToolQuotaConfig(t *testing.T) {
	base := `organism: {name: t}
listeners:
  - name: a
    payload_class: p
    handler: h
    description: d
    tools: [files, key_value]
    tool_config:
`
	for _, tc := range []struct{ yaml, want string }{
		{"      files: {max_disk_bytes: -1}", "t.yaml:9: listeners[0].tool_config.files.max_disk_bytes: must not be negative, got -1"},
		{"      key_value: {max_keys: -1}", "t.yaml:9: listeners[0].tool_config.key_value.max_keys: must not be negative, got -1"},
		{"      key_value: {max_total_bytes: -5}", "t.yaml:9: listeners[0].tool_config.key_value.max_total_bytes: must not be negative, got -5"},
		{"      key_value: {conversation_ttl: -1h}", "t.yaml:9: listeners[0].tool_config.key_value.conversation_ttl: must not be negative, got -1h0m0s"},
	} {
		_, err := Parse("t.yaml", []byte(base+tc.yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.yaml, err, tc.want)
		}
	}
	o, err := Parse("t.yaml", []byte(base+"      files: {max_disk_bytes: 1048576}\n      key_value: {max_keys: 10, max_total_bytes: 4096, conversation_ttl: 168h}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tc := o.Listeners[0].ToolConfig
	if f, kv := tc["files"], tc["key_value"]; f.MaxDiskBytes != 1<<20 || kv.MaxKeys != 10 || kv.MaxTotalBytes != 4096 ||
		kv.ConversationTTL.D() != 168*time.Hour {
		t.Errorf("read %+v and %+v", f, kv)
	}
}
