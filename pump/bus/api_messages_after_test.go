package bus

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// appendConversation journals n envelopes of conversation conv, turn about
// on its root thread (conv) and on a child thread, and returns their seqs.
func appendConversation(t *testing.T, st *store.Store, conv string, n int) []int64 {
	t.Helper()
	var seqs []int64
	for i := range n {
		thread := conv
		if i%2 == 1 {
			thread = conv + "-child"
		}
		seq, err := st.AppendSeq(store.Entry{Time: time.Now(), Thread: thread, Conversation: conv,
			Direction: store.Inbound, Kind: store.Message, From: "client", To: "greeter", Listener: "greeter",
			PayloadTag: "Greeting", Bytes: []byte(envelope("client", thread, fmt.Sprint("n", i)))})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	if err := st.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return seqs
}

// messageSeqs returns the seqs of a /messages answer's messages.
func messageSeqs(t *testing.T, body map[string]any) []int64 {
	t.Helper()
	var out []int64
	for _, m := range body["messages"].([]any) {
		out = append(out, int64(m.(map[string]any)["seq"].(float64)))
	}
	return out
}

// TestConversationMessagesAfter: ?after=SEQ pages a long conversation by
// its journal seqs, and a poll for what is new reads only the new rows
// from the journal — not the whole conversation, as the dashboard's poll
// of an open conversation did every second.
func TestConversationMessagesAfter(t *testing.T) {
	f := newFixture(t)
	ada := f.loginAs("ada", auth.Admin)
	st := f.org.Store()
	const conv = "long-conversation"
	seqs := appendConversation(t, st, conv, 3000)
	path := "/api/v1/threads/" + conv + "/messages?scope=conversation&limit=1000&after="

	// Paged by the last seq each page ends at, the conversation comes whole
	// and in order.
	var got []int64
	for after, pages := int64(0), 0; ; pages++ {
		if pages == 4 {
			t.Fatalf("4 pages of 1000 and the conversation of %d goes on: after is not a cursor", len(seqs))
		}
		status, body, _ := f.do("GET", path+fmt.Sprint(after), ada, nil)
		if status != http.StatusOK {
			t.Fatalf("page after %d: %d %v", after, status, body)
		}
		page := messageSeqs(t, body)
		got = append(got, page...)
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1]
	}
	if d := cmp.Diff(seqs, got); d != "" {
		t.Fatalf("the conversation paged by after (-want +got):\n%s", d)
	}

	// Five more envelopes: the poll after the last one known reads them,
	// not the 3000 before.
	last := seqs[len(seqs)-1]
	more := appendConversation(t, st, conv, 5)
	before := st.LookupRows()
	status, body, _ := f.do("GET", path+fmt.Sprint(last), ada, nil)
	if status != http.StatusOK {
		t.Fatalf("poll: %d %v", status, body)
	}
	read := st.LookupRows() - before
	t.Logf("the poll of a conversation of %d envelopes read %d journal rows", len(seqs)+len(more), read)
	if d := cmp.Diff(more, messageSeqs(t, body)); d != "" {
		t.Errorf("the poll's messages (-want +got):\n%s", d)
	}
	// The new rows, and the thread's first entry (which names its
	// conversation).
	if read > int64(len(more))+1 {
		t.Errorf("the poll read %d journal rows, want the %d new ones (and the thread's first)", read, len(more))
	}

	// A thread's own messages page the same way.
	status, body, _ = f.do("GET", "/api/v1/threads/"+conv+"-child/messages?after="+fmt.Sprint(last), ada, nil)
	if status != http.StatusOK {
		t.Fatalf("thread poll: %d %v", status, body)
	}
	if d := cmp.Diff([]int64{more[1], more[3]}, messageSeqs(t, body)); d != "" {
		t.Errorf("the child thread's new messages (-want +got):\n%s", d)
	}

	for _, bad := range []string{"-1", "x", "1.5"} {
		if status, body, _ := f.do("GET", path+bad, ada, nil); status != http.StatusBadRequest {
			t.Errorf("after=%s: %d %v, want 400", bad, status, body)
		}
	}
}
