package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// TestConsoleSurvivesAFullDisk runs a console whose data directory runs
// out of room (a file size limit set on the running process, prlimit:
// writes past it fail as on a full disk; Go ignores SIGXFSZ) and gets it
// back: the console stays up and, once the store's commits fail, refuses
// new greetings up front — nothing of them is handled: no HELLO — saying
// why; a greeting admitted just before the first failed commit is said to
// be handed on but not journaled. Then it journals again without a
// restart; journal verify passes, and the next start restores what the
// full disk left.
func TestConsoleSurvivesAFullDisk(t *testing.T) {
	dir := helloDir(t)
	data := filepath.Join(dir, "state")
	if r := runBinary(t, dir, "@greeter First\n/quit\n", "console", "organism.yaml", "--data", data); r.code != 0 {
		t.Fatalf("first console: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	console, in, out := startBinary(t, dir, "console", "organism.yaml", "--data", data)
	waitLine(t, out, "organism hello-world", "console")

	size := int64(0)
	for _, name := range []string{store.DatabaseFileName, store.DatabaseFileName + "-wal"} {
		if fi, err := os.Stat(filepath.Join(data, name)); err == nil {
			size = max(size, fi.Size())
		}
	}
	pid := console.Process.Pid
	var orig unix.Rlimit
	full := unix.Rlimit{Cur: uint64(size + 128<<10), Max: unix.RLIM_INFINITY}
	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &full, &orig); err != nil {
		t.Skipf("cannot set the console's file size limit (prlimit): %v", err)
	}
	full.Max = orig.Max

	// greet sends one greeting and reports what became of it: refused up
	// front (the store's commits fail: nothing of it was done), handed on
	// but not journaled (admitted just before the first failed commit), or
	// answered. Every line is checked for the answer to a greeting refused
	// up front: none may come.
	const (
		answered = iota
		refusedUpFront
		notJournaled
	)
	n := 0
	upFront := map[string]int{} // the answer of each greeting refused up front → its number
	check := func(line string) {
		for hello, i := range upFront {
			if strings.Contains(line, hello) {
				t.Errorf("greeting %d, refused up front, was handled: %.80s…", i, line)
				delete(upFront, hello)
			}
		}
	}
	greet := func() int {
		n++
		name := fmt.Sprintf("Dan%d%s", n, strings.Repeat("x", 2000))
		// The marker after it (an unknown command the console names) ends
		// what the console says of this greeting: a refusal comes before
		// it, never after, so the outcome is not taken from a line about
		// another greeting — a greeting handed on but not journaled may be
		// answered before its sender is told (the answer does not wait for
		// the failed commit), and without the marker that notice was read
		// as the next greeting's outcome.
		marker := fmt.Sprintf("/m%dz", n)
		if _, err := io.WriteString(in, "@greeter "+name+"\n"+marker+"\n"); err != nil {
			t.Fatal(err)
		}
		outcome, marked := -1, false
		deadline := time.After(60 * time.Second)
		for {
			select {
			case line, ok := <-out:
				if !ok {
					t.Fatalf("the console ended at greeting %d", n)
				}
				check(line)
				switch {
				case strings.HasPrefix(line, "time="):
					// The organism's log: only the console's own lines say
					// what became of the greeting.
				case strings.Contains(line, "Unknown command: "+marker):
					marked = true
				case marked:
				case strings.Contains(line, "cannot journal messages now"):
					if !strings.Contains(line, "nothing was done; retry later") {
						t.Errorf("greeting %d refused up front: %q, want it to say nothing was done", n, line)
					}
					if len(upFront) == 0 {
						t.Logf("greeting %d refused up front: %s", n, line)
					}
					upFront[strings.ToUpper(name)] = n
					outcome = refusedUpFront
				case strings.Contains(line, "not journaled"):
					if !strings.Contains(line, "will not survive a restart") {
						t.Errorf("greeting %d handed on but not journaled: %q, want it to say it will not survive a restart", n, line)
					}
					outcome = notJournaled
				}
				if strings.Contains(line, strings.ToUpper(name)) && outcome < 0 {
					outcome = answered
				}
				if marked && outcome >= 0 {
					return outcome
				}
			case <-deadline:
				t.Fatalf("greeting %d: neither answered nor refused within a minute", n)
			}
		}
	}
	refused := 0
	for refused < 3 {
		if n == 500 {
			t.Fatal("500 greetings and none refused up front under the file size limit")
		}
		if greet() == refusedUpFront {
			refused++
		}
	}
	t.Logf("under the limit: %d greetings sent, the last %d refused up front", n, refused)

	if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &orig, nil); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	// Greetings until one is answered without a refusal, then one more:
	// the store takes writes again within its retry interval.
	for ok := 0; ok < 2; {
		if time.Since(freed) > time.Minute {
			t.Fatal("greetings still refused a minute after the limit was lifted")
		}
		if greet() != answered {
			ok = 0
			continue
		}
		ok++
	}
	t.Logf("greetings journaled again %v after the limit was lifted", time.Since(freed).Round(time.Millisecond))
	last := fmt.Sprintf("Dan%d", n)
	if _, err := io.WriteString(in, "/quit\n"); err != nil {
		t.Fatal(err)
	}
	for line := range out { // drain until the console exits
		check(line)
	}
	if err := console.Wait(); err != nil {
		t.Fatalf("console after the full disk: %v", err)
	}

	if v := runBinary(t, dir, "", "journal", "verify", "--data", data); v.code != 0 || !strings.Contains(v.stdout, "journal OK") {
		t.Fatalf("journal verify after the full disk: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	r, err := store.OpenReadOnly(data)
	if err != nil {
		t.Fatal(err)
	}
	es, err := r.Tail(20)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	journaled := false
	for _, e := range es {
		journaled = journaled || strings.Contains(string(e.Bytes), "<Name>"+last)
	}
	if !journaled {
		t.Errorf("the last greeting (%s…), answered after the limit was lifted, is not in the journal", last)
	}
	if r := runBinary(t, dir, "@greeter Again\n/quit\n", "console", "organism.yaml", "--data", data); r.code != 0 ||
		!strings.Contains(r.stdout, "HELLO, AGAIN!") {
		t.Fatalf("the start after the full disk: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
