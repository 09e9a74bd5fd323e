package route

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// source is a Source whose set can change (a reload, an OOB registration).
type source struct {
	mu   sync.Mutex
	v    atomic.Uint64
	caps []Capability
}

func (s *source) Version() uint64 { return s.v.Load() }

func (s *source) Capabilities() []Capability {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Capability(nil), s.caps...)
}

func (s *source) set(caps []Capability) {
	s.mu.Lock()
	s.caps = caps
	s.mu.Unlock()
	s.v.Add(1)
}

func newRouter(t *testing.T, cfg Config) *Router {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func names(cs []Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func TestRankShipped(t *testing.T) {
	r := newRouter(t, Config{Source: Static(shipped(t))})
	for _, tc := range []struct{ need, first string }{
		{"I need to multiply six by seven", "calculate"},
		{"what is 6*7?", "calculate"},
		{"read the notes file", "files"},
		{"delete the temp files", "files"},
		{"fetch https://example.org/index.html", "fetch"},
		{"search the web for cats", "web_search"},
		{"remember that my name is Dan", "key_value"},
		{"run the date program", "run_command"},
		{"convert this xml to json", "xml_to_json"},
		{"store this document in the library", "librarian"},
		{"say hello to Dan", "greeter"},
		{"shout the greeting", "shouter"},
		{"print this on the console", "response-handler"},
	} {
		cs, err := r.Rank(context.Background(), tc.need, nil, 0)
		if err != nil {
			t.Fatalf("Rank(%q): %v", tc.need, err)
		}
		if len(cs) == 0 || cs[0].Name != tc.first {
			t.Errorf("Rank(%q) = %v, want %s first", tc.need, names(cs), tc.first)
			continue
		}
		for i := 1; i < len(cs); i++ {
			if cs[i].Score > cs[i-1].Score {
				t.Errorf("Rank(%q): not sorted: %v", tc.need, cs)
			}
		}
	}
}

// The dispatch table masks before filling (seed 000 §10.3): a masked
// capability is never a candidate, never filled, and when nothing allowed
// matches the answer is the refusal.
func TestMaskBeforeFill(t *testing.T) {
	var filled []string
	var mu sync.Mutex
	filler := FillerFunc(func(ctx context.Context, need string, c Capability) (Filled, error) {
		mu.Lock()
		filled = append(filled, c.Name)
		mu.Unlock()
		return Extractive{}.Fill(ctx, need, c)
	})
	r := newRouter(t, Config{Source: Static(shipped(t)), Filler: filler})
	ctx := context.Background()

	noFiles := Deny("files")
	for _, need := range []string{"read the notes file", "read notes/todo.txt", "delete the temp files", "list the files in notes"} {
		p, err := r.Plan(ctx, need, noFiles)
		for _, c := range p.Candidates {
			if c.Name == "files" {
				t.Errorf("Plan(%q) lists files although the mask denies it: %v", need, names(p.Candidates))
			}
		}
		if err == nil && p.Selected.Name == "files" {
			t.Errorf("Plan(%q) selected files", need)
		}
	}
	mu.Lock()
	for _, n := range filled {
		if n == "files" {
			t.Errorf("the filler ran for files, which the mask denies")
		}
	}
	filled = nil
	mu.Unlock()

	// Everything that matches is masked: the refusal, and no filler runs.
	_, err := r.Plan(ctx, "I need to multiply six by seven", Allow("greeter", "shouter"))
	var refusal *RefusalError
	if !errors.As(err, &refusal) || !errors.Is(err, ErrNoCapability) || err.Error() != "no matching capability in your profile" {
		t.Fatalf("all masked: err = %v, want the refusal", err)
	}
	// Nothing matching at all reads the same (no hint that a capability
	// outside the mask exists).
	_, err2 := r.Plan(ctx, "xyzzy plugh", nil)
	if !errors.Is(err2, ErrNoCapability) || err2.Error() != err.Error() {
		t.Fatalf("nothing matches: err = %v, want the same refusal", err2)
	}
	mu.Lock()
	if len(filled) != 0 {
		t.Errorf("the filler ran (%v) for a refused need", filled)
	}
	mu.Unlock()

	// Allowed: calculate is selected and filled.
	p, err := r.Plan(ctx, "I need to multiply six by seven", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Selected.Name != "calculate" || string(p.Fill.Payload) != `<Calculate xmlns=""><Expression>6*7</Expression></Calculate>` {
		t.Fatalf("plan: %s %s", p.Selected.Name, p.Fill.Payload)
	}
}

// The index follows the source: a capability added (a reload, a listener
// registered over OOB) is ranked at the next request, one removed is gone.
func TestIndexFollowsSource(t *testing.T) {
	all := shipped(t)
	var calc Capability
	var rest []Capability
	for _, c := range all {
		if c.Name == "calculate" {
			calc = c
		} else {
			rest = append(rest, c)
		}
	}
	src := &source{}
	src.set(rest)
	r := newRouter(t, Config{Source: src})
	ctx := context.Background()
	cs, err := r.Rank(ctx, "multiply six by seven", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) > 0 && cs[0].Name == "calculate" {
		t.Fatalf("calculate ranked before it exists: %v", names(cs))
	}
	src.set(append(rest, calc))
	cs, err = r.Rank(ctx, "multiply six by seven", nil, 0)
	if err != nil || len(cs) == 0 || cs[0].Name != "calculate" {
		t.Fatalf("after adding calculate: %v, %v", names(cs), err)
	}
	src.set(rest)
	cs, _ = r.Rank(ctx, "multiply six by seven", nil, 0)
	for _, c := range cs {
		if c.Name == "calculate" {
			t.Fatalf("calculate still ranked after its removal: %v", names(cs))
		}
	}
}

func TestRouteDispatches(t *testing.T) {
	var got struct {
		to      string
		payload string
	}
	d := DispatchFunc(func(_ context.Context, to string, payload []byte) (Dispatched, error) {
		got.to, got.payload = to, string(payload)
		return Dispatched{Thread: "t-1", Answer: []byte("<CalculateResult><Expression>6*7</Expression><Value>42</Value></CalculateResult>")}, nil
	})
	base := newRouter(t, Config{Source: Static(shipped(t))})
	if _, err := base.Route(context.Background(), "multiply six by seven", nil); !errors.Is(err, ErrNoDispatcher) {
		t.Fatalf("Route without a dispatcher: %v", err)
	}
	r := base.WithDispatcher(d)
	res, err := r.Route(context.Background(), "I need to multiply six by seven", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.to != "calculate" || got.payload != `<Calculate xmlns=""><Expression>6*7</Expression></Calculate>` {
		t.Fatalf("dispatched %q to %q", got.payload, got.to)
	}
	if res.Dispatched.Thread != "t-1" || res.Fill.By != ExtractiveName {
		t.Fatalf("result: %+v", res)
	}
	text, isErr := ToolAnswer(res, nil)
	if isErr || !strings.Contains(text, "calculate handled it") || !strings.Contains(text, "<Value>42</Value>") {
		t.Fatalf("ToolAnswer: %q %v", text, isErr)
	}
	// A dispatch failure (the pump refused: the router is advisory) is
	// reported as such.
	refuse := DispatchFunc(func(context.Context, string, []byte) (Dispatched, error) {
		return Dispatched{}, errors.New("no such capability")
	})
	if _, err := base.WithDispatcher(refuse).Route(context.Background(), "multiply six by seven", nil); err == nil ||
		!strings.Contains(err.Error(), "dispatch to calculate: no such capability") {
		t.Fatalf("dispatch failure: %v", err)
	}
	// Refusals read as the refusal in a tool answer.
	_, err = r.Route(context.Background(), "multiply six by seven", Allow("greeter"))
	if text, isErr := ToolAnswer(Result{}, err); !isErr || text != "no matching capability in your profile" {
		t.Fatalf("refusal tool answer: %q %v", text, isErr)
	}
	if _, err := r.Rank(context.Background(), "  ", nil, 0); !errors.Is(err, ErrEmptyNeed) {
		t.Fatalf("empty need: %v", err)
	}
	if _, err := r.Rank(context.Background(), strings.Repeat("multiply ", MaxNeedBytes), nil, 0); !errors.Is(err, ErrNeedTooLong) {
		t.Fatalf("long need: %v", err)
	}
}

func TestToolArgs(t *testing.T) {
	spec := ToolSpec()
	if spec.Name != "route" || len(spec.Parameters) == 0 {
		t.Fatalf("spec: %+v", spec)
	}
	for _, tc := range []struct {
		args, need string
		ok         bool
	}{
		{`{"need":"read notes/a.txt"}`, "read notes/a.txt", true},
		{`{"need":""}`, "", false},
		{`{}`, "", false},
		{`{"need":"x","other":1}`, "", false},
		{`not json`, "", false},
		{`{"need":5}`, "", false},
	} {
		need, err := ParseToolArgs([]byte(tc.args))
		if (err == nil) != tc.ok || need != tc.need {
			t.Errorf("ParseToolArgs(%s) = %q, %v", tc.args, need, err)
		}
	}
}
