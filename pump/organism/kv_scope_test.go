package organism

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/tools/kv"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestKeyValueAcrossUsers is issue 30's key_value hole, through the pump
// with two authenticated principals: user B, who sees user A's thread ids
// (any viewer of the event stream does), names A's thread namespace
// (<Namespace>thread:$T</Namespace>) to read and overwrite A's value. It is
// refused; named namespaces are per user unless tool_config shares them.
func TestKeyValueAcrossUsers(t *testing.T) {
	path := writeOrganism(t, `organism: {name: kv-scope}
listeners:
  - name: key_value
    payload_class: tools.KeyValue
    handler: tools.KeyValue
    description: values for everyone
    tool_config:
      key_value: {shared_namespaces: [team]}
`)
	o, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())

	// What a viewer sees: the thread every message to key_value ran on.
	var mu sync.Mutex
	seen := map[string]string{} // first payload line → thread
	defer o.Pump.Subscribe(pump.OutletFunc(func(e pump.Event) {
		if e.Kind == pump.EventMessage && e.Listener == "key_value" {
			if p, ok := e.Payload.(*kv.KeyValue); ok {
				mu.Lock()
				seen[p.Op+" "+p.Key+" "+p.Value] = e.Thread
				mu.Unlock()
			}
		}
	}))()

	alice := pump.Principal{From: "api:alice", User: "alice"}
	bob := pump.Principal{From: "api:bob", User: "bob"}
	call := func(who pump.Principal, thread, body string) *kv.KeyValueResult {
		t.Helper()
		c := make(collector, 64)
		env := stage.AppendEnvelope(nil, who.From, "key_value", thread, []byte(`<KeyValue xmlns="">`+body+`</KeyValue>`))
		if _, err := o.Pump.InjectAs(context.Background(), env, c, who); err != nil {
			t.Fatalf("%s: %s: %v", who.From, body, err)
		}
		e := c.await(t, pump.EventReply, pump.EventHuh)
		r, ok := e.Payload.(*kv.KeyValueResult)
		if e.Kind != pump.EventReply || !ok {
			t.Fatalf("%s: %s: %s %s %T", who.From, body, e.Kind, e.Error, e.Payload)
		}
		return r
	}

	tA := stage.NewThreadID()
	if r := call(alice, tA, `<Op>set</Op><Key>k</Key><Value>alice-secret</Value>`); r.Error != "" {
		t.Fatalf("alice set: %+v", r)
	}
	mu.Lock()
	victim := seen["set k alice-secret"]
	mu.Unlock()
	if victim == "" {
		t.Fatal("the viewer saw no thread")
	}
	for _, named := range []string{"thread:" + victim, "thread:" + tA, "conversation:" + victim, "conversation:" + tA} {
		ns := "<Namespace>" + named + "</Namespace>"
		if r := call(bob, stage.NewThreadID(), `<Op>get</Op><Key>k</Key>`+ns); r.Found || r.Value != "" ||
			!strings.Contains(r.Error, "reachable only from that conversation") {
			t.Fatalf("bob read alice's thread value: %+v", r)
		}
		if r := call(bob, stage.NewThreadID(), `<Op>set</Op><Key>k</Key><Value>bob-was-here</Value>`+ns); r.Error == "" {
			t.Fatalf("bob wrote alice's thread namespace: %+v", r)
		}
		if r := call(bob, stage.NewThreadID(), `<Op>delete</Op><Key>k</Key>`+ns); r.Error == "" || r.Found {
			t.Fatalf("bob deleted from alice's thread namespace: %+v", r)
		}
	}
	if r := call(alice, tA, `<Op>get</Op><Key>k</Key>`); !r.Found || r.Value != "alice-secret" {
		t.Fatalf("alice's value after bob's attempts: %+v", r)
	}

	// Named namespaces are per user; "team" is shared by the configuration.
	if r := call(alice, stage.NewThreadID(), `<Op>set</Op><Key>k</Key><Value>alice-notes</Value><Namespace>notes</Namespace>`); r.Error != "" {
		t.Fatal(r.Error)
	}
	if r := call(bob, stage.NewThreadID(), `<Op>get</Op><Key>k</Key><Namespace>notes</Namespace>`); r.Found {
		t.Fatalf("bob read alice's named namespace: %+v", r)
	}
	if r := call(bob, stage.NewThreadID(), `<Op>set</Op><Key>k</Key><Value>bob-notes</Value><Namespace>notes</Namespace>`); r.Error != "" {
		t.Fatal(r.Error)
	}
	if r := call(alice, stage.NewThreadID(), `<Op>get</Op><Key>k</Key><Namespace>notes</Namespace>`); r.Value != "alice-notes" {
		t.Fatalf("bob overwrote alice's named namespace: %+v", r)
	}
	if r := call(alice, stage.NewThreadID(), `<Op>set</Op><Key>k</Key><Value>for-all</Value><Namespace>team</Namespace>`); r.Error != "" {
		t.Fatal(r.Error)
	}
	if r := call(bob, stage.NewThreadID(), `<Op>get</Op><Key>k</Key><Namespace>team</Namespace>`); r.Value != "for-all" {
		t.Fatalf("shared namespace: %+v", r)
	}
}
