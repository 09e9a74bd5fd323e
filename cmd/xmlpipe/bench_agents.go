package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// agentBench is the result of `xmlpipe bench --agents`.
type agentBench struct {
	// Turns is how many agent turns the throughput phase completed.
	Turns int64 `json:"turns"`
	// TurnsPerSec is the throughput with Concurrency conversations in flight.
	TurnsPerSec float64 `json:"turns_per_sec"`
	Concurrency int     `json:"concurrency"`
	// P50 and P99 are one turn's overhead, one conversation at a time: the
	// latency from the console's send to the agent's answer, minus the
	// turn's two model calls as the agent's router timed them (ModelP50:
	// request out to reply decoded, loopback HTTP included) — the work of
	// the pump, the agent loop and the tool.
	P50      time.Duration `json:"overhead_p50_ns"`
	P99      time.Duration `json:"overhead_p99_ns"`
	ModelP50 time.Duration `json:"model_p50_ns"`
	// WireP50 and WireP99 are the same latency minus only the time the
	// model server spent in its handler (ServerP50): the loopback HTTP
	// exchanges count as overhead.
	WireP50   time.Duration `json:"wire_overhead_p50_ns"`
	WireP99   time.Duration `json:"wire_overhead_p99_ns"`
	ServerP50 time.Duration `json:"server_p50_ns"`
	Samples   int           `json:"samples"`
}

// benchModel is a loopback chat-completions server that answers at once:
// a request without a tool result gets a calculate tool call, one with the
// result gets the final answer. It records how long each answer took
// inside the handler.
type benchModel struct {
	mu    sync.Mutex
	spent []time.Duration
}

var (
	benchCall   = []byte(`{"model":"bench","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"calculate","arguments":"{\"Expression\":\"6*7\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`)
	benchAnswer = []byte(`{"model":"bench","choices":[{"message":{"role":"assistant","content":"42"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`)
	toolResult  = []byte(`"role":"tool"`)
)

func (m *benchModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, _ := io.ReadAll(r.Body)
	reply := benchCall
	if bytes.Contains(body, toolResult) {
		reply = benchAnswer
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(reply)
	d := time.Since(start)
	m.mu.Lock()
	m.spent = append(m.spent, d)
	m.mu.Unlock()
}

func (m *benchModel) take() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.spent
	m.spent = nil
	return out
}

// runAgentBench measures agent turns with a native tool call: a YAML agent
// with tools: [calculate] against a loopback model server that calls
// calculate, then answers with its result — two model calls and a tool
// round trip per turn.
func runAgentBench(ctx context.Context, duration time.Duration, concurrency int) (agentBench, error) {
	model := &benchModel{}
	srv := httptest.NewServer(model)
	defer srv.Close()
	doc := fmt.Sprintf(`organism: {name: bench-agents}
max_concurrent_handlers: %[2]d
max_concurrent_per_agent: %[2]d
llm:
  retries: 0
  backends:
    - {provider: openai, api_key: sk-bench, base_url: %[1]s, max_concurrent: %[2]d, rate_limit_tpm: 1000000000}
listeners:
  - {name: agent, agent: true, description: answers with a tool, prompt: Compute and answer in one word., tools: [calculate]}
`, srv.URL, max(concurrency, 1))
	cfg, err := config.Parse("bench-agents.yaml", []byte(doc))
	if err != nil {
		return agentBench{}, err
	}
	o, err := organism.New(cfg, organism.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return agentBench{}, err
	}
	if err := o.Start(); err != nil {
		return agentBench{}, err
	}
	defer o.Shutdown(context.Background())
	var callsMu sync.Mutex
	var calls []time.Duration
	o.LLM.SetOnCall(func(r llm.CallRecord) {
		callsMu.Lock()
		calls = append(calls, r.Duration)
		callsMu.Unlock()
	})
	takeCalls := func() []time.Duration {
		callsMu.Lock()
		defer callsMu.Unlock()
		out := calls
		calls = nil
		return out
	}
	l, _ := o.Pump.Lookup("agent")
	turn := func() (time.Duration, error) {
		v := reflect.New(l.Payload.GoType())
		v.Elem().FieldByName("Text").SetString("go")
		done := make(chan error, 1)
		start := time.Now()
		_, err := o.Pump.Send(ctx, "console", "agent", v.Interface(), pump.OutletFunc(func(e pump.Event) {
			switch e.Kind {
			case pump.EventReply:
				done <- nil
			case pump.EventHuh:
				done <- fmt.Errorf("agent turn failed: %s", e.Error)
			}
		}))
		if err != nil {
			return 0, err
		}
		select {
		case err := <-done:
			return time.Since(start), err
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	for range 200 { // warm up
		if _, err := turn(); err != nil {
			return agentBench{}, err
		}
	}
	model.take()
	takeCalls()
	const samples = 2000
	lat := make([]time.Duration, 0, samples)
	for range samples {
		d, err := turn()
		if err != nil {
			return agentBench{}, err
		}
		lat = append(lat, d)
	}
	spent, timed := model.take(), takeCalls()
	if len(spent) != 2*len(lat) || len(timed) != 2*len(lat) {
		return agentBench{}, fmt.Errorf("%d turns made %d model calls (%d timed), want two each", len(lat), len(spent), len(timed))
	}
	over, wire := make([]time.Duration, len(lat)), make([]time.Duration, len(lat))
	modelTime, serverTime := make([]time.Duration, len(lat)), make([]time.Duration, len(lat))
	for i, d := range lat { // sequential turns: the i-th made calls 2i and 2i+1
		modelTime[i], serverTime[i] = timed[2*i]+timed[2*i+1], spent[2*i]+spent[2*i+1]
		over[i], wire[i] = d-modelTime[i], d-serverTime[i]
	}
	for _, s := range [][]time.Duration{over, wire, modelTime, serverTime} {
		slices.Sort(s)
	}
	p := func(s []time.Duration, q int) time.Duration { return s[len(s)*q/100] }
	r := agentBench{Concurrency: concurrency, Samples: len(lat), ModelP50: p(modelTime, 50), P50: p(over, 50),
		P99: p(over, 99), ServerP50: p(serverTime, 50), WireP50: p(wire, 50), WireP99: p(wire, 99)}
	var turns atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, concurrency)
	deadline := time.Now().Add(duration)
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if _, err := turn(); err != nil {
					errs <- err
					return
				}
				turns.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return agentBench{}, err
	}
	r.Turns = turns.Load()
	r.TurnsPerSec = float64(r.Turns) / time.Since(start).Seconds()
	return r, nil
}

// String formats the result as the bench table does.
func (r agentBench) String() string {
	us := func(d time.Duration) string { return d.Round(time.Microsecond).String() }
	return fmt.Sprintf("agent turns          %10.0f  turns/s (%d turns, %d conversations in flight)\n"+
		"turn overhead p50    %10s  (send → tool call → result → answer, minus the 2 model calls: %s)\n"+
		"turn overhead p99    %10s  (%d sequential turns)\n"+
		"with loopback HTTP   %10s  p50, %s p99 (minus only the model server's handler: %s)\n",
		r.TurnsPerSec, r.Turns, r.Concurrency, us(r.P50), us(r.ModelP50), us(r.P99), r.Samples,
		us(r.WireP50), us(r.WireP99), us(r.ServerP50))
}

// printAgentBench prints r as text or JSON.
func printAgentBench(w io.Writer, r agentBench, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(w, string(b))
		return
	}
	fmt.Fprint(w, r.String())
}
