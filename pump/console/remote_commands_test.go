package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/console"
)

// remoteSession runs one piped console session over r and returns its
// transcript.
func remoteSession(t *testing.T, r *console.Remote, input string) string {
	t.Helper()
	con, err := console.New(r, console.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), remoteWait)
	defer cancel()
	if err := con.Run(ctx, strings.NewReader(input), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return out.String()
}

// The Python consoles' /buffer, /config and /targets work over a
// connection too: /buffer shows the journaled payloads, /config what the
// bus's API tells (not the file's path), /targets the listeners.
func TestRemotePythonCommands(t *testing.T) {
	b := startBus(t)
	r := b.dial(t, "rita", b.user(t, "rita", auth.Operator))
	remoteSession(t, r, "@greeter Dan\n")
	ts, err := r.Threads(context.Background())
	if err != nil || len(ts) == 0 {
		t.Fatalf("threads: %v %v", ts, err)
	}
	id := ts[len(ts)-1].ID
	got := remoteSession(t, r, "/buffer "+id+"\n/config\n/targets\n")
	for _, want := range []string{
		"Thread: " + id + "\n",
		"[0] websocket:rita -> greeter: Greeting\n    <Greeting><Name>Dan</Name></Greeting>\n",
		"Organism: hello-world\n",
		"Config file: on the server (its path is not shown over a connection)\n",
		"Main bus: 127.0.0.1:8765\n",
		"Thread scheduling: breadth-first\n",
		"Max concurrent per agent: 5\n",
		"Listeners:\n",
		"  greeter              [agent] ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
