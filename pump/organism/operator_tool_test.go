package organism

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// operatorWait bounds the waits of TestOperatorActionWhileAToolRuns:
// generous, for a loaded 2-core machine under -race.
const operatorWait = 2 * time.Minute

// operatorAgent is the agent of TestOperatorActionWhileAToolRuns: its
// prompt names it sleeper for the scripted model.
func operatorAgent(prompt string) string {
	return `listeners:
  - name: sleeper
    agent: true
    description: Runs commands
    prompt: ` + prompt + `
    tools: [run_command]
    tool_config:
      run_command: {allowed_commands: [{command: sleep, args: ["{int}"]}]}
`
}

// TestOperatorActionWhileAToolRuns: an operator's action on a conversation
// whose agent waits for the program its tool call runs (run_command sleep)
// never takes the organism down, stops the program when it stops the work
// (no process left behind), and the conversation is usable after it: the
// user's next line is answered — on the same thread after a cancel, a
// halt and resume, or a reload; on a new one after a kill, which ends the
// conversation for good and refuses a line on its thread.
func TestOperatorActionWhileAToolRuns(t *testing.T) {
	for _, tc := range []struct {
		name string
		// seconds run_command sleeps: long when the action must stop it.
		seconds int
		// act acts on the organism o while sleep runs for the line sent
		// on thread; reload reloads o with the agent its argument is.
		act func(t *testing.T, o *Organism, thread string, reload func(agent string))
		// stops: the action ends the program.
		stops bool
		// completion is how the first line's turn ends: the Error of its
		// completion ("" when it is answered).
		completion string
		// resultWant is what the model reads as the call's result in its
		// request after the first line's.
		resultWant string
	}{
		{name: "cancel", seconds: 1001, stops: true, completion: pump.CancelledReason,
			resultWant: "Cancelled while it ran",
			act: func(t *testing.T, o *Organism, thread string, _ func(string)) {
				if _, err := o.Pump.Cancel(thread); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "kill", seconds: 1002, stops: true, completion: pump.KilledReason,
			act: func(t *testing.T, o *Organism, thread string, _ func(string)) {
				if _, err := o.Pump.Kill(thread); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "halt all and resume", seconds: 3, stops: true, resultWant: `"ExitCode":0`,
			act: func(t *testing.T, o *Organism, _ string, _ func(string)) {
				if _, err := o.Governance().Halt("test", pump.HaltAll); err != nil {
					t.Fatal(err)
				}
				// The program stops during the halt; its call waits in the
				// queue and runs again after the resume.
				waitProcess(t, 3, false)
				if !o.Governance().Resume("test") {
					t.Fatal("Resume: no halt in force")
				}
			}},
		{name: "reload", seconds: 2, resultWant: `"ExitCode":0`,
			act: func(_ *testing.T, _ *Organism, _ string, reload func(string)) {
				reload(operatorAgent("You are sleeper. Be brief."))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newScriptedModel(t, map[string][]string{"sleeper": {
				toolCalls(scriptedCall{ID: "call_1", Name: "run_command",
					Arguments: fmt.Sprintf(`{"Command":"sleep","Arg":["%d"]}`, tc.seconds)}),
				"a short answer",
			}})
			dir := t.TempDir()
			o := reloadOrganism(t, dir, reloadHead(m.URL)+operatorAgent("You are sleeper."))
			alice := pump.Principal{From: "api:alice", User: "alice"}
			thread := stage.NewThreadID()
			first := sendLine(t, o, alice, thread, "count slowly")
			waitProcess(t, tc.seconds, true)

			tc.act(t, o, thread, func(agent string) {
				if _, err := o.Reload(parseIn(t, dir, reloadHead(m.URL)+agent)); err != nil {
					t.Fatal(err)
				}
			})
			if tc.stops {
				waitProcess(t, tc.seconds, false)
			}
			if got := first.outcome(t); got != tc.completion {
				t.Fatalf("the first line's turn ended with %q; want %q", got, tc.completion)
			}
			if !tc.stops {
				waitProcess(t, tc.seconds, false) // ended by itself
			}

			next := thread
			if tc.completion == pump.KilledReason {
				_, err := o.Pump.InjectAs(t.Context(), lineEnvelope(t, o, alice, thread, "never mind"),
					pump.OutletFunc(func(pump.Event) {}), alice)
				if !errors.Is(err, pump.ErrConversationKilled) {
					t.Fatalf("a line on the killed conversation: %v; want ErrConversationKilled", err)
				}
				next = stage.NewThreadID()
			}
			if got := sendLine(t, o, alice, next, "never mind").outcome(t); got != "" {
				t.Fatalf("the next line's turn ended with %q; want it answered", got)
			}
			reqs := m.requests("sleeper")
			last := reqs[len(reqs)-1].Messages
			if c := last[len(last)-1]["content"]; !strings.HasSuffix(c, "never mind") {
				t.Errorf("the model's last request ends with %q; want the next line", c)
			}
			if tc.resultWant == "" {
				return
			}
			var results []string
			for _, msg := range last {
				if msg["role"] == "tool" {
					results = append(results, msg["content"])
				}
			}
			if len(results) != 1 || !strings.Contains(results[0], tc.resultWant) {
				t.Errorf("the call's result as the model reads it at the next line: %q; want one containing %q",
					results, tc.resultWant)
			}
		})
	}
}

// line is an outside line's turn: what it was answered, how it ended.
type line struct {
	mu       sync.Mutex
	answered bool
	done     chan string // the completion's Error
}

// outcome waits for the turn's completion and returns its Error, "" only
// when the line was answered.
func (l *line) outcome(t *testing.T) string {
	t.Helper()
	select {
	case reason := <-l.done:
		l.mu.Lock()
		defer l.mu.Unlock()
		if reason == "" && !l.answered {
			return "(completed without an answer)"
		}
		return reason
	case <-time.After(operatorWait):
		t.Fatalf("the line's turn did not complete within %v", operatorWait)
		return ""
	}
}

// lineEnvelope is text from who to sleeper on thread.
func lineEnvelope(t *testing.T, o *Organism, who pump.Principal, thread, text string) []byte {
	t.Helper()
	l, ok := o.Pump.Lookup("sleeper")
	if !ok {
		t.Fatal("no listener sleeper")
	}
	body := fmt.Sprintf(`<%s xmlns=""><Text>%s</Text></%[1]s>`, l.Payload.Name(), text)
	return stage.AppendEnvelope(nil, who.From, "sleeper", thread, []byte(body))
}

// sendLine sends text from who to sleeper on thread.
func sendLine(t *testing.T, o *Organism, who pump.Principal, thread, text string) *line {
	t.Helper()
	l := &line{done: make(chan string, 1)}
	var once sync.Once
	if _, err := o.Pump.InjectAs(t.Context(), lineEnvelope(t, o, who, thread, text), pump.OutletFunc(func(e pump.Event) {
		switch {
		case e.Kind == pump.EventReply:
			if a, ok := e.Payload.(*llm.Answer); ok && a.Text == "a short answer" {
				l.mu.Lock()
				l.answered = true
				l.mu.Unlock()
			}
		case e.Kind == pump.EventComplete:
			once.Do(func() { l.done <- e.Error })
		}
	}), who); err != nil {
		t.Fatal(err)
	}
	return l
}

// waitProcess waits until a "sleep seconds" this process started runs
// (running) or none does, failing the test after operatorWait.
func waitProcess(t *testing.T, seconds int, running bool) {
	t.Helper()
	for deadline := time.Now().Add(operatorWait); sleeping(t, seconds) != running; {
		if time.Now().After(deadline) {
			t.Fatalf("sleep %d running: %v, still not %v after %v", seconds, !running, running, operatorWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sleeping reports whether a child of this process runs "sleep seconds".
func sleeping(t *testing.T, seconds int) bool {
	t.Helper()
	want := []byte("sleep\x00" + strconv.Itoa(seconds) + "\x00")
	me := strconv.Itoa(os.Getpid())
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		cmd, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !bytes.Equal(cmd, want) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid …: comm is "sleep", no spaces.
		if f := strings.Fields(string(stat)); len(f) > 3 && f[3] == me && f[2] != "Z" {
			return true
		}
	}
	return false
}

// heldModel is a loopback OpenAI-protocol server whose first request
// waits — until the client closes it (closed is closed then) or release
// is closed — and whose every answer is "a short answer".
type heldModel struct {
	*httptest.Server
	started, closed, release chan struct{}
	n                        atomic.Int32
}

func newHeldModel(t *testing.T) *heldModel {
	m := &heldModel{started: make(chan struct{}), closed: make(chan struct{}), release: make(chan struct{})}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		if m.n.Add(1) == 1 {
			close(m.started)
			select {
			case <-r.Context().Done():
				close(m.closed)
				return
			case <-m.release:
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": "a short answer"}, "finish_reason": "stop"}}})
	}))
	t.Cleanup(func() {
		select {
		case <-m.release:
		default:
			close(m.release)
		}
		m.Close()
	})
	return m
}

// TestOperatorActionWhileTheModelAnswers: an operator's action on a
// conversation whose agent waits for its model stops that request when it
// stops the work, and the user's next line is answered — on the same
// thread after a cancel, a halt and resume (which first answers the line
// the halt held), or a reload (which lets the request finish); on a new
// one after a kill.
func TestOperatorActionWhileTheModelAnswers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		act        func(t *testing.T, o *Organism, thread string, reload func(agent string))
		aborts     bool   // the action closes the model request
		completion string // how the first line's turn ends ("": answered)
	}{
		{name: "cancel", aborts: true, completion: pump.CancelledReason,
			act: func(t *testing.T, o *Organism, thread string, _ func(string)) {
				if _, err := o.Pump.Cancel(thread); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "kill", aborts: true, completion: pump.KilledReason,
			act: func(t *testing.T, o *Organism, thread string, _ func(string)) {
				if _, err := o.Pump.Kill(thread); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "halt agents and resume", aborts: true,
			act: func(t *testing.T, o *Organism, _ string, _ func(string)) {
				if _, err := o.Governance().Halt("test", pump.HaltAgents); err != nil {
					t.Fatal(err)
				}
				if !o.Governance().Resume("test") {
					t.Fatal("Resume: no halt in force")
				}
			}},
		{name: "reload",
			act: func(_ *testing.T, _ *Organism, _ string, reload func(string)) {
				reload(operatorAgent("You are sleeper. Be brief."))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newHeldModel(t)
			dir := t.TempDir()
			o := reloadOrganism(t, dir, reloadHead(m.URL)+operatorAgent("You are sleeper."))
			alice := pump.Principal{From: "api:alice", User: "alice"}
			thread := stage.NewThreadID()
			first := sendLine(t, o, alice, thread, "count slowly")
			select {
			case <-m.started:
			case <-time.After(operatorWait):
				t.Fatalf("the model was not asked within %v", operatorWait)
			}
			tc.act(t, o, thread, func(agent string) {
				if _, err := o.Reload(parseIn(t, dir, reloadHead(m.URL)+agent)); err != nil {
					t.Fatal(err)
				}
			})
			if tc.aborts {
				select {
				case <-m.closed:
				case <-time.After(operatorWait):
					t.Fatalf("the model request was not closed within %v of the %s", operatorWait, tc.name)
				}
			} else {
				close(m.release)
			}
			if got := first.outcome(t); got != tc.completion {
				t.Fatalf("the first line's turn ended with %q; want %q", got, tc.completion)
			}
			next := thread
			if tc.completion == pump.KilledReason {
				next = stage.NewThreadID()
			}
			if got := sendLine(t, o, alice, next, "never mind").outcome(t); got != "" {
				t.Fatalf("the next line's turn ended with %q; want it answered", got)
			}
		})
	}
}

// TestCancelWhileAToolResultIsOnItsWay: the program ended and its result
// waits to reach the agent (the agent's listener paused) when the user
// cancels: the result is dropped with the cancelled answer, and the next
// line is answered, the model reading the call as cancelled rather than
// waiting for a result that never comes.
func TestCancelWhileAToolResultIsOnItsWay(t *testing.T) {
	m := newScriptedModel(t, map[string][]string{"sleeper": {
		toolCalls(scriptedCall{ID: "call_1", Name: "run_command", Arguments: `{"Command":"sleep","Arg":["1"]}`}),
		"a short answer",
	}})
	o := reloadOrganism(t, t.TempDir(), reloadHead(m.URL)+operatorAgent("You are sleeper."))
	result := make(chan struct{})
	var once sync.Once
	defer o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventMessage && e.Listener == "sleeper" && e.From == "run_command" {
			once.Do(func() { close(result) })
		}
	}))()
	alice := pump.Principal{From: "api:alice", User: "alice"}
	thread := stage.NewThreadID()
	first := sendLine(t, o, alice, thread, "count slowly")
	waitProcess(t, 1, true)
	if err := o.Pump.Pause("sleeper"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-result:
	case <-time.After(operatorWait):
		t.Fatalf("run_command's result did not reach the paused agent's queue within %v", operatorWait)
	}
	if _, err := o.Pump.Cancel(thread); err != nil {
		t.Fatal(err)
	}
	if got := first.outcome(t); got != pump.CancelledReason {
		t.Fatalf("the first line's turn ended with %q; want %q", got, pump.CancelledReason)
	}
	if err := o.Pump.Resume("sleeper"); err != nil {
		t.Fatal(err)
	}
	if got := sendLine(t, o, alice, thread, "never mind").outcome(t); got != "" {
		t.Fatalf("the next line's turn ended with %q; want it answered", got)
	}
	reqs := m.requests("sleeper")
	if len(reqs) != 2 {
		t.Fatalf("%d model requests; want 2 (the call, the next line)", len(reqs))
	}
	var results []string
	for _, msg := range reqs[1].Messages {
		if msg["role"] == "tool" {
			results = append(results, msg["content"])
		}
	}
	if len(results) != 1 || !strings.Contains(results[0], "Cancelled while it ran") {
		t.Errorf("the call's result as the model reads it at the next line: %q; want it cancelled", results)
	}
}
