package bus

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestProfileGovernsEventStreams: over real TLS WebSockets, a user whose
// profile holds only calculate sees on /api/v1/ws and /api/v1/ws/messages
// the events of the conversations of their profile and nothing of the
// greeter's — neither its messages nor its threads — nor of a conversation
// of a user without a profile, even one with calculate; /ws lists no
// greeter either. Another user of the same profile reads the ended
// conversation by the profile the journal recorded. A user without a
// profile sees everything, as before.
func TestProfileGovernsEventStreams(t *testing.T) {
	f := newFixtureWith(t, profiledOrganism)
	secret := f.user("calcuser", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "calcuser", "calc"); err != nil {
		t.Fatal(err)
	}
	calc := f.login("calcuser", secret)
	f.nextStep()
	open := f.loginAs("open", auth.Admin)
	secret2 := f.user("calcuser2", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "calcuser2", "calc"); err != nil {
		t.Fatal(err)
	}
	f.nextStep()
	calc2 := f.login("calcuser2", secret2)

	stream := func(token string) *websocket.Conn {
		c := f.dial("/api/v1/ws", token)
		if got := readFrame(t, c); got["event"] != "connected" {
			t.Fatalf("first frame %v", got)
		}
		return c
	}
	logs := func(token string) *websocket.Conn {
		c := f.dial("/api/v1/ws/messages", token)
		writeFrame(t, c, frame{"cmd": "subscribe", "filter": map[string]any{}})
		if got := readFrame(t, c); got["event"] != "subscribed" {
			t.Fatalf("first log frame %v", got)
		}
		return c
	}
	calcStream, openStream := stream(calc), stream(open)
	calcLog, openLog := logs(calc), logs(open)

	inject := func(token, to string, payload map[string]string) string {
		t.Helper()
		s, b, _ := f.do("POST", "/api/v1/inject", token, map[string]any{"to": to, "payload": payload})
		if s != 200 {
			t.Fatalf("inject %s: %d %v", to, s, b)
		}
		return b["thread_id"].(string)
	}
	// until reads c until every one of done has been satisfied by a frame,
	// returning every frame read.
	until := func(c *websocket.Conn, done ...func(frame) bool) []string {
		t.Helper()
		var seen []string
		met := make([]bool, len(done))
		for slices.Contains(met, false) {
			got := readFrame(t, c)
			b, _ := json.Marshal(got)
			seen = append(seen, string(b))
			for i, d := range done {
				met[i] = met[i] || d(got)
			}
		}
		return seen
	}
	// completed is a conversation's end, whatever its status: the greeting
	// here ends in error (greeter's answer has no shouter to go to), as
	// REST reads it.
	completed := func(conv string) func(frame) bool {
		return func(got frame) bool {
			return got["event"] == "thread_updated" && got["thread_id"] == conv && got["status"] != nil
		}
	}
	logged := func(conv, party string) func(frame) bool {
		return func(got frame) bool {
			return got["conversation"] == conv && (got["from"] == party || got["listener"] == party)
		}
	}

	// The user without a profile greets, and asks calculate outside any
	// profile; both conversations complete before the calc user's begins,
	// so their events would reach the calc user's sockets first.
	greet := inject(open, "greeter", map[string]string{"name": "Ann"})
	sum := inject(open, "calculate", map[string]string{"expression": "1 + 1"})
	openSeen := until(openStream, completed(greet), completed(sum))
	openLogged := until(openLog, logged(greet, "greeter"), logged(sum, "calculate"))
	if all := strings.Join(openSeen, "\n"); !strings.Contains(all, `"listener":"greeter"`) || !strings.Contains(all, "Ann") {
		t.Fatalf("the user without a profile does not see the greeter's messages:\n%s", all)
	}
	if all := strings.Join(openLogged, "\n"); !strings.Contains(all, "Ann") {
		t.Fatalf("the user without a profile's message log:\n%s", all)
	}

	mine := inject(calc, "calculate", map[string]string{"expression": "6 * 7"})
	calcSeen := until(calcStream, completed(mine))
	calcLogged := until(calcLog, func(got frame) bool { return got["conversation"] == mine && got["from"] == "calculate" })
	for what, frames := range map[string][]string{"/api/v1/ws": calcSeen, "/api/v1/ws/messages": calcLogged} {
		all := strings.Join(frames, "\n")
		if !strings.Contains(all, "42") {
			t.Errorf("%s: the calc user does not see their own answer:\n%s", what, all)
		}
		for _, leak := range []string{"greeter", "Ann", greet, sum} {
			if strings.Contains(all, leak) {
				t.Errorf("%s: the calc user sees %q:\n%s", what, leak, all)
			}
		}
	}
	// The user without a profile sees the calc user's conversation too.
	if all := strings.Join(until(openStream, completed(mine)), "\n"); !strings.Contains(all, "42") {
		t.Errorf("the user without a profile misses the calc conversation:\n%s", all)
	}

	// /ws: no greeter among the listeners (targets too).
	c := f.dial("/ws", calc)
	readFrame(t, c)
	for _, typ := range []string{"listeners", "targets"} {
		writeFrame(t, c, frame{"type": typ})
		got := readFrame(t, c)
		ls, _ := got["listeners"].([]any)
		if !slices.Contains(ls, any("calculate")) || slices.Contains(ls, any("greeter")) {
			t.Errorf("/ws %s for the calc user: %v", typ, got)
		}
	}
	// REST: the journal's threads and messages. The calc user's own
	// conversation (ended) is listed; the others are not, and their ids
	// are answered as ids that do not exist.
	get := func(token, path string) (int, string) {
		t.Helper()
		status, body, _ := f.do("GET", path, token, nil)
		b, _ := json.Marshal(body)
		return status, string(b)
	}
	if st, b := get(calc, "/api/v1/threads"); st != 200 || !strings.Contains(b, mine) || strings.Contains(b, greet) ||
		strings.Contains(b, sum) || strings.Contains(b, "greeter") {
		t.Errorf("threads for the calc user: %d %s", st, b)
	}
	if st, b := get(open, "/api/v1/threads"); st != 200 || !strings.Contains(b, mine) || !strings.Contains(b, greet) ||
		!strings.Contains(b, sum) {
		t.Errorf("threads for the user without a profile: %d %s", st, b)
	}
	if st, b := get(calc, "/api/v1/messages?limit=200"); st != 200 || !strings.Contains(b, "6 * 7") ||
		strings.Contains(b, "Ann") || strings.Contains(b, "greeter") || strings.Contains(b, "1 + 1") {
		t.Errorf("messages for the calc user: %d %s", st, b)
	}
	nsNone, nbNone := get(calc, "/api/v1/threads/00000000-0000-4000-8000-000000000000")
	for _, id := range []string{greet, sum} {
		for _, suffix := range []string{"", "/messages"} {
			st, b := get(calc, "/api/v1/threads/"+id+suffix)
			if st != 404 || st != nsNone || b != nbNone {
				t.Errorf("thread %s%s for the calc user: %d %s (a nonexistent one: %d %s)", id, suffix, st, b, nsNone, nbNone)
			}
		}
	}
	if st, b := get(calc, "/api/v1/threads/"+mine+"/messages"); st != 200 || !strings.Contains(b, "42") {
		t.Errorf("the calc user's own thread: %d %s", st, b)
	}
	// Another user of the same profile reads the calc user's ended
	// conversation by the profile the journal recorded with it, and no
	// more than the calc user does.
	if st, b := get(calc2, "/api/v1/threads/"+mine+"/messages"); st != 200 || !strings.Contains(b, "42") {
		t.Errorf("the calc user's ended thread for another calc user: %d %s", st, b)
	}
	if st, b := get(calc2, "/api/v1/threads/"+greet); st != nsNone || b != nbNone {
		t.Errorf("the greeter's thread for another calc user: %d %s", st, b)
	}
	if st, _ := get(open, "/api/v1/threads/"+greet); st != 200 {
		t.Errorf("the greeter's thread for the user without a profile: %d", st)
	}

	writeFrame(t, c, frame{"type": "threads"})
	if got, _ := json.Marshal(readFrame(t, c)); strings.Contains(string(got), "greeter") ||
		strings.Contains(string(got), greet) || strings.Contains(string(got), sum) {
		t.Errorf("/ws threads for the calc user: %s", got)
	}
}

// TestWithin: a thread's profile is the user's or narrower.
func TestWithin(t *testing.T) {
	for _, c := range []struct {
		thread, user string
		want         bool
	}{
		{"calc", "calc", true}, {"calc&peers", "calc", true}, {"peers&calc", "calc", true},
		{"", "calc", false}, {"peers", "calc", false}, {"calc", "calc&peers", false},
		{"calc&peers", "peers&calc", true},
	} {
		if got := within(c.thread, c.user); got != c.want {
			t.Errorf("within(%q, %q) = %v", c.thread, c.user, got)
		}
	}
}

// TestCurrentThreadRedacted: the thread a visible listener works on is
// named to a user with a profile only when it is of that profile or
// narrower; to a user without one, always.
func TestCurrentThreadRedacted(t *testing.T) {
	f := newFixtureWith(t, profiledOrganism)
	if st, b, _ := f.do("GET", "/api/v1/agents", f.loginAs("viewer", auth.Viewer), nil); st != 200 {
		t.Fatalf("agents: %d %v", st, b) // and the server is serving before the fixture stops it
	}
	threads := f.org.Pump.Threads()
	open, mine := stage.NewThreadID(), stage.NewThreadID()
	if _, _, _, err := threads.JoinAs(open, "api:open", "calculate", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := threads.JoinAs(mine, "api:calcuser", "calculate", "calc"); err != nil {
		t.Fatal(err)
	}
	calc, admin := auth.Session{Username: "calcuser", Profile: "calc"}, auth.Session{Username: "admin"}
	for _, c := range []struct {
		sess   auth.Session
		thread string
		shown  bool
	}{
		{calc, open, false}, {calc, mine, true}, {admin, open, true}, {admin, mine, true},
		{calc, stage.NewThreadID(), false},
	} {
		id := c.thread
		got := f.srv.listenerFor(c.sess, pump.ListenerInfo{Name: "calculate", Current: []string{id}, Active: 1}).Current
		if (len(got) == 1) != c.shown || len(got) == 1 && got[0] != id {
			t.Errorf("%s, thread %s: %v, want shown=%v", c.sess.Username, id, got, c.shown)
		}
	}
	if got := f.srv.listenerFor(calc, pump.ListenerInfo{Name: "calculate"}).Current; len(got) != 0 {
		t.Errorf("no current thread became %v", got)
	}
}
