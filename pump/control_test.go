package pump_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// listenerInfo returns the introspection record of name.
func listenerInfo(t *testing.T, p *pump.Pump, name string) pump.ListenerInfo {
	t.Helper()
	for _, li := range p.Listeners() {
		if li.Name == name {
			return li
		}
	}
	t.Fatalf("no listener %q", name)
	return pump.ListenerInfo{}
}

// sendJob injects a Job for target and waits until the ingress stages queued it.
func sendJob(t *testing.T, p *pump.Pump, target, label string, out pump.Outlet) string {
	t.Helper()
	thread, err := injectErr(t, p, envelope(client, target, stage.NewThreadID(), `<Job xmlns=""><Label>`+label+`</Label></Job>`), out)
	if err != nil {
		t.Fatalf("inject %s: %v", label, err)
	}
	return thread
}

// TestPauseResume: a paused listener queues its messages without handling
// them; Resume hands them all over in order.
func TestPauseResume(t *testing.T) {
	pr := newProbe()
	jobs := sink[Job](t, "jobs", pr)
	jobs.Workers = 1 // one worker: handled in queue order
	p := startPump(t, pump.Options{}, jobs)
	if err := p.Pause("Jobs"); err != nil { // names compare case-insensitively
		t.Fatal(err)
	}
	if !p.Paused("jobs") || !listenerInfo(t, p, "jobs").Paused {
		t.Fatal("Paused = false after Pause")
	}
	for _, l := range []string{"a", "b", "c"} {
		sendJob(t, p, "jobs", l, nil)
	}
	// InjectWait returns after the message is queued; a paused worker cannot
	// have taken it.
	if got := listenerInfo(t, p, "jobs"); got.QueueDepth != 3 || len(pr.all()) != 0 {
		t.Fatalf("while paused: queue depth %d, handled %d; want 3 queued, 0 handled", got.QueueDepth, len(pr.all()))
	}
	if err := p.Resume("jobs"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		got = append(got, pr.next(t).Payload.(*Job).Label)
	}
	if want := []string{"a", "b", "c"}; !equalStrings(got, want) {
		t.Fatalf("handled after Resume %v, want %v", got, want)
	}
	if p.Paused("jobs") {
		t.Fatal("Paused = true after Resume")
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPauseDrainsOnShutdown: Shutdown still handles what a paused listener
// holds (nothing queued is lost).
func TestPauseDrainsOnShutdown(t *testing.T) {
	pr := newProbe()
	p := newPump(t, pump.Options{}, sink[Job](t, "jobs", pr))
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.Pause("jobs"); err != nil {
		t.Fatal(err)
	}
	sendJob(t, p, "jobs", "held", nil)
	if err := p.Shutdown(waitCtx(t)); err != nil {
		t.Fatal(err)
	}
	if c := pr.all(); len(c) != 1 || c[0].Payload.(*Job).Label != "held" {
		t.Fatalf("handled during shutdown: %+v, want the held job", c)
	}
}

// TestKillQueued: killing a conversation whose message waits in a paused
// listener drops the message as a dead letter; the handler never sees it and
// the conversation completes.
func TestKillQueued(t *testing.T) {
	pr := newProbe()
	p := startPump(t, pump.Options{}, sink[Job](t, "jobs", pr), sink[Ping](t, "pings", pr))
	all := newRecorder()
	p.Subscribe(all)
	if err := p.Pause("jobs"); err != nil {
		t.Fatal(err)
	}
	out := newRecorder()
	thread := sendJob(t, p, "jobs", "doomed", out)
	conv, err := p.Kill(thread)
	if err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if conv != thread {
		t.Fatalf("Kill returned conversation %s, want %s", conv, thread)
	}
	if p.Threads().Known(thread) {
		t.Fatal("killed thread still known")
	}
	// Its message still queued, a second kill has nothing more to stop.
	if again, err := p.Kill(thread); !errors.Is(err, pump.ErrConversationEnded) || again != conv {
		t.Fatalf("second Kill = %q, %v; want %q, ErrConversationEnded", again, err, conv)
	}
	if err := p.Resume("jobs"); err != nil {
		t.Fatal(err)
	}
	if c := out.waitFor(t, "completion", kind(pump.EventComplete)); c.Error != pump.KilledReason {
		t.Errorf("the killed conversation's completion says %q, want %q", c.Error, pump.KilledReason)
	}
	dl := all.waitFor(t, "dead letter", kind(pump.EventDeadLetter))
	if dl.Error != "conversation killed" || dl.Conversation != conv {
		t.Fatalf("dead letter %+v, want 'conversation killed' on %s", dl, conv)
	}
	// Another conversation is unaffected.
	alive := newRecorder()
	mustSend(t, p, client, "pings", &Ping{Text: "alive"}, alive)
	if c := pr.next(t); c.Listener != "pings" {
		t.Fatalf("after kill, handled %+v; want the ping (the killed job must never run)", c)
	}
	if c := alive.waitFor(t, "completion", kind(pump.EventComplete)); c.Error != "" {
		t.Errorf("a conversation that ran its course completes with %q", c.Error)
	}
}

// TestKillQueuedIsNotHandled: the queued message of a killed conversation
// is dead-lettered without reaching its handler, so the counters of handled
// messages (listener_handled_total, messages_processed_total) leave it out,
// as the journal does.
func TestKillQueuedIsNotHandled(t *testing.T) {
	pr := newProbe()
	p := startPump(t, pump.Options{}, sink[Job](t, "jobs", pr))
	if err := p.Pause("jobs"); err != nil {
		t.Fatal(err)
	}
	before := p.Stats().Processed
	thread := sendJob(t, p, "jobs", "doomed", newRecorder())
	if _, err := p.Kill(thread); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	// Shutdown drains the paused queue: the doomed job is dead-lettered.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	type counts struct{ Handled, Processed int64 }
	got := counts{Handled: listenerInfo(t, p, "jobs").Handled, Processed: p.Stats().Processed - before}
	if diff := cmp.Diff(counts{}, got); diff != "" {
		t.Errorf("a killed, never handled message counted (-want +got):\n%s", diff)
	}
}

// TestKillRunning: a handler already running when its conversation is killed
// finishes, but what it emits is dropped instead of reaching the next listener.
func TestKillRunning(t *testing.T) {
	entered, finish := newGate(), newGate()
	threads := make(chan string, 1)
	pr := newProbe()
	slow := listenerOf(t, "slow", func(_ context.Context, in *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		threads <- md.ThreadID
		entered.open()
		finish.wait(t.Context())
		return xmlpipe.Send("pings", &Ping{Text: "too late"}), nil
	})
	p := startPump(t, pump.Options{}, slow, sink[Ping](t, "pings", pr))
	all := newRecorder()
	p.Subscribe(all)
	out := newRecorder()
	sendJob(t, p, "slow", "x", out)
	entered.wait(waitCtx(t))
	if _, err := p.Kill(<-threads); err != nil { // a thread inside the conversation
		t.Fatalf("Kill: %v", err)
	}
	finish.open()
	out.waitFor(t, "completion", kind(pump.EventComplete))
	all.waitFor(t, "dead letter", kind(pump.EventDeadLetter))
	if c := pr.all(); len(c) != 0 {
		t.Fatalf("pings handled %+v after the conversation was killed", c)
	}
}

// TestControlUnknown: the control operations name what they could not find.
func TestControlUnknown(t *testing.T) {
	p := startPump(t, pump.Options{}, sink[Job](t, "jobs", newProbe()))
	for name, err := range map[string]error{
		"pause":  p.Pause("nobody"),
		"resume": p.Resume("nobody"),
	} {
		if !errors.Is(err, pump.ErrUnknownListener) {
			t.Errorf("%s(nobody) = %v, want ErrUnknownListener", name, err)
		}
	}
	if _, err := p.Kill(stage.NewThreadID()); !errors.Is(err, pump.ErrUnknownThread) {
		t.Errorf("Kill(unknown) = %v, want ErrUnknownThread", err)
	}
}

// TestIntrospectCurrentAndLastError: Listeners shows the thread a handler is
// working on and the listener's last failure.
func TestIntrospectCurrentAndLastError(t *testing.T) {
	entered, finish := newGate(), newGate()
	threads := make(chan string, 1)
	slow := listenerOf(t, "slow", func(_ context.Context, in *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		threads <- md.ThreadID
		entered.open()
		finish.wait(t.Context())
		return nil, errors.New("boom")
	})
	p := startPump(t, pump.Options{}, slow)
	out := newRecorder()
	sendJob(t, p, "slow", "x", out)
	entered.wait(waitCtx(t))
	thread := <-threads
	if got := listenerInfo(t, p, "slow").Current; len(got) != 1 || got[0] != thread {
		t.Fatalf("Current = %v while handling %s", got, thread)
	}
	finish.open()
	out.waitFor(t, "completion", kind(pump.EventComplete))
	li := listenerInfo(t, p, "slow")
	if len(li.Current) != 0 {
		t.Errorf("Current = %v after the handler returned", li.Current)
	}
	if !strings.Contains(li.LastError, "boom") || li.LastErrorTime.IsZero() {
		t.Errorf("LastError = %q at %v, want the handler's error", li.LastError, li.LastErrorTime)
	}
}
