package pump_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// holdKinds are the ways an operator stops a listener from taking its
// queued messages: a pause of it (ctl pause-listener) and a halt.
var holdKinds = []struct {
	name    string
	hold    func(*testing.T, *pump.Pump)
	release func(*testing.T, *pump.Pump)
}{
	{
		name: "paused",
		hold: func(t *testing.T, p *pump.Pump) {
			if err := p.Pause("jobs"); err != nil {
				t.Fatal(err)
			}
		},
		release: func(t *testing.T, p *pump.Pump) {
			if err := p.Resume("jobs"); err != nil {
				t.Fatal(err)
			}
		},
	},
	{
		name: "halted",
		hold: func(t *testing.T, p *pump.Pump) {
			if _, err := p.Halt(pump.HaltAll); err != nil {
				t.Fatal(err)
			}
		},
		release: func(_ *testing.T, p *pump.Pump) { p.Unhalt() },
	},
}

// deadLettersOf counts the dead letters of conversation conv.
func deadLettersOf(conv string) func(pump.Event) bool {
	return func(e pump.Event) bool { return e.Kind == pump.EventDeadLetter && e.Conversation == conv }
}

// TestKillQueuedLeavesTheQueueAtOnce: a conversation killed while its
// message waits at a paused or halted listener loses that message at the
// kill, not at the resume: before Kill returns it is dead-lettered
// ("conversation killed"), marked delivered in the journal (recovery does
// not run it again), out of the listener's queue depth, and the
// conversation has completed; the other conversations' messages keep
// their place and run, in order, at the resume, and the killed one never
// reaches the handler nor is dead-lettered twice.
func TestKillQueuedLeavesTheQueueAtOnce(t *testing.T) {
	for _, hk := range holdKinds {
		t.Run(hk.name, func(t *testing.T) {
			pr := newProbe()
			jobs := sink[Job](t, "jobs", pr)
			jobs.Workers = 1 // handled in queue order
			j := newMarkJournal()
			p := startPump(t, pump.Options{Journal: j}, jobs)
			all := newRecorder()
			p.Subscribe(all)
			hk.hold(t, p)
			sendJob(t, p, "jobs", "keep1", nil)
			out := newRecorder()
			doomed := sendJob(t, p, "jobs", "doomed", out)
			sendJob(t, p, "jobs", "keep2", nil)

			if _, err := p.Kill(doomed); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			type state struct {
				QueueDepth          int
				Completion          string
				DeadLetters         int
				Journaled, Marked   bool
				SecondKillEnded     bool
				ConversationRunning bool
			}
			var completion string
			for _, e := range out.snapshot() {
				if e.Kind == pump.EventComplete {
					completion = e.Error
				}
			}
			_, again := p.Kill(doomed)
			got := state{QueueDepth: listenerInfo(t, p, "jobs").QueueDepth, Completion: completion,
				DeadLetters: all.count(deadLettersOf(doomed)), SecondKillEnded: errors.Is(again, pump.ErrConversationEnded),
				ConversationRunning: p.Running(doomed)}
			got.Journaled, got.Marked = j.deliveredText("doomed")
			want := state{QueueDepth: 2, Completion: pump.KilledReason, DeadLetters: 1, Journaled: true, Marked: true,
				SecondKillEnded: true}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("when Kill returned, while %s (-want +got):\n%s", hk.name, diff)
			}
			if dl := all.waitFor(t, "dead letter", deadLettersOf(doomed)); dl.Error != "conversation killed" {
				t.Errorf("dead letter says %q, want %q", dl.Error, "conversation killed")
			}

			hk.release(t, p)
			var handled []string
			for range 2 {
				handled = append(handled, pr.next(t).Payload.(*Job).Label)
			}
			if diff := cmp.Diff([]string{"keep1", "keep2"}, handled); diff != "" {
				t.Errorf("handled after the %s listener went on (-want +got):\n%s", hk.name, diff)
			}
			if n := all.count(deadLettersOf(doomed)); n != 1 {
				t.Errorf("the killed message was dead-lettered %d times, want once", n)
			}
		})
	}
}

// TestKillQueuedFreesRoom: messages of killed conversations waiting at a
// paused listener no longer hold its queue nor its share of the admission
// budget, so a new message is not refused as busy once every message
// waiting there is dead.
func TestKillQueuedFreesRoom(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      pump.Options
		queueSize int
	}{
		{name: "queue full", opts: pump.Options{AdmitWait: -1}, queueSize: 2},
		{name: "listener share", opts: pump.Options{AdmitWait: -1, MaxInFlight: 16}}, // share: 16/8 = 2
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := newProbe()
			jobs := sink[Job](t, "jobs", pr)
			jobs.QueueSize = tc.queueSize
			p := startPump(t, tc.opts, jobs)
			if err := p.Pause("jobs"); err != nil {
				t.Fatal(err)
			}
			doomed := []string{sendJob(t, p, "jobs", "a", nil), sendJob(t, p, "jobs", "b", nil)}
			if _, err := p.Send(waitCtx(t), client, "jobs", &Job{Label: "refused"}, nil); !errors.Is(err, pump.ErrBusy) {
				t.Fatalf("precondition: a third message to the full listener = %v, want ErrBusy", err)
			}
			for _, conv := range doomed {
				if _, err := p.Kill(conv); err != nil {
					t.Fatalf("Kill(%s): %v", conv, err)
				}
			}
			if _, err := p.Send(waitCtx(t), client, "jobs", &Job{Label: "fresh"}, nil); err != nil {
				t.Fatalf("a message to a listener whose waiting messages were all killed: %v, want it taken", err)
			}
			if got := listenerInfo(t, p, "jobs").QueueDepth; got != 1 {
				t.Errorf("queue depth %d, want 1 (the fresh message only)", got)
			}
			if err := p.Resume("jobs"); err != nil {
				t.Fatal(err)
			}
			if c := pr.next(t); c.Payload.(*Job).Label != "fresh" {
				t.Errorf("handled %q, want the fresh job", c.Payload.(*Job).Label)
			}
		})
	}
}

// TestKillSubThreadPurgesItsConversation: kill-thread naming a sub-thread
// stops the conversation it belongs to: that conversation's messages waiting
// at every paused listener, on any of its threads, leave their queues at
// once; another conversation's message stays and runs at the resume.
func TestKillSubThreadPurgesItsConversation(t *testing.T) {
	pr := newProbe()
	fan := listenerOf(t, "fan", func(_ context.Context, in *Fan, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		return xmlpipe.SendAll(&xmlpipe.SendResponse{To: "jobs", Payload: &Job{Label: in.Step}},
			&xmlpipe.SendResponse{To: "pings", Payload: &Ping{Text: in.Step}}), nil
	})
	p := startPump(t, pump.Options{}, fan, sink[Job](t, "jobs", pr), sink[Ping](t, "pings", pr))
	all := newRecorder()
	p.Subscribe(all)
	for _, name := range []string{"jobs", "pings"} {
		if err := p.Pause(name); err != nil {
			t.Fatal(err)
		}
	}
	out := newRecorder()
	doomed := mustSend(t, p, client, "fan", &Fan{Step: "doomed"}, out)
	// The fan's two messages wait at jobs and pings, each on a sub-thread.
	all.waitN(t, "the fan's messages queued", 2, func(e pump.Event) bool {
		return e.Kind == pump.EventMessage && e.Conversation == doomed && e.Listener != "fan"
	})
	sub := ""
	for _, e := range all.snapshot() {
		if e.Kind == pump.EventMessage && e.Listener == "jobs" {
			sub = e.Thread
		}
	}
	if sub == "" || sub == doomed {
		t.Fatalf("precondition: the message to jobs travels on a sub-thread, got %q (conversation %s)", sub, doomed)
	}
	sendJob(t, p, "jobs", "keep", nil)
	conv, err := p.Kill(sub)
	if err != nil || conv != doomed {
		t.Fatalf("Kill(sub-thread) = %q, %v; want %q, nil", conv, err, doomed)
	}
	// Its messages leave the paused queues without a resume: the
	// conversation completes. (The fan's message to pings may reach its
	// queue just after Kill's sweep: it is swept as it is queued.)
	if c := out.waitFor(t, "completion", kind(pump.EventComplete)); c.Error != pump.KilledReason {
		t.Errorf("completion says %q, want %q", c.Error, pump.KilledReason)
	}
	type depths struct{ Jobs, Pings, DeadLetters int }
	got := depths{listenerInfo(t, p, "jobs").QueueDepth, listenerInfo(t, p, "pings").QueueDepth,
		all.count(deadLettersOf(doomed))}
	if diff := cmp.Diff(depths{Jobs: 1, Pings: 0, DeadLetters: 2}, got); diff != "" {
		t.Fatalf("once the killed conversation completed (-want +got):\n%s", diff)
	}
	for _, name := range []string{"jobs", "pings"} {
		if err := p.Resume(name); err != nil {
			t.Fatal(err)
		}
	}
	if c := pr.next(t); c.Listener != "jobs" || c.Payload.(*Job).Label != "keep" {
		t.Fatalf("handled %s %+v after the resume, want jobs' keep", c.Listener, c.Payload)
	}
	// Drained: nothing of the killed conversation reached a handler.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(pr.all()); n != 1 {
		t.Errorf("%d handler calls, want 1 (keep): %+v", n, pr.all())
	}
}

// TestKillQueuedAtMaxConcurrency: a message waiting behind a listener's
// busy workers (at its max concurrency, not paused) leaves the queue at the
// kill of its conversation, rather than when a worker comes free.
func TestKillQueuedAtMaxConcurrency(t *testing.T) {
	entered, finish := newGate(), newGate()
	pr := newProbe()
	busy := listenerOf(t, "jobs", func(ctx context.Context, in *Job, md xmlpipe.Metadata) (xmlpipe.Response, error) {
		if in.Label == "blocker" {
			entered.open()
			finish.wait(ctx)
			return nil, nil
		}
		pr.record("jobs", in, md)
		return nil, nil
	})
	busy.Workers = 1
	p := startPump(t, pump.Options{}, busy)
	sendJob(t, p, "jobs", "blocker", nil)
	entered.wait(waitCtx(t))
	out := newRecorder()
	doomed := sendJob(t, p, "jobs", "doomed", out)
	if _, err := p.Kill(doomed); err != nil {
		t.Fatal(err)
	}
	if got := listenerInfo(t, p, "jobs").QueueDepth; got != 0 {
		t.Errorf("queue depth %d when Kill returned, want 0", got)
	}
	if p.Running(doomed) {
		t.Error("the killed conversation still runs when Kill returned")
	}
	finish.open()
	sendJob(t, p, "jobs", "after", nil)
	if c := pr.next(t); c.Payload.(*Job).Label != "after" {
		t.Errorf("handled %q, want after (the killed job never runs)", c.Payload.(*Job).Label)
	}
}

// waitForFrame waits until some goroutine's stack shows function fn (a
// frame of the pump waiting where a test needs it to wait).
func waitForFrame(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(waitTimeout)
	for {
		if n := runtime.Stack(buf, true); strings.Contains(string(buf[:n]), fn) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine reached %s within %v", fn, waitTimeout)
		}
		runtime.Gosched()
	}
}

// TestKillWhileAContinuationWaitsForRoom: a message continuing a
// conversation, let in while the conversation ran, that waits for room at a
// full listener when the conversation is killed is refused as continuing a
// killed conversation once room appears — it does not begin a new
// conversation under the killed one's id — and nothing of it runs.
func TestKillWhileAContinuationWaitsForRoom(t *testing.T) {
	pr := newProbe()
	jobs := sink[Job](t, "jobs", pr)
	jobs.QueueSize = 1
	p := startPump(t, pump.Options{AdmitWait: waitTimeout}, jobs)
	if err := p.Pause("jobs"); err != nil {
		t.Fatal(err)
	}
	doomed := sendJob(t, p, "jobs", "doomed", nil)
	continued := make(chan error, 1)
	go func() {
		_, err := p.InjectWait(waitCtx(t), envelope(client, "jobs", doomed, `<Job xmlns=""><Label>again</Label></Job>`), nil)
		continued <- err
	}()
	waitForFrame(t, "pump.(*Pump).waitRoom")
	if _, err := p.Kill(doomed); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	var err error
	select {
	case err = <-continued:
	case <-time.After(waitTimeout):
		t.Fatal("the continuation still waits for room after the kill emptied the queue")
	}
	if !errors.Is(err, pump.ErrContinueKilled) {
		t.Errorf("the continuation that waited for room: %v, want ErrContinueKilled", err)
	}
	if p.Running(doomed) || p.Threads().Known(doomed) {
		t.Errorf("the killed conversation's id runs again (running %v, thread live %v)", p.Running(doomed),
			p.Threads().Known(doomed))
	}
	if got := listenerInfo(t, p, "jobs").QueueDepth; got != 0 {
		t.Errorf("queue depth %d, want 0", got)
	}
}

// TestKillRacesTheRelease: a kill racing the resume of the paused
// listener (or the lift of the halt) that holds its conversation's
// messages: whichever gets there first, each of them is either handled
// (popped before the kill) or dead-lettered, exactly once, and marked
// delivered; nothing stays queued or in flight, and the other
// conversation's message runs. A worker pops a message or the kill's sweep
// takes it, never both.
func TestKillRacesTheRelease(t *testing.T) {
	doomedLabels := []string{"doomed-1", "doomed-2", "doomed-3"}
	for _, hk := range holdKinds {
		t.Run(hk.name, func(t *testing.T) {
			for round := range 10 {
				pr := newProbe()
				jobs := sink[Job](t, "jobs", pr)
				jobs.Workers = 2
				j := newMarkJournal()
				p := startPump(t, pump.Options{Journal: j}, jobs)
				all := newRecorder()
				p.Subscribe(all)
				hk.hold(t, p)
				doomed := sendJob(t, p, "jobs", doomedLabels[0], nil)
				for _, label := range doomedLabels[1:] {
					if _, err := injectErr(t, p, envelope(client, "jobs", doomed,
						`<Job xmlns=""><Label>`+label+`</Label></Job>`), nil); err != nil {
						t.Fatalf("continue %s: %v", label, err)
					}
				}
				sendJob(t, p, "jobs", "keep", nil)
				start, killed := make(chan struct{}), make(chan error, 1)
				go func() {
					<-start
					_, err := p.Kill(doomed)
					killed <- err
				}()
				close(start)
				hk.release(t, p)
				// All three may have run before it: the conversation ended
				// (its thread gone too, though a journal without thread
				// history does not know it: the pump remembers it).
				if err := <-killed; err != nil && !errors.Is(err, pump.ErrConversationEnded) {
					t.Fatalf("round %d: Kill: %v", round, err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
				if err := p.Shutdown(ctx); err != nil {
					t.Fatalf("round %d: Shutdown: %v", round, err)
				}
				cancel()
				type outcome struct {
					DoomedEnded, KeepHandled, QueueDepth, InFlight int
					Marked                                         []bool
				}
				// A message a worker took before the kill is handled (its
				// answer, the kill cancelling the call, may be dropped as
				// a dead letter of its own); one the kill took is a dead
				// letter saying so.
				got := outcome{DoomedEnded: all.count(func(e pump.Event) bool {
					return deadLettersOf(doomed)(e) && e.Error == "conversation killed"
				}),
					QueueDepth: listenerInfo(t, p, "jobs").QueueDepth, InFlight: p.Stats().InFlight}
				for _, c := range pr.all() {
					if c.Payload.(*Job).Label == "keep" {
						got.KeepHandled++
					} else {
						got.DoomedEnded++
					}
				}
				for _, label := range doomedLabels {
					_, marked := j.deliveredText(label)
					got.Marked = append(got.Marked, marked)
				}
				want := outcome{DoomedEnded: 3, KeepHandled: 1, Marked: []bool{true, true, true}}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("round %d: kill racing the release: the doomed messages handled or dead-lettered "+
						"(-want +got):\n%s", round, diff)
				}
			}
		})
	}
}

// TestKillWhileAWorkerWaitsForASlot: a message a worker popped and holds
// while it waits for a global handler slot counts in its listener's queue
// depth, and a kill of its conversation ends that wait at once, as it
// takes a queued message out: before Kill returns it is dead-lettered
// (once), marked delivered, no longer counted, and the conversation has
// completed — while the handler holding the only slot still runs. It
// never reaches its handler.
func TestKillWhileAWorkerWaitsForASlot(t *testing.T) {
	entered, finish := newGate(), newGate()
	hog := listenerOf(t, "hog", func(ctx context.Context, _ *Ping, _ xmlpipe.Metadata) (xmlpipe.Response, error) {
		entered.open()
		finish.wait(ctx)
		return nil, nil
	})
	pr := newProbe()
	j := newMarkJournal()
	p := startPump(t, pump.Options{MaxConcurrentHandlers: 1, Journal: j}, hog, sink[Job](t, "jobs", pr))
	t.Cleanup(finish.open) // before the pump's drain
	all := newRecorder()
	p.Subscribe(all)
	mustSend(t, p, client, "hog", &Ping{Text: "hold the slot"}, nil)
	entered.wait(waitCtx(t))
	out := newRecorder()
	doomed := sendJob(t, p, "jobs", "doomed", out)
	waitForFrame(t, "pump.(*Pump).takeSlot")
	if depth := listenerInfo(t, p, "jobs").QueueDepth; depth != 1 {
		t.Errorf("QueueDepth = %d while its message waits for a slot, want 1", depth)
	}
	inFlight := p.InFlight()
	if _, err := p.Kill(doomed); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	type state struct {
		Completion        string
		DeadLetters       int
		Journaled, Marked bool
		Running           bool
		QueueDepth        int
		InFlightReleased  int
	}
	got := state{DeadLetters: all.count(deadLettersOf(doomed)), Running: p.Running(doomed),
		QueueDepth: listenerInfo(t, p, "jobs").QueueDepth, InFlightReleased: inFlight - p.InFlight()}
	for _, e := range out.snapshot() {
		if e.Kind == pump.EventComplete {
			got.Completion = e.Error
		}
	}
	got.Journaled, got.Marked = j.deliveredText("doomed")
	want := state{Completion: pump.KilledReason, DeadLetters: 1, Journaled: true, Marked: true, InFlightReleased: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("when Kill returned, the hog still holding the slot (-want +got):\n%s", diff)
	}
	finish.open()
	sendJob(t, p, "jobs", "after", nil)
	if c := pr.next(t); c.Payload.(*Job).Label != "after" {
		t.Errorf("handled %q, want after (the killed job never runs)", c.Payload.(*Job).Label)
	}
	if n := all.count(deadLettersOf(doomed)); n != 1 {
		t.Errorf("%d dead letters of the killed conversation, want 1", n)
	}
}
