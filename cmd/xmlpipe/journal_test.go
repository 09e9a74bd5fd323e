package main

import (
	"bufio"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestJournalCommands: a console session journals its conversation on the
// data directory; tail, thread, verify and export read it back.
func TestJournalCommands(t *testing.T) {
	dir := helloDir(t)
	data := filepath.Join(dir, "state")
	if r := runBinary(t, dir, "@greeter Dan\n/quit\n", "console", "organism.yaml", "--data", data); r.code != 0 ||
		!strings.Contains(r.stdout, "[shouter] HELLO, DAN!") {
		t.Fatalf("console: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	tail := runBinary(t, dir, "", "journal", "tail", "-n", "10", "--data", data)
	if tail.code != 0 {
		t.Fatalf("tail: exit %d: %s", tail.code, tail.stderr)
	}
	conv := regexp.MustCompile(`inbound\s+message\s+console → greeter \[Greeting\] thread=([0-9a-f-]{36})`).FindStringSubmatch(tail.stdout)
	if conv == nil {
		t.Fatalf("tail lacks the console's greeting:\n%s", tail.stdout)
	}

	// -n counts entries: 0 prints none, a negative count is a usage error
	// (not an empty answer that reads like an empty journal).
	for _, tc := range []struct {
		n     string
		code  int
		lines int
	}{{"2", exitOK, 2}, {"0", exitOK, 0}, {"-5", exitUsage, 0}} {
		r := runIn(t, "journal", "tail", "-n", tc.n, "--data", data)
		if got := strings.Count(r.stdout, "\n"); r.code != tc.code || got != tc.lines {
			t.Errorf("tail -n %s: exit %d with %d lines, want %d with %d\n%s", tc.n, r.code, got, tc.code, tc.lines, r.stderr)
		}
	}

	th := runBinary(t, dir, "", "journal", "thread", conv[1], "--data", data)
	if th.code != 0 {
		t.Fatalf("thread: exit %d: %s", th.code, th.stderr)
	}
	for _, want := range []string{"inbound message console → greeter", "outbound message greeter → shouter",
		"outbound message shouter → response-handler", "<Name>Dan</Name>", "<Message>HELLO, DAN!</Message>"} {
		if !strings.Contains(th.stdout, want) {
			t.Errorf("thread output lacks %q:\n%s", want, th.stdout)
		}
	}
	if r := runBinary(t, dir, "", "journal", "thread", "00000000-0000-4000-8000-000000000000", "--data", data); r.code != 1 {
		t.Errorf("thread of an unknown id: exit %d, want 1", r.code)
	}

	v := runBinary(t, dir, "", "journal", "verify", "--data", data)
	if v.code != 0 || !strings.Contains(v.stdout, "journal OK") {
		t.Fatalf("verify: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}

	out := filepath.Join(dir, "export")
	if r := runBinary(t, dir, "", "journal", "export", "--out", out, "--data", data); r.code != 0 {
		t.Fatalf("export: exit %d: %s", r.code, r.stderr)
	}
	doc, err := os.ReadFile(filepath.Join(out, conv[1]+".xml"))
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		ID      string `xml:"id,attr"`
		Entries []struct {
			Direction string `xml:"direction,attr"`
		} `xml:"entry"`
	}
	if err := xml.Unmarshal(doc, &parsed); err != nil {
		t.Fatalf("export is not XML: %v\n%s", err, doc)
	}
	if parsed.ID != conv[1] || len(parsed.Entries) == 0 || parsed.Entries[0].Direction != "inbound" {
		t.Fatalf("export = %+v", parsed)
	}
}

// TestJournalDefaultDataDir: without --data, console and journal use
// organism.data_dir (data beside the config); unknown subcommands are usage errors.
func TestJournalDefaultDataDir(t *testing.T) {
	dir := helloDir(t)
	data := filepath.Join(dir, "data")
	if r := runBinary(t, dir, "@greeter Dan\n/quit\n", "console", "organism.yaml"); r.code != 0 {
		t.Fatalf("console: exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(data, "xmlpipe.db")); err != nil {
		t.Fatalf("default data dir not used: %v", err)
	}
	if r := runBinary(t, dir, "", "journal", "verify"); r.code != 0 {
		t.Fatalf("verify with the default data dir: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runBinary(t, dir, "", "journal", "nope"); r.code != 2 {
		t.Fatalf("unknown journal command: exit %d, want 2", r.code)
	}
}

// recordHello runs a console session greeting Dan on data directory data
// (inside dir, beside organism.yaml) and returns the tail of its journal.
func recordHello(t *testing.T, dir, data string) string {
	t.Helper()
	if r := runBinary(t, dir, "@greeter Dan\n/quit\n", "console", "organism.yaml", "--data", data); r.code != 0 {
		t.Fatalf("console: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	tail := runBinary(t, dir, "", "journal", "tail", "--data", data)
	if tail.code != 0 {
		t.Fatalf("tail: exit %d: %s", tail.code, tail.stderr)
	}
	return tail.stdout
}

// threadOf finds the thread of the journal line of hop in a tail.
func threadOf(t *testing.T, tail, hop string) string {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(hop) + ` \[\w+\] thread=([0-9a-f-]{36})`).FindStringSubmatch(tail)
	if m == nil {
		t.Fatalf("no %q in the journal:\n%s", hop, tail)
	}
	return m[1]
}

// TestJournalReplay: the recorded hello-world conversation replays
// identically into the same organism (by conversation id or by the id of a
// later thread of it), and differently into one whose response-handler is
// renamed.
func TestJournalReplay(t *testing.T) {
	dir := helloDir(t)
	data := filepath.Join(dir, "state")
	tail := recordHello(t, dir, data)
	conv := threadOf(t, tail, "console → greeter")
	child := threadOf(t, tail, "greeter → shouter")
	renamed := strings.Replace(string(defaultOrganism), "name: response-handler", "name: printer", 1)
	if err := os.WriteFile(filepath.Join(dir, "renamed.yaml"), []byte(renamed), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"by conversation", []string{conv}, 0, []string{
			"replaying conversation " + conv + " into hello-world (organism.yaml): 1 inbound message(s)",
			"input    #N console → greeter [Greeting]",
			"same     #N greeter → shouter [GreetingResponse]",
			"same     #N shouter → response-handler [ShoutedResponse]",
			"printed  [shouter] HELLO, DAN!",
			"identical: 2 of 2 recorded outputs reproduced"}},
		{"by a later thread", []string{child}, 0, []string{"replaying conversation " + conv, "identical: 2 of 2"}},
		{"into a changed organism", []string{conv, "--into", "renamed.yaml"}, 1, []string{
			"into hello-world (renamed.yaml)",
			"same     #N greeter → shouter [GreetingResponse]",
			"missing  #N shouter → response-handler [ShoutedResponse]",
			"  - recorded: <ShoutedResponse xmlns=\"\"><Message>HELLO, DAN!</Message></ShoutedResponse>",
			"different: 0 changed, 1 missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runBinary(t, dir, "", append([]string{"journal", "replay", "--data", data}, tt.args...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			// Seqs depend on whether the boot message was journaled first.
			got := regexp.MustCompile(`#\d+ `).ReplaceAllString(r.stdout, "#N ")
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, r.stdout)
				}
			}
		})
	}

	if r := runBinary(t, dir, "", "journal", "replay", "00000000-0000-4000-8000-000000000000", "--data", data); r.code != 1 ||
		!strings.Contains(r.stderr, "no journaled conversation holds") {
		t.Errorf("replay of an unknown id: exit %d: %s", r.code, r.stderr)
	}
	if r := runBinary(t, dir, "", "journal", "replay", "--data", data); r.code != 2 {
		t.Errorf("replay without an id: exit %d, want 2", r.code)
	}
	if r := runBinary(t, dir, "", "journal", "tail", "--data", filepath.Join(dir, "empty")); r.code != 1 ||
		!strings.Contains(r.stderr, "no such file") {
		t.Errorf("tail of a missing data directory: exit %d: %s", r.code, r.stderr)
	}
}

// lines delivers the lines of r on a channel, closed at EOF.
func lines(r io.Reader) <-chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

// waitLine reads ch until a line containing want, failing after timeout.
func waitLine(t *testing.T, ch <-chan string, want string, what string) string {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case line, ok := <-ch:
			if !ok {
				t.Fatalf("%s ended before printing %q", what, want)
			}
			if strings.Contains(line, want) {
				return line
			}
		case <-timeout.C:
			t.Fatalf("%s did not print %q within 20s", what, want)
		}
	}
}

// startBinary starts the binary in dir with piped stdin and stdout; it is
// killed at the end of the test if it is still running.
func startBinary(t *testing.T, dir string, args ...string) (*exec.Cmd, io.WriteCloser, <-chan string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, stdin, lines(stdout)
}

// TestJournalReadsLiveStore: while a console holds the store's lock, the
// journal commands read it read-only, and tail -f follows the entries the
// console's conversation commits until it is interrupted.
func TestJournalReadsLiveStore(t *testing.T) {
	dir := helloDir(t)
	data := filepath.Join(dir, "state")
	console, in, out := startBinary(t, dir, "console", "organism.yaml", "--data", data)
	waitLine(t, out, "organism hello-world", "console")

	if r := runBinary(t, dir, "", "journal", "verify", "--data", data); r.code != 0 || !strings.Contains(r.stdout, "journal OK") {
		t.Fatalf("verify beside a running organism: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	tail, _, follow := startBinary(t, dir, "journal", "tail", "-n", "1", "-f", "--interval", "10ms", "--data", data)
	waitLine(t, follow, "system → system.boot", "tail -f") // following from here on

	if _, err := io.WriteString(in, "@greeter Dan\n"); err != nil {
		t.Fatal(err)
	}
	waitLine(t, out, "[shouter] HELLO, DAN!", "console")
	waitLine(t, follow, "inbound  message      console → greeter [Greeting]", "tail -f")
	waitLine(t, follow, "greeter → shouter [GreetingResponse]", "tail -f")
	waitLine(t, follow, "shouter → response-handler [ShoutedResponse]", "tail -f")

	if err := tail.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := tail.Wait(); err != nil {
		t.Errorf("tail -f after SIGINT: %v, want exit 0", err)
	}
	if _, err := io.WriteString(in, "/quit\n"); err != nil {
		t.Fatal(err)
	}
	if err := console.Wait(); err != nil {
		t.Errorf("console: %v", err)
	}
}

// TestJournalShowsProfilesAndPruned runs the README's retention example:
// a console session on the profiles example, whose greeter opens threads
// under greeters (prune_on_delivery); the second start prunes what the
// first delivered, and journal thread shows each entry's profile and the
// pruned ones with why and when, as journal tail does in its lines.
func TestJournalShowsProfilesAndPruned(t *testing.T) {
	dir := helloDir(t)
	config, err := filepath.Abs(filepath.Join("..", "..", "testdata", "profiles", "organism.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "state")
	for _, in := range []string{"@greeter Dan\n/quit\n", "/quit\n"} {
		if r := runBinary(t, dir, in, "console", config, "--data", data); r.code != 0 {
			t.Fatalf("console: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	}
	tail := runBinary(t, dir, "", "journal", "tail", "-n", "10", "--data", data)
	conv := regexp.MustCompile(`console → greeter \[Greeting\] thread=([0-9a-f-]{36})`).FindStringSubmatch(tail.stdout)
	if tail.code != 0 || conv == nil {
		t.Fatalf("tail: exit %d, lacks the greeting:\n%s%s", tail.code, tail.stdout, tail.stderr)
	}
	// tail shows the pruned entries in their place too, with why and when.
	for _, want := range []string{
		`outbound message      greeter → shouter \[GreetingResponse\] thread=[0-9a-f-]{36} pruned by prune_on_delivery at \S+ profile=greeters\n`,
		`outbound message      shouter → response-handler \[ShoutedResponse\] thread=[0-9a-f-]{36} pruned by prune_on_delivery at \S+ profile=greeters\n`,
	} {
		if !regexp.MustCompile(want).MatchString(tail.stdout) {
			t.Errorf("tail lacks %q:\n%s", want, tail.stdout)
		}
	}
	th := runBinary(t, dir, "", "journal", "thread", conv[1], "--data", data)
	if th.code != 0 {
		t.Fatalf("thread: exit %d: %s", th.code, th.stderr)
	}
	for _, want := range []string{"inbound message console → greeter\n", "<Name>Dan</Name>",
		"outbound message greeter → shouter [GreetingResponse] profile=greeters\npruned by prune_on_delivery at ",
		"outbound message shouter → response-handler [ShoutedResponse] profile=greeters\npruned by prune_on_delivery at "} {
		if !strings.Contains(th.stdout, want) {
			t.Errorf("thread output lacks %q:\n%s", want, th.stdout)
		}
	}
	if strings.Contains(th.stdout, "HELLO, DAN!") {
		t.Errorf("the pruned shout's payload is still shown:\n%s", th.stdout)
	}
	if v := runBinary(t, dir, "", "journal", "verify", "--data", data); v.code != 0 || !strings.Contains(v.stdout, "journal OK") {
		t.Fatalf("verify: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	if v := runBinary(t, dir, "", "validate", config); v.code != 0 ||
		!strings.Contains(v.stdout, "greeters → greeter, response-handler, shouter (network: any address; retention: prune_on_delivery)") {
		t.Fatalf("validate: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
}
