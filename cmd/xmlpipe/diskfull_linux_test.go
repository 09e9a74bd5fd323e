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
// back: the console stays up and refuses the greetings it cannot journal,
// then journals again without a restart; journal verify passes, and the
// next start restores what the full disk left.
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

	// greet sends one greeting and reports whether it was refused as not
	// journaled (else its answer came).
	n := 0
	greet := func() bool {
		n++
		name := fmt.Sprintf("Dan%d%s", n, strings.Repeat("x", 2000))
		if _, err := io.WriteString(in, "@greeter "+name+"\n"); err != nil {
			t.Fatal(err)
		}
		deadline := time.After(60 * time.Second)
		for {
			select {
			case line, ok := <-out:
				if !ok {
					t.Fatalf("the console ended at greeting %d", n)
				}
				if strings.Contains(line, "not journaled") {
					return true
				}
				if strings.Contains(line, strings.ToUpper(name)) {
					return false
				}
			case <-deadline:
				t.Fatalf("greeting %d: neither answered nor refused within a minute", n)
			}
		}
	}
	refused := 0
	for refused < 3 {
		if n == 500 {
			t.Fatal("500 greetings and none refused under the file size limit")
		}
		if greet() {
			refused++
		}
	}
	t.Logf("the limit refused greetings from %d on", n-refused+1)

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
		if greet() {
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
	for range out { // drain until the console exits
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
