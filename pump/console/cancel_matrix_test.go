package console_test

import (
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/pump/console"
)

// TestConsoleOperatorActionThenNextLine: in a piped session whose first
// @poet line outlasted its line wait (the tool it called still runs), an
// operator's action on the conversation — /cancel, /kill, /halt all then
// /resume — is followed by the next @poet line, and the session ends at
// /quit with every answer printed: the line after /cancel continues the
// conversation, the one after /kill begins a new one, and after the resume
// the first line is answered (its call ran again) before the next line.
// reply_timeout is a minute: a session waiting for a completion it
// already saw would end with ErrStillRunning rather than hang.
func TestConsoleOperatorActionThenNextLine(t *testing.T) {
	for _, tc := range []struct {
		name    string
		seconds int    // the tool's sleep
		action  string // the lines of the action
		// awaited is what the action's end is, before the next line.
		awaited func(r *toolRun) <-chan struct{}
		said    string // what the session says of the action
		answers int    // how often "[poet] a short answer" prints
	}{
		{name: "cancel", seconds: 100, action: "/cancel\n", answers: 1,
			awaited: func(r *toolRun) <-chan struct{} { return r.cancelled },
			said:    "cancelled; the conversation goes on"},
		{name: "kill", seconds: 100, action: "/kill poet\n", answers: 1,
			awaited: func(r *toolRun) <-chan struct{} { return r.killed },
			said:    "the next @poet line begins a new conversation"},
		{name: "halt and resume", seconds: 2, action: "/halt all\n/resume\n", answers: 2,
			said: "Resumed: what waited runs now."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startToolRunFor(t, tc.seconds)
			write, done, out := r.session(t, r.l, console.Config{LineWait: time.Millisecond, ReplyTimeout: time.Minute})
			write("@poet count slowly\n")
			await(t, "run_command got the agent's call", r.running)
			write(tc.action)
			if tc.awaited != nil {
				await(t, "the action ended the turn", tc.awaited(r))
			}
			write("@poet never mind\n/quit\n")
			r.ended(t, done, out)
			if n := strings.Count(out.String(), "[poet] a short answer\n"); n != tc.answers {
				t.Errorf("%d answers printed; want %d:\n%s", n, tc.answers, out.String())
			}
			if !strings.Contains(out.String(), tc.said) {
				t.Errorf("the session did not say %q:\n%s", tc.said, out.String())
			}
			if last := r.m.Request(t, r.m.Count()-1); !strings.Contains(last[len(last)-1].Content, "never mind") {
				t.Errorf("the model's last request ends with %+v; want the next line", last[len(last)-1])
			}
		})
	}
}
