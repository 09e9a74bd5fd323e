package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/console"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// TestRemoteConsoleToldWhy: a handler's *xmlpipe.InputError — what it
// wrote for the sender: a field left empty, a peer organism that could not
// be reached — follows the canned <huh> text on the line a console with
// --connect prints, without --verbose, as the in-process console prints
// it: the huh frame carries it ("told").
func TestRemoteConsoleToldWhy(t *testing.T) {
	b := startBus(t)
	r := b.dial(t, "tess", b.user(t, "tess", auth.Operator))
	const line = "@shouter <GreetingResponse><Message>hey</Message><OriginalSender></OriginalSender></GreetingResponse>\n"
	huhLine := func(backend organism.Backend) string {
		t.Helper()
		con, err := console.New(backend, console.Config{})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), remoteWait)
		defer cancel()
		if err := con.Run(ctx, strings.NewReader(line+"/quit\n"), &out); err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
		for l := range strings.SplitSeq(out.String(), "\n") {
			if strings.HasPrefix(l, "[huh] ") {
				return l
			}
		}
		t.Fatalf("no [huh] line:\n%s", out.String())
		return ""
	}
	local, remote := huhLine(b.local), huhLine(r)
	if !strings.Contains(local, "OriginalSender is empty") {
		t.Fatalf("in-process console: %q, want the handler's reason", local)
	}
	if remote != local {
		t.Errorf("console --connect prints %q, the in-process console %q", remote, local)
	}
}
