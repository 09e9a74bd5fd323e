package catalog

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"go.uber.org/goleak"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
	"github.com/xml-pipeline/xmlpipe/listeners/tools/kv"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// organismEnv is the Env one organism gives every listener it builds,
// first and at reloads: its data directory, its tool_config and its
// shutdown, run by the returned function (closers last registered first,
// as the organism runs them).
func organismEnv(dir string, policy tools.Policy) (Env, func() error) {
	var closers []func() error
	env := Env{DataDir: dir, Tools: policy, Stores: NewStores(), AtShutdown: func(f func() error) { closers = append(closers, f) }}
	return env, func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		closers = nil
		return errors.Join(errs...)
	}
}

// kvCall runs one key_value operation through h for caller from.
func kvCall(t *testing.T, h xmlpipe.Handler, from string, p kv.KeyValue) *kv.KeyValueResult {
	t.Helper()
	resp, err := h.Handle(context.Background(), &p, xmlpipe.Metadata{From: from, ThreadID: "t-" + from, User: "u-" + from})
	if err != nil {
		t.Fatalf("%s %s: %v", p.Op, p.Key, err)
	}
	r, ok := resp.(*xmlpipe.RespondResponse)
	if !ok {
		t.Fatalf("%s %s: response %T", p.Op, p.Key, resp)
	}
	res := r.Payload.(*kv.KeyValueResult)
	if res.Error != "" {
		t.Fatalf("%s %s: %s", p.Op, p.Key, res.Error)
	}
	return res
}

// TestKeyValueListenersShareOneStore: two agents' key_value listeners of
// one organism — in memory and on disk — see each other's keys in a
// namespace both declare in shared_namespaces, and keep their own named
// namespaces apart; a listener built again (a reload) uses the same store;
// once the organism shuts down, no sweeper or connection is left running.
func TestKeyValueListenersShareOneStore(t *testing.T) {
	for _, tc := range []struct{ name, dir string }{{"memory", ""}, {"disk", t.TempDir()}} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			env, shutdown := organismEnv(tc.dir, tools.Fixed(tools.Config{SharedNamespaces: []string{"team"}}))
			build := func() xmlpipe.Handler {
				t.Helper()
				pt, err := xmlpipe.NewPayloadType(reflectKeyValue)
				if err != nil {
					t.Fatal(err)
				}
				h, err := Builtin().Handler("tools.KeyValue", pt, env)
				if err != nil {
					t.Fatal(err)
				}
				return h
			}
			a := build()
			one := goleak.IgnoreCurrent() // the store's connection and sweeper
			b := build()
			kvCall(t, a, "alice", kv.KeyValue{Op: "set", Key: "plan", Value: "ship it", Namespace: "team"})
			if got := kvCall(t, b, "bob", kv.KeyValue{Op: "get", Key: "plan", Namespace: "team"}); !got.Found || got.Value != "ship it" {
				t.Errorf("bob's listener gets team/plan = %+v; want alice's value", got)
			}
			kvCall(t, a, "alice", kv.KeyValue{Op: "set", Key: "mine", Value: "x", Namespace: "notes"})
			if got := kvCall(t, b, "bob", kv.KeyValue{Op: "get", Key: "mine", Namespace: "notes"}); got.Found {
				t.Errorf("bob reaches alice's own namespace: %+v", got)
			}
			reloaded := build()
			if err := goleak.Find(one); err != nil {
				t.Errorf("listeners built after the first started goroutines of their own (a store, a sweeper): %v", err)
			}
			if got := kvCall(t, reloaded, "bob", kv.KeyValue{Op: "get", Key: "plan", Namespace: "team"}); !got.Found || got.Value != "ship it" {
				t.Errorf("a listener built again gets team/plan = %+v; want the value set before", got)
			}
			if err := shutdown(); err != nil {
				t.Fatalf("shutdown: %v", err)
			}
		})
	}
}

// reflectKeyValue is the key_value request type.
var reflectKeyValue = reflect.TypeFor[kv.KeyValue]()
