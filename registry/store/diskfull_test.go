package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childDiskFull is the child mode of TestDiskFullRecovers.
const childDiskFull = "diskfull"

// diskFullThread is the thread whose entries and slots diskFullChild writes.
const diskFullThread = "t-full"

// diskFullChild runs a store into a full disk and out of it again: it
// journals an entry and a context slot per step, then lowers its file size
// limit (RLIMIT_FSIZE, with SIGXFSZ ignored, so that writes past it fail
// with EFBIG as they would on a full disk) until appends fail, then raises
// it again (the operator freed space) and goes on until appends commit
// again, without reopening the store. It prints "ACK <seq>" for each
// append WaitDurable acknowledged, "FAIL <seq>" for each it refused,
// "SLOTS <n>" for the slots it wrote, "RECOVERED <duration>" and "DONE".
func diskFullChild(dir string) int {
	signal.Ignore(syscall.SIGXFSZ)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("ERR getrlimit", err)
		return childBadExit
	}
	// The log goes to stderr, which the parent reads.
	s, err := Open(dir, Options{Logger: slog.New(slog.NewJSONHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Println("ERR", err)
		return childBadExit
	}
	ctx := context.Background()
	slots := 0
	pad := bytes.Repeat([]byte("x"), 6000)
	step := func() (int64, error) {
		e := testEntry(slots, diskFullThread)
		e.Bytes = bytes.Replace(e.Bytes, []byte("</Name>"), append(pad, "</Name>"...), 1)
		// As the pump journals: assign a seq, wait for its commit, and
		// mark it delivered once handled, journaled or not.
		seq, err := s.AppendSeq(e)
		if err == nil {
			err = s.WaitDurable(ctx, seq)
		}
		if merr := s.MarkDelivered(seq); merr != nil {
			fmt.Println("ERR mark", merr)
			os.Exit(childBadExit)
		}
		// The slot is written whatever became of the append: the kernel
		// state moves on in memory either way.
		if serr := s.AppendSlot(SlotRow{Thread: diskFullThread, Index: slots, Raw: pad, Time: time.Now()}); serr != nil {
			fmt.Println("ERR slot", serr)
			os.Exit(childBadExit)
		}
		slots++
		if err != nil {
			fmt.Println("FAIL", seq)
		} else {
			fmt.Println("ACK", seq)
		}
		return seq, err
	}
	for range 20 {
		if _, err := step(); err != nil {
			fmt.Println("ERR before the limit", err)
			return childBadExit
		}
	}
	_ = s.Flush(ctx)
	size := int64(0)
	for _, name := range []string{DatabaseFileName, DatabaseFileName + "-wal"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			size = max(size, fi.Size())
		}
	}
	full := lim
	full.Cur = uint64(size + 256<<10)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &full); err != nil {
		fmt.Println("ERR setrlimit", err)
		return childBadExit
	}
	failed := 0
	for i := 0; failed < 10; i++ {
		if i == 5000 {
			fmt.Println("ERR no append failed under the file size limit")
			return childBadExit
		}
		if _, err := step(); err != nil {
			failed++
		}
	}
	if h := s.Health(); h.OK || h.Error == "" || h.Since.IsZero() {
		fmt.Printf("ERR Health while appends fail: %+v\n", h)
		return childBadExit
	}
	if err := s.Failing(); !errors.Is(err, ErrStorageFailing) || !strings.Contains(err.Error(), ": ") {
		fmt.Printf("ERR Failing while appends fail: %v\n", err)
		return childBadExit
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("ERR setrlimit", err)
		return childBadExit
	}
	freed := time.Now()
	var recovered time.Duration
	for ok := 0; ok < 20; {
		if time.Since(freed) > time.Minute {
			fmt.Println("ERR appends still fail a minute after the limit was raised")
			return childBadExit
		}
		if _, err := step(); err != nil {
			ok = 0
			continue
		}
		if ok == 0 {
			recovered = time.Since(freed)
		}
		ok++
	}
	// Flush reports the refused appends; the delivery marks made for them
	// are no-ops, not "not found".
	if err := s.Flush(ctx); errors.Is(err, ErrNotFound) || strings.Contains(fmt.Sprint(err), "mark delivered") {
		fmt.Println("ERR Flush after the recovery:", strings.ReplaceAll(err.Error(), "\n", " | "))
		return childBadExit
	}
	if h := s.Health(); !h.OK || h.Failures == 0 || h.Held != 0 {
		fmt.Printf("ERR Health after the recovery: %+v\n", h)
		return childBadExit
	}
	if err := s.Failing(); err != nil {
		fmt.Printf("ERR Failing after the recovery: %v\n", err)
		return childBadExit
	}
	fmt.Println("RECOVERED", recovered)
	fmt.Println("SLOTS", slots)
	if err := s.Close(); err != nil && !errors.Is(err, ErrWriteFailed) {
		fmt.Println("ERR close", err)
		return childBadExit
	}
	fmt.Println("DONE")
	return childOKExit
}

// TestDiskFullRecovers runs a store into a full disk in a child process
// (RLIMIT_FSIZE: no privileges needed) and out of it again, and checks
// what the data directory holds afterwards: every acknowledged append,
// a tombstone for every refused one (journal verify passes), and a
// context history the next start can restore — no slot lost to the
// failing commits while later ones committed.
func TestDiskFullRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process into a full disk")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childGORACE(), envChild+"="+childDiskFull, envChildDir+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\nstdout tail: %s\nstderr: %s", err, tail(string(out), 20), stderr.String())
	}
	acked := map[int64]bool{}
	refused := map[int64]bool{}
	slots := -1
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var seq int64
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "ACK "):
			fmt.Sscanf(line, "ACK %d", &seq)
			acked[seq] = true
		case strings.HasPrefix(line, "FAIL "):
			fmt.Sscanf(line, "FAIL %d", &seq)
			refused[seq] = true
		case strings.HasPrefix(line, "SLOTS "):
			fmt.Sscanf(line, "SLOTS %d", &slots)
		case strings.HasPrefix(line, "RECOVERED "):
			t.Log("appends commit again", strings.TrimPrefix(line, "RECOVERED "), "after the limit was raised")
		}
	}
	t.Logf("%d appends acknowledged, %d refused, %d slots written", len(acked), len(refused), slots)
	// The operator reads of the failure once when it begins and once when
	// it ends, not once per refused write.
	logs := stderr.String()
	if n := strings.Count(logs, `"msg":"store: commits fail; journal appends are refused until the storage recovers"`); n < 1 {
		t.Errorf("the log says %d times that commits fail, want at least once:\n%s", n, tail(logs, 10))
	}
	if n := strings.Count(logs, `"msg":"store: commits succeed again"`); n < 1 {
		t.Errorf("the log says %d times that commits succeed again, want at least once:\n%s", n, tail(logs, 10))
	}
	if n := strings.Count(logs, `"level":"ERROR"`); n > 4 {
		t.Errorf("%d error lines in the log for %d refused appends, want a line per failure, not per write:\n%s",
			n, len(refused), tail(logs, 10))
	}

	s := openAt(t, dir, Options{})
	rep, err := s.Verify(context.Background(), nil)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if !rep.OK() {
		t.Errorf("journal verify after the full disk: %d faults, first %v", len(rep.Faults), rep.Faults[0])
	}
	es, err := s.Thread(diskFullThread)
	if err != nil {
		t.Fatalf("Thread: %v", err)
	}
	have := map[int64]bool{}
	for _, e := range es {
		have[e.Seq] = true
	}
	for seq := range acked {
		if !have[seq] {
			t.Errorf("acknowledged seq %d is not in the journal", seq)
		}
	}
	rows, err := s.LoadSlots()
	if err != nil {
		t.Fatalf("LoadSlots: %v", err)
	}
	if len(rows) != slots {
		t.Errorf("LoadSlots: %d slots, want the %d written", len(rows), slots)
	}
	for i, r := range rows {
		if r.Index != i {
			t.Fatalf("slot at position %d has index %d: the history has a hole a restart refuses", i, r.Index)
		}
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
