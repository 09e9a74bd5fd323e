package bus

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// restartOrganism stops the server and the organism (gracefully), starts
// the organism again on the same data directory, waits for its recovery,
// and serves a new server over it (users and their secrets are in the
// store; tokens must be had again).
func (f *fixture) restartOrganism() {
	f.t.Helper()
	dir := f.org.Store().Dir()
	f.stop()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := f.org.Shutdown(ctx); err != nil {
		f.t.Fatalf("organism shutdown: %v", err)
	}
	l, err := organism.Assemble(organism.Options{Logger: slog.New(f.logs), DataDir: dir}, f.build)
	if err != nil {
		f.t.Fatalf("assemble again: %v", err)
	}
	o := l.Organism()
	if err := o.Start(); err != nil {
		f.t.Fatalf("start again: %v", err)
	}
	f.t.Cleanup(func() {
		if err := o.Shutdown(context.Background()); err != nil {
			f.t.Errorf("organism shutdown: %v", err)
		}
	})
	if err := o.WaitRecovered(ctx); err != nil {
		f.t.Fatalf("recovery: %v", err)
	}
	svc, err := auth.New(o.Store(), auth.Options{Argon2: auth.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1},
		MaxFailures: 3, Clock: f.clock.Now, Logger: slog.New(f.logs), Organism: o.Config.Organism.Name})
	if err != nil {
		f.t.Fatalf("auth: %v", err)
	}
	f.local, f.org, f.auth = l, o, svc
	f.opts.Auth, f.opts.Organism, f.opts.Console = svc, o, l
	f.start(f.opts)
}

// wsSendOn sends text to target on thread over /ws and returns the frame
// answering it ("sent" or "error"), skipping the events in between.
func wsSendOn(t *testing.T, c *websocket.Conn, target, text, thread string) frame {
	t.Helper()
	writeFrame(t, c, frame{"type": "send", "id": "k1", "target": target, "content": text, "thread_id": thread})
	for range 100 {
		fr := readFrame(t, c)
		if fr["type"] == "sent" || fr["type"] == "error" {
			return fr
		}
	}
	t.Fatal("no answer to the send")
	return nil
}

// TestKillIsFinalAcrossRestart: a conversation killed through the API
// (its message held at a paused shouter) cannot be continued — REST inject
// on its thread is 409 "Conversation was killed; start a new one", a /ws
// send on it an error frame of code "killed" — and after the organism
// restarts it still reads "killed" (GET /threads/{id}, the status filter
// of GET /threads), a second kill says so, and its continuation is still
// refused, while a new conversation with the same agent runs.
func TestKillIsFinalAcrossRestart(t *testing.T) {
	f := newFixture(t)
	olgaSecret, adaSecret := f.user("olga", auth.Operator), f.user("ada", auth.Admin)
	olga, ada := f.login("olga", olgaSecret), f.login("ada", adaSecret)
	if status, body, _ := f.do("POST", "/api/v1/agents/shouter/pause", ada, nil); status != 200 {
		t.Fatalf("pause: %d %v", status, body)
	}
	thread := f.inject(olga, "greeter", map[string]string{"name": "Lou"})
	if status, body, _ := f.do("POST", "/api/v1/threads/"+thread+"/kill", olga, nil); status != 200 {
		t.Fatalf("kill: %d %v", status, body)
	}

	type answer struct {
		Status int
		Body   map[string]any
	}
	refused := answer{409, map[string]any{"error": "Conversation was killed; start a new one"}}
	continueIt := func(token string) answer {
		t.Helper()
		status, body, _ := f.do("POST", "/api/v1/inject", token,
			map[string]any{"to": "greeter", "payload": map[string]string{"name": "Ann"}, "thread_id": thread})
		return answer{status, body}
	}
	if diff := cmp.Diff(refused, continueIt(olga)); diff != "" {
		t.Errorf("REST continuation of the killed conversation (-want +got):\n%s", diff)
	}
	c := f.dial("/ws", olga)
	readFrame(t, c)
	got := wsSendOn(t, c, "greeter", "Ann", thread)
	want := frame{"type": "error", "id": "k1", "error": "Conversation was killed; start a new one", "code": "killed"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/ws continuation of the killed conversation (-want +got):\n%s", diff)
	}
	c.Close()
	f.waitJournal()

	f.restartOrganism()
	olga, ada = f.login("olga", olgaSecret), f.login("ada", adaSecret)
	if _, body, _ := f.do("GET", "/api/v1/threads/"+thread, ada, nil); body["status"] != "killed" {
		t.Errorf("after a restart the killed conversation reads %v, want killed", body["status"])
	}
	_, body, _ := f.do("GET", "/api/v1/threads?status=killed", ada, nil)
	var ids []string
	rows, _ := body["threads"].([]any)
	for _, r := range rows {
		ids = append(ids, r.(map[string]any)["id"].(string))
	}
	if !slices.Contains(ids, thread) {
		t.Errorf("GET /threads?status=killed after a restart lists %v, not the killed %s", ids, thread)
	}
	again := answer{409, map[string]any{"error": "Conversation already killed", "thread_id": thread}}
	status, body, _ := f.do("POST", "/api/v1/threads/"+thread+"/kill", ada, nil)
	if diff := cmp.Diff(again, answer{status, body}); diff != "" {
		t.Errorf("a kill after the restart (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(refused, continueIt(olga)); diff != "" {
		t.Errorf("REST continuation after the restart (-want +got):\n%s", diff)
	}
	done := f.watchCompletions()
	fresh := f.inject(olga, "greeter", map[string]string{"name": "New"})
	done.wait(t, fresh)
}
