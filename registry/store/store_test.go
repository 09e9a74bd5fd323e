package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		ok   bool
	}{
		{"zero", Options{}, true},
		{"set", Options{BatchRows: 10, BatchDelay: time.Second, QueueSize: 5, ReadConns: 2}, true},
		{"negative rows", Options{BatchRows: -1}, false},
		{"negative delay", Options{BatchDelay: -time.Millisecond}, false},
		{"negative linger", Options{BatchLinger: -time.Millisecond}, false},
		{"negative queue", Options{QueueSize: -1}, false},
		{"negative busy", Options{BusyTimeout: -time.Second}, false},
		{"negative readers", Options{ReadConns: -2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate() = %v, want ErrInvalid", err)
			}
		})
	}
	if _, err := Open(t.TempDir(), Options{BatchRows: -1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Open with invalid options = %v, want ErrInvalid", err)
	}
	d := Options{}.withDefaults()
	if d.BatchRows != DefaultBatchRows || d.BatchDelay != DefaultBatchDelay || d.BatchLinger != DefaultBatchLinger || d.Clock == nil || d.Logger == nil {
		t.Fatalf("defaults = %+v", d)
	}
}

func TestOpenCreatesDirAndPragmas(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data dir?#")
	s := openAt(t, dir, Options{})
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %v, want 0700", fi.Mode().Perm())
	}
	if _, err := os.Stat(filepath.Join(dir, DatabaseFileName)); err != nil {
		t.Errorf("database file: %v", err)
	}
	pid, err := os.ReadFile(filepath.Join(dir, lockFileName))
	if err != nil || strings.TrimSpace(string(pid)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("LOCK = %q, %v; want our pid", pid, err)
	}
	got := map[string]string{}
	for _, p := range []string{"journal_mode", "synchronous", "foreign_keys", "busy_timeout"} {
		_, err := s.do(context.Background(), "read "+p, func(w *writer) (int64, error) {
			var v string
			err := w.conn.query("PRAGMA "+p, nil, func(rows *sql.Rows) error { return rows.Scan(&v) })
			got[p] = v
			return 0, err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"journal_mode": "wal", "synchronous": "1", "foreign_keys": "1", "busy_timeout": "10000"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("writer pragmas (-want +got):\n%s", d)
	}
	// The read pool must refuse writes.
	if _, err := s.rdb.Exec(`DELETE FROM users`); err == nil {
		t.Error("read pool accepted a write")
	}
}

func TestLockSameProcess(t *testing.T) {
	s, dir := openTest(t, Options{})
	_, err := Open(dir, Options{Logger: quietLogger()})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	for _, want := range []string{dir, "pid " + strconv.Itoa(os.Getpid())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openAt(t, dir, Options{})
	if err := s2.Close(); err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
}

func TestLockOtherProcess(t *testing.T) {
	_, dir := openTest(t, Options{})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childGORACE(), envChild+"="+childLock, envChildDir+"="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	for _, want := range []string{ErrLocked.Error(), dir, "pid " + strconv.Itoa(os.Getpid())} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("child output %q does not mention %q", out.String(), want)
		}
	}
}

func TestClosedStore(t *testing.T) {
	s, _ := openTest(t, Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	checks := map[string]error{
		"Close":         s.Close(),
		"Append":        s.Append(testEntry(1, "t")),
		"Flush":         s.Flush(ctx),
		"MarkDelivered": s.MarkDelivered(1),
		"PutThread":     s.PutThread(ThreadRow{ID: "t"}),
		"PutUser":       s.PutUser(ctx, UserRow{Name: "u", PasswordHash: "h", Role: "admin"}),
	}
	_, checks["AppendSync"] = s.AppendSync(ctx, testEntry(1, "t"))
	_, checks["Tail"] = s.Tail(1)
	_, checks["Count"] = s.Count()
	_, checks["LoadThreads"] = s.LoadThreads()
	_, checks["Verify"] = s.Verify(ctx, nil)
	_, checks["Sweep"] = s.Sweep(ctx, func(_, _ string) Retention { return Retention{} })
	_, checks["StartSweeper"] = s.StartSweeper(ctx, time.Second, func(_, _ string) Retention { return Retention{} })
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

// TestReopenKeepsEverything writes every kind of row, closes, reopens and
// compares all of it, timestamps included to the nanosecond.
func TestReopenKeepsEverything(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	s := openAt(t, dir, Options{Clock: clock.Now})
	ctx := context.Background()
	odd := time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("X", 3600+1800))

	var entries []Entry
	for i := range 5 {
		e := testEntry(i, "t"+strconv.Itoa(i%2))
		if i == 3 {
			e.Time = odd
		}
		clock.Advance(time.Nanosecond * 7)
		seq, err := s.AppendSync(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if i != 3 {
			e.Time = clock.Now()
		}
		e.Seq = seq
		e.SHA256 = sha256Of(e.Bytes)
		entries = append(entries, e)
	}
	threads := []ThreadRow{
		{ID: "a", Path: []string{"org", "greeter", "v1.2.shouter"}, Created: odd, Touched: clock.Now()},
		{ID: "b", Parent: "a", Path: []string{}, Created: clock.Now().Add(time.Hour)},
	}
	watchers := []WatcherRow{{ID: "w1", Thread: "a", Issuer: "agent", WaitFor: "Done", FromListener: "tool",
		Description: "wait", Raised: true, TriggeredFrom: "tool", Created: odd}}
	slots := []SlotRow{
		{Thread: "a", Index: 0, From: "x", To: "y", PayloadType: "Greeting", Raw: []byte("<a/>"), Time: odd, OwnName: "y", IsSelfCall: true},
		{Thread: "a", Index: 1, Raw: []byte{}, Time: clock.Now()},
	}
	users := []UserRow{{Name: "root", PasswordHash: "$argon2id$x", Role: "admin", TOTPSecret: "ABC", TOTPLastStep: 9, Created: odd}}
	sessions := []SessionRow{{TokenHash: "h1", User: "root", Created: odd, Expires: odd.Add(time.Hour)}}
	for _, r := range threads {
		must(t, s.PutThread(r))
	}
	must(t, s.PutWatcher(watchers[0]))
	for _, r := range slots {
		must(t, s.PutSlot(r))
	}
	must(t, s.PutUser(ctx, users[0]))
	must(t, s.PutSession(ctx, sessions[0]))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, DatabaseFileName+"-wal")); err == nil {
		if fi, _ := os.Stat(filepath.Join(dir, DatabaseFileName+"-wal")); fi.Size() != 0 {
			t.Errorf("WAL not checkpointed on Close: %d bytes", fi.Size())
		}
	}

	s = openAt(t, dir, Options{Clock: clock.Now})
	gotEntries, err := s.After(0, 0)
	must(t, err)
	if d := cmp.Diff(entries, gotEntries); d != "" {
		t.Errorf("journal after reopen (-want +got):\n%s", d)
	}
	for _, e := range gotEntries {
		if e.Time.Location() != time.UTC {
			t.Errorf("seq %d time not in UTC: %v", e.Seq, e.Time.Location())
		}
	}
	gotThreads, err := s.LoadThreads()
	must(t, err)
	if d := cmp.Diff(threads, gotThreads); d != "" {
		t.Errorf("threads (-want +got):\n%s", d)
	}
	gotWatchers, err := s.LoadWatchers()
	must(t, err)
	if d := cmp.Diff(watchers, gotWatchers); d != "" {
		t.Errorf("watchers (-want +got):\n%s", d)
	}
	gotSlots, err := s.LoadSlots()
	must(t, err)
	if d := cmp.Diff(slots, gotSlots, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("slots (-want +got):\n%s", d)
	}
	gotUsers, err := s.ListUsers(ctx)
	must(t, err)
	if d := cmp.Diff(users, gotUsers); d != "" {
		t.Errorf("users (-want +got):\n%s", d)
	}
	gotSession, err := s.GetSession(ctx, "h1")
	must(t, err)
	if d := cmp.Diff(sessions[0], gotSession); d != "" {
		t.Errorf("session (-want +got):\n%s", d)
	}
	// Sequence numbers continue after a reopen.
	seq, err := s.AppendSync(ctx, testEntry(9, "t9"))
	must(t, err)
	if seq != 6 {
		t.Errorf("seq after reopen = %d, want 6", seq)
	}
}

// must fails the test on a non-nil error.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
