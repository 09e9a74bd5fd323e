package organism

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/tools/kv"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// TestKeyValueKeptAcrossAReload: a key_value listener a
// reload rebuilt finds the keys the one it replaced set, with a data
// directory and without one (in memory: the organism's one store, not a
// new empty one).
func TestKeyValueKeptAcrossAReload(t *testing.T) {
	doc := func(desc string) string {
		return `organism: {name: kv-shared}
listeners:
  - name: key_value
    payload_class: tools.KeyValue
    handler: tools.KeyValue
    description: ` + desc + `
    tool_config:
      key_value: {shared_namespaces: [team]}
`
	}
	for _, tc := range []struct {
		name    string
		dataDir bool
	}{{"memory", false}, {"disk", true}} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeOrganism(t, doc("values"))
			var opts Options
			if tc.dataDir {
				opts.DataDir = t.TempDir()
			}
			o, err := Load(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Start(); err != nil {
				t.Fatal(err)
			}
			defer o.Shutdown(context.Background())
			who := pump.Principal{From: "api:alice", User: "alice"}
			call := func(to, body string) *kv.KeyValueResult {
				t.Helper()
				c := make(collector, 64)
				env := stage.AppendEnvelope(nil, who.From, to, stage.NewThreadID(), []byte(`<KeyValue xmlns="">`+body+`</KeyValue>`))
				if _, err := o.Pump.InjectAs(context.Background(), env, c, who); err != nil {
					t.Fatalf("%s: %s: %v", to, body, err)
				}
				e := c.await(t, pump.EventReply, pump.EventHuh)
				r, ok := e.Payload.(*kv.KeyValueResult)
				if e.Kind != pump.EventReply || !ok || r.Error != "" {
					t.Fatalf("%s: %s: %s %s %+v", to, body, e.Kind, e.Error, e.Payload)
				}
				return r
			}
			call("key_value", `<Op>set</Op><Key>plan</Key><Value>ship it</Value><Namespace>team</Namespace>`)
			if _, err := o.Reload(parseIn(t, filepath.Dir(path), doc("values, rebuilt"))); err != nil {
				t.Fatal(err)
			}
			if r := call("key_value", `<Op>get</Op><Key>plan</Key><Namespace>team</Namespace>`); !r.Found || r.Value != "ship it" {
				t.Errorf("key_value rebuilt by a reload gets team/plan = %+v; want what the one before set", r)
			}
		})
	}
}
