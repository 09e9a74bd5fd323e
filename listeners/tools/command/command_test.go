package command

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

func call(t *testing.T, c tools.Config, p RunCommand) *RunCommandResult {
	t.Helper()
	resp, err := (&Tool{Policy: tools.Fixed(c)}).Handle(context.Background(), &p, xmlpipe.Metadata{From: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*xmlpipe.RespondResponse).Payload.(*RunCommandResult)
}

func TestRunCommand(t *testing.T) {
	t.Setenv("XMLPIPE_VISIBLE", "yes")
	t.Setenv("XMLPIPE_HIDDEN", "no")
	c := tools.Config{AllowedCommands: []string{"echo", "false", "sleep", "seq", "env", "cat"}, Env: []string{"XMLPIPE_VISIBLE"},
		Timeout: 300 * time.Millisecond, MaxBytes: 100}

	r := call(t, c, RunCommand{Command: "echo", Args: []string{"hello", "$(id)", "; rm -rf /", "*"}})
	if r.Error != "" || r.ExitCode != 0 || r.Stdout != "hello $(id) ; rm -rf / *\n" {
		t.Fatalf("echo: %+v", r)
	}
	if r := call(t, c, RunCommand{Command: "cat", Stdin: "piped"}); r.Stdout != "piped" {
		t.Fatalf("stdin: %+v", r)
	}
	if r := call(t, c, RunCommand{Command: "false"}); r.Error != "" || r.ExitCode != 1 {
		t.Fatalf("false: %+v", r)
	}
	if r := call(t, c, RunCommand{Command: "env"}); r.Error != "" || r.Stdout != "XMLPIPE_VISIBLE=yes\n" {
		t.Fatalf("env allow-list: %+v", r)
	}
	if r := call(t, c, RunCommand{Command: "seq", Args: []string{"100000"}}); !r.Truncated || len(r.Stdout) != 100 {
		t.Fatalf("cap: truncated=%v len=%d", r.Truncated, len(r.Stdout))
	}
	start := time.Now()
	if r := call(t, c, RunCommand{Command: "sleep", Args: []string{"30"}}); !r.TimedOut || !strings.Contains(r.Error, "timed out") {
		t.Fatalf("timeout: %+v", r)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timeout took %s", d)
	}

	refusals := []struct {
		name string
		c    tools.Config
		cmd  string
		want string
	}{
		{"empty allow-list", tools.Config{}, "echo", "not in the allow-list"},
		{"not listed", c, "rm", "not in the allow-list"},
		{"shell", c, "sh", "not in the allow-list"},
		{"command line", c, "echo hi; rm -rf /", "not in the allow-list"},
		{"path to a listed name", c, "/bin/rm", "not in the allow-list"},
		{"relative path", tools.Config{AllowedCommands: []string{"./echo"}}, "./echo", "not in the allow-list"},
		{"empty", c, " ", "empty command"},
		{"missing program", tools.Config{AllowedCommands: []string{"xmlpipe-no-such-program"}}, "xmlpipe-no-such-program", "not found"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			if r := call(t, tc.c, RunCommand{Command: tc.cmd}); !strings.Contains(r.Error, tc.want) || r.ExitCode != -1 {
				t.Fatalf("%+v, want error %q", r, tc.want)
			}
		})
	}
}
