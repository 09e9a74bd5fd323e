package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/xml-pipeline/xmlpipe/oob"
	"github.com/xml-pipeline/xmlpipe/oob/keys"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// oobDir is a hello-world directory whose OOB channel is a Unix socket
// (no port to collide with parallel tests), with keys in data/.
func oobDir(t *testing.T) (dir, data string) {
	t.Helper()
	dir = helloDir(t)
	f, err := os.OpenFile(filepath.Join(dir, "organism.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\noob:\n  port: 0\n  unix_socket: run/oob.sock\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	data = filepath.Join(dir, "data")
	if r := runBinary(t, dir, "", "keys", "init", "--data", data); r.code != 0 {
		t.Fatalf("keys init: %d\n%s", r.code, r.stderr)
	}
	return dir, data
}

// TestKeys: init creates the keys 0600 and keeps them; show prints both
// fingerprints; export writes the organism's public identity.
func TestKeys(t *testing.T) {
	dir := helloDir(t)
	data := filepath.Join(dir, "data")
	if r := runBinary(t, dir, "", "keys", "show", "--data", data); r.code != 1 || !strings.Contains(r.stderr, "keys init") {
		t.Fatalf("show without keys: %d\n%s", r.code, r.stderr)
	}
	r := runBinary(t, dir, "", "keys", "init", "--data", data)
	if r.code != 0 || strings.Count(r.stdout, "created ") != 3 {
		t.Fatalf("init: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"organism.ed25519", "owner.ed25519"} {
		st, err := os.Stat(filepath.Join(data, "keys", f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, st, err)
		}
	}
	fp := regexp.MustCompile(`fingerprint (SHA256:\S+)`)
	first := fp.FindAllStringSubmatch(r.stdout, -1)
	if len(first) != 2 || first[0][1] == first[1][1] {
		t.Fatalf("fingerprints %v in\n%s", first, r.stdout)
	}
	r = runBinary(t, dir, "", "keys", "init", "--data", data)
	if r.code != 0 || !strings.Contains(r.stdout, "already present") || fp.FindStringSubmatch(r.stdout)[1] != first[0][1] {
		t.Fatalf("second init: %d\n%s", r.code, r.stdout)
	}
	show := runBinary(t, dir, "", "keys", "show", "--data", data)
	if show.code != 0 || !strings.Contains(show.stdout, "-----BEGIN PUBLIC KEY-----") || !strings.Contains(show.stdout, first[1][1]) {
		t.Fatalf("show: %d\n%s", show.code, show.stdout)
	}
	out := filepath.Join(dir, "organism.ed25519.pub")
	if r := runBinary(t, dir, "", "keys", "export", out, "--data", data); r.code != 0 {
		t.Fatalf("export: %d\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(show.stdout, string(b)) {
		t.Fatalf("exported key is not the shown organism key: %v\n%s", err, b)
	}
	if r := runBinary(t, dir, "", "keys", "export", out, "--data", data); r.code != 1 {
		t.Fatalf("export over a file: %d", r.code)
	}
}

// TestCtlAgainstRun drives a running `xmlpipe run` with `xmlpipe ctl`:
// queries, an injected conversation and its history, the graph, an error
// response (exit 1), then a shutdown that ends the process.
func TestCtlAgainstRun(t *testing.T) {
	dir, data := oobDir(t)
	s := startRun(t, dir, data, "--insecure-dev")
	s.stderr.waitFor(t, "OOB channel listening")
	ctl := func(args ...string) result {
		return runBinary(t, dir, "", append([]string{"ctl", "--data", data}, args...)...)
	}
	r := ctl("list-listeners")
	if r.code != 0 || !strings.Contains(r.stdout, "<name>greeter</name>") || !strings.Contains(r.stdout, "<privileged-response") {
		t.Fatalf("list-listeners: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ctl("--json", "get-status"); r.code != 0 || !strings.Contains(r.stdout, `"state": "running"`) {
		t.Fatalf("get-status --json: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ctl("get-config", "key=nope"); r.code != 1 || !strings.Contains(r.stdout, "<code>NOT_FOUND</code>") {
		t.Fatalf("error response: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	watch := exec.Command(binary, "ctl", "--data", data, "watch", "--count", "1")
	watch.Dir = dir
	watchOut := newLockedBuffer()
	watch.Stdout, watch.Stderr = watchOut, watchOut
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	watchDone := make(chan error, 1)
	go func() { watchDone <- watch.Wait() }()
	t.Cleanup(func() { _ = watch.Process.Kill() })
	watchOut.waitFor(t, "<subscription-id>")
	r = ctl("inject-message", "to=greeter", `payload=<Greeting xmlns=""><Name>Cy</Name></Greeting>`)
	m := regexp.MustCompile(`<thread-id>([^<]+)</thread-id>`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("inject-message: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.stderr.waitFor(t, "HELLO, CY!")
	if err := <-watchDone; err != nil {
		t.Fatalf("ctl watch: %v\n%s", err, watchOut)
	}
	if out := watchOut.String(); !strings.Contains(out, "<privileged-push") || !strings.Contains(out, "<event-type>message</event-type>") {
		t.Fatalf("ctl watch printed:\n%s", out)
	}
	if r := ctl("get-thread-history", "thread-id="+m[1]); r.code != 0 || !strings.Contains(r.stdout, "<payload-type>Greeting</payload-type>") {
		t.Fatalf("history: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// conversation=true reads every hop of the conversation the inject
	// started (each hop has a thread of its own); the journal commits the
	// last hop's envelope in the background, so it is polled for.
	for deadline := time.Now().Add(60 * time.Second); ; {
		r := ctl("get-thread-history", "thread-id="+m[1], "conversation=true")
		if r.code == 0 && strings.Contains(r.stdout, "<payload-type>ShoutedResponse</payload-type>") &&
			strings.Contains(r.stdout, `thread="`+m[1]+`"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("conversation history: %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := ctl("graph", "--format", "dot"); r.code != 0 || !strings.Contains(r.stdout, "digraph") {
		t.Fatalf("graph dot: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ctl("graph"); r.code != 0 || !strings.HasPrefix(r.stdout, "graph LR") {
		t.Fatalf("graph: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = ctl("graph", "--format", "svg")
	if _, err := exec.LookPath("dot"); err != nil {
		if r.code != 1 || !strings.Contains(r.stderr, "needs Graphviz's dot") {
			t.Fatalf("svg without dot: %d\n%s", r.code, r.stderr)
		}
	} else if r.code != 0 || !strings.Contains(r.stdout, "<svg") {
		t.Fatalf("svg: %d\n%s", r.code, r.stderr)
	}
	for _, args := range readmeCatalogRegistration(t) {
		if r := ctl(args...); r.code != 0 || !strings.Contains(r.stdout, "<ack success=\"true\">") {
			t.Fatalf("README's ctl %s: %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	if r := ctl("reload", "reason=test"); r.code != 0 || !strings.Contains(r.stdout, "<message>reloaded</message>") {
		t.Fatalf("reload: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.stderr.waitFor(t, "organism reloaded")
	if r := ctl("halt", "scope=agents"); r.code != 0 || !strings.Contains(r.stdout, "halted (agents)") {
		t.Fatalf("halt: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ctl("--json", "get-status"); r.code != 0 || !strings.Contains(r.stdout, `"state": "halted"`) {
		t.Fatalf("get-status while halted: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ctl("resume"); r.code != 0 || !strings.Contains(r.stdout, "<message>resumed</message>") {
		t.Fatalf("resume: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ctl("halt", "listener=shouter"); r.code != 0 || !strings.Contains(r.stdout, "halted listener shouter") {
		t.Fatalf("halt listener=shouter: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ctl("resume", "listener=shouter"); r.code != 0 || !strings.Contains(r.stdout, "<message>resumed shouter</message>") {
		t.Fatalf("resume listener=shouter: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := ctl("shutdown", "mode=graceful", "reason=test"); r.code != 0 || !strings.Contains(r.stdout, "<ack") {
		t.Fatalf("shutdown: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if code := s.wait(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, s.stderr)
	}
	for _, want := range []string{"shutdown requested over OOB", `msg="stop requested" via="an OOB shutdown (test)"`} {
		if !strings.Contains(s.stderr.String(), want) {
			t.Fatalf("shutdown not logged as %q:\n%s", want, s.stderr)
		}
	}
}

// TestCtlImmediateShutdown: an immediate shutdown stops the process
// without waiting, and cleanly.
func TestCtlImmediateShutdown(t *testing.T) {
	dir, data := oobDir(t)
	s := startRun(t, dir, data, "--insecure-dev")
	s.stderr.waitFor(t, "OOB channel listening")
	if r := runBinary(t, dir, "", "ctl", "--data", data, "shutdown", "mode=immediate"); r.code != 0 ||
		!strings.Contains(r.stdout, "shutting down (immediate)") {
		t.Fatalf("shutdown: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if code := s.wait(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, s.stderr)
	}
}

// TestCtlAgainstConsoleServe: the same channel on `xmlpipe console --serve`,
// its reload too (SIGHUP being the console's terminal hang-up).
func TestCtlAgainstConsoleServe(t *testing.T) {
	dir, data := oobDir(t)
	s := startServed(t, dir, true, "console", "--verbose", "--serve", "--listen", "127.0.0.1:0", "--insecure-dev", "--data", data, "organism.yaml")
	s.stdout.waitFor(t, "OOB channel listening") // the console shows its logs (--verbose: info too)
	r := runBinary(t, dir, "", "ctl", "--data", data, "list-listeners")
	if r.code != 0 || !strings.Contains(r.stdout, "<name>shouter</name>") {
		t.Fatalf("list-listeners: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runBinary(t, dir, "", "ctl", "--data", data, "reload"); r.code != 0 ||
		!strings.Contains(r.stdout, "<message>reloaded</message>") {
		t.Fatalf("reload: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runBinary(t, dir, "", "ctl", "--data", data, "shutdown"); r.code != 0 {
		t.Fatalf("shutdown: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if code := s.wait(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, s.stderr)
	}
}

// TestRunWithoutOwnerKey: the organism runs, without the channel, and says
// how to enable it.
func TestRunWithoutOwnerKey(t *testing.T) {
	dir := helloDir(t)
	s := startRun(t, dir, filepath.Join(dir, "data"), "--insecure-dev")
	s.stderr.waitFor(t, "the OOB channel is off: no owner key")
}

// TestOpElement: parameters become the operation's children in the XSD's
// order; unknown operations and parameters are refused by name.
func TestOpElement(t *testing.T) {
	tests := []struct {
		op     string
		params []string
		want   string
		errHas string
	}{
		{"list-listeners", nil, "<list-listeners></list-listeners>", ""},
		{"shutdown", []string{"timeout-seconds=5", "--mode", "graceful"},
			"<shutdown><mode>graceful</mode><timeout-seconds>5</timeout-seconds></shutdown>", ""},
		{"register-listener", []string{"peer=a", "name=x<y", "handler=h", "class=c", "peer=b"},
			"<register-listener><name>x&lt;y</name><class>c</class><handler>h</handler><peers><peer>a</peer><peer>b</peer></peers></register-listener>", ""},
		{"inject-message", []string{`payload=<G xmlns=""/>`, "to=g"}, `<inject-message><to>g</to><payload><G xmlns=""/></payload></inject-message>`, ""},
		{"reboot", nil, "", `"reboot" is not an operation`},
		{"shutdown", []string{"force=true"}, "", `shutdown takes mode= reason= timeout-seconds=, not "force"`},
		{"shutdown", []string{"mode"}, "", "want name=value"},
	}
	for _, tc := range tests {
		got, err := opElement(tc.op, tc.params)
		if tc.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("%s %v: err %v, want %q", tc.op, tc.params, err, tc.errHas)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%s %v:\n got %s (%v)\nwant %s", tc.op, tc.params, got, err, tc.want)
		}
	}
}

// TestOOBReplayAfterRestart: a captured signed shutdown, replayed after the
// organism restarted (well within the request's 60 s), is refused as
// replayed and does not stop the organism again.
func TestOOBReplayAfterRestart(t *testing.T) {
	dir, data := oobDir(t)
	cfg, err := config.Load(filepath.Join(dir, "organism.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sock, ok := strings.CutPrefix(endpointOf(cfg.OOB), "unix:")
	if !ok {
		t.Fatalf("endpoint %s is not a Unix socket", endpointOf(cfg.OOB))
	}
	key, err := keys.OwnerPrivate(keys.PathsFor(data, ""))
	if err != nil {
		t.Fatal(err)
	}
	op, err := opElement("shutdown", []string{"mode=graceful"})
	if err != nil {
		t.Fatal(err)
	}
	captured, err := oob.SignRequest(key, "captured", time.Now(), op)
	if err != nil {
		t.Fatal(err)
	}
	send := func() string { // the captured request, byte for byte
		t.Helper()
		d := websocket.Dialer{HandshakeTimeout: 10 * time.Second,
			NetDialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var nd net.Dialer
				return nd.DialContext(ctx, "unix", sock)
			}}
		ws, _, err := d.Dial("ws://oob/", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		if err := ws.WriteMessage(websocket.TextMessage, captured); err != nil {
			t.Fatal(err)
		}
		_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, b, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	first := startRun(t, dir, data, "--insecure-dev")
	first.stderr.waitFor(t, "OOB channel listening")
	if b := send(); !strings.Contains(b, "<ack") {
		t.Fatalf("the first shutdown was not acknowledged:\n%s", b)
	}
	if code := first.wait(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, first.stderr)
	}

	second := startRun(t, dir, data, "--insecure-dev")
	second.stderr.waitFor(t, "OOB channel listening")
	if b := send(); !strings.Contains(b, "<code>REPLAYED</code>") {
		t.Fatalf("the replayed shutdown was not refused as replayed:\n%s", b)
	}
	second.stderr.waitFor(t, "replayed OOB request")
	if r := runBinary(t, dir, "", "ctl", "--data", data, "get-status"); r.code != 0 {
		t.Fatalf("the organism did not answer after the replay: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runBinary(t, dir, "", "ctl", "--data", data, "shutdown"); r.code != 0 {
		t.Fatalf("shutdown: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if code := second.wait(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, second.stderr)
	}
}

// TestCtlNamesEveryOperation: `ctl -h` lists every operation of
// privileged-msg.xsd, and a mistyped operation or parameter is a usage
// error naming the operations (or the parameters) before anything is
// dialed — also when no organism is running.
func TestCtlNamesEveryOperation(t *testing.T) {
	ops := oob.OperationNames()
	if len(ops) == 0 {
		t.Fatal("no operations read from privileged-msg.xsd")
	}
	help := runIn(t, "ctl", "-h")
	if help.code != exitOK {
		t.Fatalf("ctl -h: exit %d\n%s", help.code, help.stderr)
	}
	for _, op := range append(ops, "watch", "graph") {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(op) + `\b`).MatchString(help.stdout) {
			t.Errorf("ctl -h does not name %s:\n%s", op, help.stdout)
		}
	}
	nowhere := "unix:" + filepath.Join(t.TempDir(), "none.sock")
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"reboot"}, append([]string{`"reboot" is not an operation`}, ops...)},
		{[]string{"halt", "scope=all", "force=true"}, []string{`halt takes scope= listener= reason=, not "force"`}},
		// A typo is named with what was meant.
		{[]string{"list-listner"}, []string{`"list-listner" is not an operation of privileged-msg.xsd (did you mean "list-listeners"?)`}},
		{[]string{"wach"}, []string{`(did you mean "watch"?)`}},
		{[]string{"list-listeners", "detaild=true"}, []string{`list-listeners takes detailed= team=, not "detaild" (did you mean "detailed"?)`}},
	}
	for _, tc := range tests {
		t.Run(tc.args[0], func(t *testing.T) {
			r := runIn(t, append([]string{"ctl", "--endpoint", nowhere}, tc.args...)...)
			if r.code != exitUsage || strings.Contains(r.stderr, "dial") {
				t.Fatalf("exit %d, want %d (usage) without dialing\n%s", r.code, exitUsage, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

// readmeCatalogRegistration returns the arguments of the README's ctl
// examples that register a compiled-in (catalog) listener and unregister
// it again, in the README's order: run verbatim against the hello-world
// organism they must succeed (the wasm and agent ones need a module and an
// LLM backend).
func readmeCatalogRegistration(t *testing.T) [][]string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "go run ./cmd/xmlpipe ctl "
	var out [][]string
	for line := range strings.Lines(string(readme)) {
		cmd, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		cmd, _, _ = strings.Cut(cmd, "#")
		args := strings.Fields(cmd)
		switch {
		case args[0] == "register-listener" && !strings.ContainsAny(cmd, "'") &&
			!slices.Contains(args, "class=wasm") && !slices.Contains(args, "class=agent"):
			out = append(out, args)
		case args[0] == "unregister-listener" && len(out) > 0:
			out = append(out, args)
		}
	}
	if len(out) != 2 {
		t.Fatalf("want the README's catalog register-listener and its unregister-listener, found %q", out)
	}
	return out
}
