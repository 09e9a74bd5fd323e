package organism

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/llm"
)

// TestCallBookInMemory: an in-memory organism's call book keeps the newest
// 256 calls, numbered in order, lists them newest last per conversation,
// and tells its subscribers of each.
func TestCallBookInMemory(t *testing.T) {
	b := newCallBook(nil, nil)
	heard := 0
	cancel := b.subscribe(func(Call) { heard++ })
	for i := range 300 {
		rec := llm.CallRecord{Start: time.Unix(int64(i), 0), Backend: "local", Model: "m", Agent: "poet",
			Thread: fmt.Sprintf("conv-%d", i%2), Attempt: 1, Usage: llm.Usage{PromptTokens: i}}
		if i == 299 {
			rec.Err = errors.New("HTTP 503")
		}
		b.observe(rec)
	}
	cancel()
	b.observe(llm.CallRecord{Backend: "local"})
	if heard != 300 {
		t.Errorf("the subscriber heard %d calls, want 300", heard)
	}
	last := b.recent("", 3)
	if len(last) != 3 || last[0].ID != 299 || last[2].ID != 301 || last[1].Error != "HTTP 503" {
		t.Errorf("newest three: %+v", last)
	}
	odd := b.recent("conv-1", 1000)
	if len(odd) != 128 || odd[0].ID != 46 || odd[len(odd)-1].ID != 300 || odd[0].Conversation != "conv-1" {
		t.Errorf("conv-1 kept %d calls, %d to %d; want the 128 of the newest 256", len(odd), odd[0].ID, odd[len(odd)-1].ID)
	}
}
