package bus

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry/store"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// Outside is the payload of the listener outside the profile tenant.
type Outside struct{ Note string }

// twoLeakyOrganism is the leaky organism with a second listener, outside
// the profile tenant.
func twoLeakyOrganism() buildFunc {
	c := catalog.Builtin()
	for _, typ := range []reflect.Type{reflect.TypeFor[Leak](), reflect.TypeFor[Outside]()} {
		name := "test." + typ.Name()
		c.AddPayload(catalog.Payload{Name: name, Type: typ})
		c.AddHandler(catalog.Handler{Name: name, Takes: typ, New: func(catalog.Env) xmlpipe.Handler {
			return xmlpipe.HandlerFunc(func(context.Context, any, xmlpipe.Metadata) (xmlpipe.Response, error) {
				return nil, nil
			})
		}})
	}
	return func(o organism.Options) (*organism.Organism, error) {
		cfg, err := config.Parse("leaky.yaml", []byte(leakyYAML+`  - name: outside
    payload_class: test.Outside
    handler: test.Outside
    description: Outside the profile tenant
`))
		if err != nil {
			return nil, err
		}
		o.Catalog = c
		return organism.New(cfg, o)
	}
}

// appendProfiled journals n envelopes of an ended conversation conv of
// profile tenant on its root thread (to leaky, or — outside — to listener
// when set on the last one) and returns their seqs.
func appendProfiled(t *testing.T, st *store.Store, conv string, n int, last string) []int64 {
	t.Helper()
	var seqs []int64
	for i := range n {
		to := "leaky"
		if i == n-1 && last != "" {
			to = last
		}
		seq, err := st.AppendSeq(store.Entry{Time: time.Now(), Thread: conv, Conversation: conv,
			Direction: store.Inbound, Kind: store.Message, From: "api:tenant", To: to, Listener: to,
			PayloadTag: "Leak", Profile: "tenant", Bytes: []byte(envelope("api:tenant", conv, fmt.Sprint("n", i)))})
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

// TestProfiledPollIsBounded: a user with a profile following an ended
// conversation of their profile (?after=SEQ, as the dashboard polls it)
// reads what is new, not the whole thread again at each poll to decide
// whether they may see it — and the decision is the one it was: a thread
// naming a listener outside the profile stays not found, even once its
// earlier envelopes were read by a poll.
func TestProfiledPollIsBounded(t *testing.T) {
	f := newFixtureWith(t, twoLeakyOrganism())
	secret := f.user("tenant", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "tenant", "tenant"); err != nil {
		t.Fatal(err)
	}
	tenant := f.login("tenant", secret)
	st := f.org.Store()
	const conv = "tenant-conversation"
	seqs := appendProfiled(t, st, conv, 2000, "")
	path := "/api/v1/threads/" + conv + "/messages?limit=1000&after="
	if status, body, _ := f.do("GET", path+"0", tenant, nil); status != http.StatusOK ||
		len(messageSeqs(t, body)) != 1000 {
		t.Fatalf("first page: %d %v", status, body)
	}

	more := appendProfiled(t, st, conv, 5, "")
	before := st.LookupRows()
	status, body, _ := f.do("GET", path+fmt.Sprint(seqs[len(seqs)-1]), tenant, nil)
	if status != http.StatusOK {
		t.Fatalf("poll: %d %v", status, body)
	}
	read := st.LookupRows() - before
	t.Logf("a profiled poll of a thread of %d envelopes read %d journal rows", len(seqs)+len(more), read)
	if d := cmp.Diff(more, messageSeqs(t, body)); d != "" {
		t.Errorf("the poll's messages (-want +got):\n%s", d)
	}
	// The new rows (read to page and to judge), and the thread's first.
	if read > 2*int64(len(more))+2 {
		t.Errorf("the poll read %d journal rows, want about the %d new ones", read, len(more))
	}

	// An envelope naming a listener outside the profile hides the thread,
	// at the next poll as at the first read.
	appendProfiled(t, st, conv, 1, "outside")
	for _, after := range []int64{more[len(more)-1], 0} {
		if status, _, _ := f.do("GET", path+fmt.Sprint(after), tenant, nil); status != http.StatusNotFound {
			t.Errorf("after=%d: a thread naming a listener outside the profile: %d, want 404", after, status)
		}
	}
}
