package organism

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// sleeper is a native-tools agent whose run_command may run sleep.
const sleeper = `listeners:
  - name: sleeper
    agent: true
    description: Runs commands
    prompt: You are sleeper.
    tools: [run_command]
    tool_config:
      run_command: {allowed_commands: [{command: sleep, args: ["{int}"]}]}
`

// TestCancelWhileAToolListenerRuns: an agent whose reply called a tool
// listener (run_command sleep 100) waits for its result, its handler not
// running, when the user cancels the answer: the conversation completes
// cancelled, and the user's next line — on the same organism or after a
// restart of the durable one — is answered by the model, which reads the
// call as cancelled while it ran and the note that the user cancelled the
// previous answer, before the new line.
func TestCancelWhileAToolListenerRuns(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			m := newScriptedModel(t, map[string][]string{"sleeper": {
				toolCalls(scriptedCall{ID: "call_1", Name: "run_command", Arguments: `{"Command":"sleep","Arg":["100"]}`}),
				"a short answer",
			}})
			dir := t.TempDir()
			alice := pump.Principal{From: "api:alice", User: "alice"}
			thread := stage.NewThreadID()
			o := durableAgents(t, m, dir, sleeper)
			stopped := false
			t.Cleanup(func() {
				if !stopped {
					ctx, cancel := context.WithTimeout(context.Background(), agentWait)
					defer cancel()
					if err := o.Shutdown(ctx); err != nil {
						t.Error(err)
					}
				}
			})

			running := make(chan struct{})
			completed := make(chan string, 1)
			var once sync.Once
			unsub := o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
				switch {
				case e.Kind == pump.EventMessage && e.Listener == "run_command":
					once.Do(func() { close(running) })
				case e.Kind == pump.EventComplete && e.Thread == thread:
					select {
					case completed <- e.Error:
					default:
					}
				}
			}))
			l, _ := o.Pump.Lookup("sleeper")
			body := fmt.Sprintf(`<%s xmlns=""><Text>count slowly</Text></%[1]s>`, l.Payload.Name())
			ctx, cancel := context.WithTimeout(context.Background(), agentWait)
			defer cancel()
			if _, err := o.Pump.InjectAs(ctx, stage.AppendEnvelope(nil, alice.From, "sleeper", thread, []byte(body)),
				pump.OutletFunc(func(pump.Event) {}), alice); err != nil {
				t.Fatal(err)
			}
			select {
			case <-running:
			case <-ctx.Done():
				t.Fatal("run_command never got the agent's call")
			}
			if _, err := o.Pump.Cancel(thread); err != nil {
				t.Fatal(err)
			}
			select {
			case reason := <-completed:
				if reason != pump.CancelledReason {
					t.Fatalf("completion %q, want %q", reason, pump.CancelledReason)
				}
			case <-ctx.Done():
				t.Fatal("the cancelled conversation did not complete")
			}
			unsub()
			if restart {
				if err := o.Shutdown(ctx); err != nil {
					t.Fatal(err)
				}
				stopped = true
				o = durableAgents(t, m, dir, sleeper)
				stopped = false
			}

			got, err := askAs(t, o, alice, "sleeper", thread, "never mind")
			if err != nil || got != "a short answer" {
				t.Fatalf("the line after the cancel: %q, %v; want the model's answer", got, err)
			}
			reqs := m.requests("sleeper")
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2", len(reqs))
			}
			msgs := reqs[1].Messages
			var tail []string
			for _, msg := range msgs[max(0, len(msgs)-3):] {
				tail = append(tail, msg["role"]+": "+msg["content"])
			}
			want := []string{
				"tool: Error: Cancelled while it ran: the user cancelled the answer.", // a failed result reads "Error: …" to an openai model
				"user: [the user cancelled the previous answer]",
				"user: [From " + alice.From + "]\nnever mind",
			}
			if diff := cmp.Diff(want, tail); diff != "" {
				t.Errorf("the model's request after the cancel ends (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCancelWhileAPeerAgentWaits: the user cancels while the agent waits
// for a peer agent, itself waiting for its tool listener: the agent's next
// line is answered, reading its call to the peer as cancelled, and the
// peer's history is left with no call waiting either (its calls are
// followed by the cancel mark that voids them).
func TestCancelWhileAPeerAgentWaits(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{
		"boss": {
			toolCalls(scriptedCall{ID: "call_w", Name: "worker", Arguments: `{"Text":"count slowly"}`}),
			"a short answer",
		},
		"worker": {toolCalls(scriptedCall{ID: "call_s", Name: "run_command", Arguments: `{"Command":"sleep","Arg":["100"]}`})},
	})
	o := agentOrganism(t, m, `listeners:
  - name: boss
    agent: true
    description: Delegates
    prompt: You are boss.
    peers: [worker]
  - name: worker
    agent: true
    description: Runs commands
    prompt: You are worker.
    tools: [run_command]
    tool_config:
      run_command: {allowed_commands: [{command: sleep, args: ["{int}"]}]}
`)
	alice := pump.Principal{From: "api:alice", User: "alice"}
	thread := stage.NewThreadID()
	running := make(chan struct{})
	completed := make(chan string, 1)
	var once sync.Once
	unsub := o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		switch {
		case e.Kind == pump.EventMessage && e.Listener == "run_command":
			once.Do(func() { close(running) })
		case e.Kind == pump.EventComplete && e.Thread == thread:
			select {
			case completed <- e.Error:
			default:
			}
		}
	}))
	defer unsub()
	l, _ := o.Pump.Lookup("boss")
	body := fmt.Sprintf(`<%s xmlns=""><Text>delegate</Text></%[1]s>`, l.Payload.Name())
	ctx, cancel := context.WithTimeout(context.Background(), agentWait)
	defer cancel()
	if _, err := o.Pump.InjectAs(ctx, stage.AppendEnvelope(nil, alice.From, "boss", thread, []byte(body)),
		pump.OutletFunc(func(pump.Event) {}), alice); err != nil {
		t.Fatal(err)
	}
	select {
	case <-running:
	case <-ctx.Done():
		t.Fatal("run_command never got the worker's call")
	}
	// The worker's history, read before its thread ends with the
	// conversation: every thread of it whose slots hold the worker's calls.
	workerThreads := map[string]bool{}
	for _, id := range o.Pump.Context().Stats().Threads {
		if tc, ok := o.Pump.Context().Thread(id); ok {
			for _, s := range tc.Slots() {
				if s.From == "worker" && s.To == "" {
					workerThreads[id] = true
				}
			}
		}
	}
	if len(workerThreads) == 0 {
		t.Fatal("no history holds the worker's calls")
	}
	if _, err := o.Pump.Cancel(thread); err != nil {
		t.Fatal(err)
	}
	for id := range workerThreads {
		tc, ok := o.Pump.Context().Thread(id)
		if !ok {
			t.Errorf("the worker's history %s is gone after the cancel", id)
			continue
		}
		slots := tc.Slots()
		if last := slots[len(slots)-1]; last.PayloadType != xmlpipe.CancelMarkType {
			t.Errorf("the worker's history %s ends with %s from %q, want the cancel mark", id, last.PayloadType, last.From)
		}
	}
	select {
	case reason := <-completed:
		if reason != pump.CancelledReason {
			t.Fatalf("completion %q, want %q", reason, pump.CancelledReason)
		}
	case <-ctx.Done():
		t.Fatal("the cancelled conversation did not complete")
	}

	got, err := askAs(t, o, alice, "boss", thread, "never mind")
	if err != nil || got != "a short answer" {
		t.Fatalf("the line after the cancel: %q, %v; want the model's answer", got, err)
	}
	reqs := m.requests("boss")
	if len(reqs) != 2 {
		t.Fatalf("%d model requests of boss, want 2", len(reqs))
	}
	msgs := reqs[1].Messages
	var tail []string
	for _, msg := range msgs[max(0, len(msgs)-3):] {
		tail = append(tail, msg["role"]+": "+msg["content"])
	}
	want := []string{
		"tool: Error: Cancelled while it ran: the user cancelled the answer.", // a failed result reads "Error: …" to an openai model
		"user: [the user cancelled the previous answer]",
		"user: [From " + alice.From + "]\nnever mind",
	}
	if diff := cmp.Diff(want, tail); diff != "" {
		t.Errorf("boss's request after the cancel ends (-want +got):\n%s", diff)
	}
}
