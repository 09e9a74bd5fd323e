package bus

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestThreadListShowsRefusedMessages: a conversation whose only message
// was refused before its handler (a payload that breaks the schema) is an
// error in the thread list, as in the thread's own answer — the list is
// what the dashboard's feed shows.
func TestThreadListShowsRefusedMessages(t *testing.T) {
	f := newFixture(t)
	tokens := f.tokens()
	op, viewer := tokens[auth.Operator], tokens[auth.Viewer]
	c := f.dial("/bus", op)
	thread := stage.NewThreadID()
	sendRaw(t, c, `<message xmlns="https://xml-pipeline.org/ns/envelope/v1"><meta><from>websocket:user-operator</from>`+
		`<to>greeter</to><thread>`+thread+`</thread></meta><Greeting xmlns=""><Nam>Dan</Nam></Greeting></message>`)
	readMessage(t, c) // the <huh>
	f.waitJournal()

	statuses := map[string]string{}
	if status, body, _ := f.do(http.MethodGet, "/api/v1/threads/"+thread, viewer, nil); status == http.StatusOK {
		statuses["thread"], _ = body["status"].(string)
	} else {
		t.Fatalf("thread %s: %d %v", thread, status, body)
	}
	for _, q := range []string{"", "&status=error"} {
		status, body, _ := f.do(http.MethodGet, "/api/v1/threads?limit=50"+q, viewer, nil)
		if status != http.StatusOK {
			t.Fatalf("threads%s: %d %v", q, status, body)
		}
		list, _ := body["threads"].([]any)
		for _, row := range list {
			if r := row.(map[string]any); r["id"] == thread {
				statuses["list"+q], _ = r["status"].(string)
			}
		}
	}
	want := map[string]string{"thread": "error", "list": "error", "list&status=error": "error"}
	if diff := cmp.Diff(want, statuses); diff != "" {
		t.Errorf("the refused conversation's status (-want +got):\n%s", diff)
	}
}
