package oob

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// storedNames reads the listener file's names.
func storedNames(t *testing.T, path string) []string {
	t.Helper()
	ls, err := ReadListeners(path)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, l := range ls {
		names = append(names, l.Name)
	}
	return names
}

// TestRegisterListenerIsStored: a registered listener is written to the
// listener file (mode 0600) with what re-registers it; a refused one is
// not; unregister-listener removes it, also when it was stored but not
// running.
func TestRegisterListenerIsStored(t *testing.T) {
	f := newFixture(t, nil)
	path := filepath.Join(f.dir, "listeners.json")
	// printer takes response-handler's tag.
	if r := f.do(t, `<unregister-listener><name>response-handler</name></unregister-listener>`); r.Payload.Ack == nil {
		t.Fatalf("unregister: %+v", r.Payload.Error)
	}
	printer := `<register-listener><name>printer</name><class>handlers.hello.ShoutedResponse</class>` +
		`<handler>handlers.hello.handle_response_print</handler><description>prints</description></register-listener>`
	if r := f.do(t, printer); r.Payload.Ack == nil {
		t.Fatalf("register: %+v", r.Payload.Error)
	}
	if r := f.do(t, printer); code(r) != CodeInvalidArgument {
		t.Fatalf("duplicate: %+v", r.Payload)
	}
	if r := f.do(t, `<register-listener><name>ghost</name><class>nowhere.Nothing</class><handler>x</handler></register-listener>`); code(r) != CodeInvalidArgument {
		t.Fatalf("unknown class: %+v", r.Payload)
	}
	if diff := cmp.Diff([]string{"printer"}, storedNames(t, path)); diff != "" {
		t.Fatalf("stored (-want +got):\n%s", diff)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("listener file: %v %v", st, err)
	}
	ls, _ := ReadListeners(path)
	lc, err := ListenerConfig(ls[0])
	if err != nil || lc.PayloadClass != "handlers.hello.ShoutedResponse" || lc.Handler != "handlers.hello.handle_response_print" ||
		lc.Description != "prints" {
		t.Fatalf("stored listener config %+v, %v", lc, err)
	}
	if r := f.do(t, `<unregister-listener><name>printer</name></unregister-listener>`); r.Payload.Ack == nil {
		t.Fatalf("unregister: %+v", r.Payload.Error)
	}
	if diff := cmp.Diff([]string{}, storedNames(t, path)); diff != "" {
		t.Fatalf("stored after unregister (-want +got):\n%s", diff)
	}
	// A stored entry whose listener is not running (say its module went
	// away before a restart) can still be forgotten.
	if err := writeListeners(path, []RegisterListener{{Name: "stale", Class: "wasm", Handler: "gone.wasm"}}); err != nil {
		t.Fatal(err)
	}
	if r := f.do(t, `<unregister-listener><name>stale</name></unregister-listener>`); r.Payload.Ack == nil ||
		r.Payload.Ack.Message != "listener stale forgotten (it was not running)" {
		t.Fatalf("unregister stale: %+v %+v", r.Payload.Ack, r.Payload.Error)
	}
	if r := f.do(t, `<unregister-listener><name>stale</name></unregister-listener>`); code(r) != CodeNotFound {
		t.Fatalf("unregister unknown: %+v", r.Payload)
	}
}

// TestRegisterListenerNotStoredIsRemoved: when the listener file cannot
// be written, the listener is removed again (it would vanish at the next
// start) and the request fails.
func TestRegisterListenerNotStoredIsRemoved(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Target.ListenerFile = filepath.Join(t.TempDir(), "missing", "listeners.json")
	})
	if r := f.do(t, `<unregister-listener><name>response-handler</name></unregister-listener>`); r.Payload.Ack == nil {
		t.Fatalf("unregister: %+v", r.Payload.Error)
	}
	r := f.do(t, `<register-listener><name>printer</name><class>handlers.hello.ShoutedResponse</class>`+
		`<handler>handlers.hello.handle_response_print</handler></register-listener>`)
	if code(r) != CodeInternal {
		t.Fatalf("register without a store: %+v", r.Payload)
	}
	if _, ok := f.org.Pump.Lookup("printer"); ok {
		t.Fatal("the listener that could not be stored is registered")
	}
}
