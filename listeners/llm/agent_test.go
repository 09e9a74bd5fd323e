package llm

import (
	"context"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// streamingModel replies with deltas through the request's OnDelta.
type streamingModel struct{ deltas []string }

func (m streamingModel) Chat(_ context.Context, r Request) (Reply, error) {
	for _, d := range m.deltas {
		if r.OnDelta != nil {
			r.OnDelta(Delta{Text: d})
		}
	}
	return Reply{Content: strings.Join(m.deltas, ""), Usage: Usage{Requests: 1}}, nil
}

func TestAgentStreamsProseOnly(t *testing.T) {
	tests := []struct {
		name   string
		deltas []string
		shown  string
		raw    bool
	}{
		{"answer", []string{"Rain ", "falls", ".\nSoftly."}, "Rain falls.\nSoftly.", false},
		{"prose then a message", []string{"I will ask the poet. <Po", "etTask><Text>x</Text></PoetTask>"}, "I will ask the poet. ", true},
		{"less-than in prose", []string{"a < b ", "and b > a"}, "a < b and b > a", false},
		{"split at the bracket", []string{"ok <", "PoetTask/>"}, "ok ", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cb, err := registry.NewContextBuffer(registry.ContextConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cb.Append(registry.Slot{ThreadID: "t", From: "console", To: "poet", PayloadType: "PoetTask",
				Raw: []byte("<PoetTask><Text>go</Text></PoetTask>")}); err != nil {
				t.Fatal(err)
			}
			var shown strings.Builder
			ends := 0
			a := &Agent{Name: "poet", LLM: streamingModel{tc.deltas}, History: cb,
				OnDelta: func(agent, thread, d string, end bool) {
					if agent != "poet" || thread != "t" {
						t.Errorf("delta for %s on %s", agent, thread)
					}
					if end {
						ends++
					}
					shown.WriteString(d)
				}}
			resp, err := a.Handle(context.Background(), nil, xmlpipe.Metadata{ThreadID: "t", From: "console", OwnName: "poet"})
			if err != nil {
				t.Fatal(err)
			}
			if shown.String() != tc.shown || ends != 1 {
				t.Errorf("shown %q (ends %d), want %q", shown.String(), ends, tc.shown)
			}
			if _, isRaw := resp.(*xmlpipe.RawResponse); isRaw != tc.raw {
				t.Errorf("response %T", resp)
			}
		})
	}
}
