package wasm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestReactorExitSaysToReturn: a reactor whose handle exits (os.Exit, even
// with status 0) ends its instance and fails the call; the error says
// what a reactor does instead — return its status — where "exited with
// status 0" alone reads as a success that failed. A command exits as it
// likes: status 0 is its answer.
func TestReactorExitSaysToReturn(t *testing.T) {
	const hint = "a reactor's handle returns its status (return 0) instead of exiting"
	in := []byte("<Ops><Do>exit</Do><Path></Path><Arg>%s</Arg></Ops>")
	call := func(m *Module, code string) ([]byte, error) {
		return m.Call(context.Background(), []byte(strings.Replace(string(in), "%s", code, 1)))
	}
	reactor := compileGuest(t, "ops", Reactor, Sandbox{Timeout: time.Minute})
	for _, code := range []string{"0", "3"} {
		_, err := call(reactor, code)
		if !errors.Is(err, ErrExit) {
			t.Fatalf("reactor exit %s: err = %v, want ErrExit", code, err)
		}
		for _, w := range []string{"status " + code + " in handle", hint} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("reactor exit %s: error %q lacks %q", code, err, w)
			}
		}
		// The next call gets a new instance.
		if out, err := call(reactor, "x"); err != nil || !strings.Contains(string(out), "<OK>false</OK>") {
			t.Errorf("the call after an exit: %s, %v", out, err)
		}
	}
	command := compileGuest(t, "ops", Command, Sandbox{Timeout: time.Minute})
	if out, err := call(command, "0"); err != nil || !strings.Contains(string(out), "exiting") {
		t.Errorf("command exit 0: %s, %v (want its answer)", out, err)
	}
	_, err := call(command, "3")
	if !errors.Is(err, ErrExit) || strings.Contains(err.Error(), hint) {
		t.Errorf("command exit 3: err = %v, want ErrExit without the reactor's hint", err)
	}
}
