package llm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHistoryTools: the tools of the agent loop's own records, read from
// the records as the loop writes them; an unreadable record says so; any
// other slot is not a tool record.
func TestHistoryTools(t *testing.T) {
	calls := mustJSON(&callsRecord{Content: "x", Calls: []storedCall{{ID: "1", Name: "remember"}, {ID: "2", Name: "files"}}})
	result := mustJSON(resultRecord{ID: "1", Name: "recall", Content: "the memories"})
	held := mustJSON(&heldStep{Calls: []storedCall{{ID: "1", Name: "remember"}, {ID: "2", Name: "route"}},
		Results: []resultRecord{{ID: "3", Name: "recall", Content: "the memories"}}})
	tests := []struct {
		name, typ string
		raw       []byte
		want      []string
		ok, err   bool
	}{
		{"calls", callsType, calls, []string{"remember", "files"}, true, false},
		{"result", resultType, result, []string{"recall"}, true, false},
		{"unreadable calls", callsType, []byte("{"), nil, true, true},
		{"held step", heldStepType, held, []string{"remember", "route", "recall"}, true, false},
		{"unreadable held step", heldStepType, []byte("{"), nil, true, true},
		{"a reply", replyType, []byte("text"), nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := HistoryTools(tt.typ, tt.raw)
			if ok != tt.ok || (err != nil) != tt.err {
				t.Fatalf("ok %v err %v, want ok %v err %v", ok, err, tt.ok, tt.err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
		})
	}
}
