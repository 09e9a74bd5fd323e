package llm

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/registry"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// benchTopics give the long conversation different subjects, so that
// relevance tells its segments apart.
var benchTopics = []string{
	"tomatoes need full sun, deep watering and weekly pruning of the suckers",
	"reef the mainsail early and check the halyards, shackles and bilge pump",
	"sourdough wants a lively starter, a long cold proof and a hot dutch oven",
	"the quarterly report shows revenue up and churn down in the northern region",
	"the kernel panics when the driver frees the buffer twice under memory pressure",
}

// BenchmarkLibrarianTurn measures what one model call's context costs the
// agent in a 500-message conversation (250 exchanges): reading the history
// and building the request. "plain" is the loop without a librarian (the
// history fitted to the window); "librarian" adds the curation — scoring
// every segment, folding by relevance, and with a small window folding and
// evicting to the budget — and recording the tiers.
func BenchmarkLibrarianTurn(b *testing.B) {
	for _, bc := range []struct {
		name   string
		window int
		lib    *Librarian
	}{
		{"plain/window=128k", 128000, nil},
		{"librarian/window=128k", 128000, &Librarian{FoldBelow: 0.08, UnfoldAbove: 0.2, KeepRecent: 4, MinFoldTokens: 16}},
		{"plain/window=8k", 8192, nil},
		{"librarian/window=8k", 8192, &Librarian{FoldBelow: 0.08, UnfoldAbove: 0.2, KeepRecent: 4, MinFoldTokens: 16}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cb, err := registry.NewContextBuffer(registry.ContextConfig{})
			if err != nil {
				b.Fatal(err)
			}
			own, err := InputType("mathbot")
			if err != nil {
				b.Fatal(err)
			}
			a := &Agent{Name: "mathbot", Prompt: "You are mathbot.", LLM: &chatFunc{t: b}, History: cb, Threads: fakeThreads{},
				ContextWindow: bc.window, Librarian: bc.lib,
				Lookup: func(name string) (*xmlpipe.PayloadType, bool) { return own, name == "mathbot" }}
			for i := range 250 {
				text := fmt.Sprintf("Message %d. About %s. %s", i, benchTopics[i%len(benchTopics)],
					strings.Repeat("More words on the matter at hand. ", 6))
				v, _ := stage.NewTextPayload(own.GoType(), text)
				raw, _ := own.AppendPayload(nil, v)
				if _, err := cb.Append(registry.Slot{ThreadID: "t", From: "console", To: "mathbot", PayloadType: own.Name(),
					Payload: v, Raw: raw}); err != nil {
					b.Fatal(err)
				}
				reply := fmt.Sprintf("Reply %d: noted about %s.", i, benchTopics[(i+1)%len(benchTopics)])
				if _, err := cb.Append(registry.Slot{ThreadID: "t", From: "mathbot", OwnName: "mathbot", PayloadType: replyType,
					Raw: []byte(reply)}); err != nil {
					b.Fatal(err)
				}
			}
			peers := []xmlpipe.Peer{{Name: "calc", Description: "Evaluates arithmetic", Payload: mustPT[Calc](b)}}
			box := a.toolbox(peers)
			tc, _ := cb.Thread("t")
			md := xmlpipe.Metadata{ThreadID: "t", From: "console", Peers: peers}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				st := &turnState{md: md, mode: NativeTools, session: "t", caller: "console"}
				st.c = a.readConvo(tc.Slots(), "console")
				req := a.request(ctx, st, box, nil)
				if len(req.Messages) < 3 {
					b.Fatal("no history")
				}
			}
		})
	}
}
