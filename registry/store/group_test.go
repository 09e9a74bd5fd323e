package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// groupEntries returns n valid entries of conversation conv.
func groupEntries(conv string, n int) []Entry {
	es := make([]Entry, n)
	for i := range es {
		es[i] = testEntry(i, conv)
		es[i].Conversation = conv
	}
	return es
}

// TestAppendGroup: a group's entries get consecutive seqs in their order,
// whatever is appended concurrently, and are read back as written.
func TestAppendGroup(t *testing.T) {
	s, _ := openTest(t, Options{})
	var wg sync.WaitGroup
	firsts := make([]int64, 8)
	for g := range firsts {
		wg.Go(func() {
			for i := range 20 {
				if _, err := s.AppendSeq(testEntry(i, fmt.Sprintf("single-%d", g))); err != nil {
					t.Error(err)
				}
			}
			first, err := s.AppendGroup(groupEntries(fmt.Sprintf("group-%d", g), 50))
			if err != nil {
				t.Error(err)
			}
			firsts[g] = first
		})
	}
	wg.Wait()
	flush(t, s)
	entries, err := s.After(0, 0)
	must(t, err)
	bySeq := map[int64]Entry{}
	for _, e := range entries {
		bySeq[e.Seq] = e
	}
	for g, first := range firsts {
		conv := fmt.Sprintf("group-%d", g)
		for i := range 50 {
			e, ok := bySeq[first+int64(i)]
			if !ok || e.Conversation != conv || string(e.Bytes) != string(testEntry(i, conv).Bytes) {
				t.Fatalf("seq %d (entry %d of %s): %+v", first+int64(i), i, conv, e)
			}
		}
	}
	if len(entries) != 8*20+8*50 {
		t.Fatalf("%d entries", len(entries))
	}
	if st := s.Stats(); st.Enqueued != st.Committed || st.Committed != int64(len(entries)) {
		t.Fatalf("stats %+v for %d entries", st, len(entries))
	}
	if first, err := s.AppendGroup(nil); first != 0 || err != nil {
		t.Fatalf("empty group: %d, %v", first, err)
	}
}

// TestAppendGroupInvalidEntry: one invalid entry refuses the whole group;
// nothing is journaled and no seq is used up.
func TestAppendGroupInvalidEntry(t *testing.T) {
	s, _ := openTest(t, Options{})
	es := groupEntries("g", 3)
	es[1].From = ""
	if _, err := s.AppendGroup(es); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err %v, want ErrInvalid", err)
	}
	if s.Assigned() != 0 {
		t.Fatalf("assigned %d", s.Assigned())
	}
	flush(t, s)
	if n, err := s.Count(); err != nil || n != 0 {
		t.Fatalf("count %d, %v", n, err)
	}
}

// TestAppendGroupFailsWhole: a group the writer cannot commit is
// tombstoned whole — none of its entries is journaled, each of its seqs
// reports the failure — and the journal still verifies.
func TestAppendGroupFailsWhole(t *testing.T) {
	s, _ := openTest(t, Options{})
	if _, err := s.AppendSeq(testEntry(0, "before")); err != nil {
		t.Fatal(err)
	}
	es := groupEntries("doomed", 4)
	for i := range es {
		p, err := s.prepareEntry(es[i])
		must(t, err)
		es[i] = p
	}
	es[2].Kind = Kind(200) // only the writer's check catches it now
	o := op{kind: opAppendGroup, name: "append group", entries: es}
	must(t, s.enqueue(context.Background(), &o))
	first := o.entries[0].Seq
	if _, err := s.AppendSeq(testEntry(1, "after")); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(context.Background()); !errors.Is(err, ErrWriteFailed) {
		t.Fatalf("flush: %v, want ErrWriteFailed", err)
	}
	for i := range int64(4) {
		if err := s.WaitDurable(context.Background(), first+i); !errors.Is(err, ErrWriteFailed) {
			t.Fatalf("seq %d: %v, want ErrWriteFailed", first+i, err)
		}
	}
	entries, err := s.After(0, 0)
	must(t, err)
	for _, e := range entries {
		if e.Conversation == "doomed" {
			t.Fatalf("entry %d of the failed group was journaled", e.Seq)
		}
	}
	if len(entries) != 2 {
		t.Fatalf("%d entries, want the 2 around the group", len(entries))
	}
	rep, err := s.Verify(context.Background(), nil)
	must(t, err)
	if !rep.OK() || rep.Tombstones != 4 {
		t.Fatalf("verify: %+v", rep)
	}
}

// groupSize is how many entries groupChild puts in each group.
const groupSize = 400

// groupChild appends groups of groupSize entries from two goroutines, with
// single appends between them, and prints "GROUP <conversation> <first>"
// once a Flush confirmed the group, until it is killed.
func groupChild(dir string) int {
	s, err := Open(dir, Options{Logger: quietLogger()})
	if err != nil {
		fmt.Println("ERR", err)
		return childBadExit
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				conv := fmt.Sprintf("grp-%d-%d-%d", os.Getpid(), g, i)
				if _, err := s.AppendSeq(testEntry(i, fmt.Sprintf("single-%d", g))); err != nil {
					fmt.Println("ERR", err)
					os.Exit(childBadExit)
				}
				first, err := s.AppendGroup(groupEntries(conv, groupSize))
				if err == nil {
					err = s.Flush(context.Background())
				}
				if err != nil {
					fmt.Println("ERR", err)
					os.Exit(childBadExit)
				}
				out.Lock()
				fmt.Printf("GROUP %s %d\n", conv, first)
				out.Unlock()
			}
		})
	}
	wg.Wait()
	return childOKExit
}

// TestAppendGroupKill9: kill -9 a process appending groups: after the
// restart every group is in the journal whole or not at all, every group
// confirmed before the kill is there, and the journal verifies.
func TestAppendGroupKill9(t *testing.T) {
	dir := t.TempDir()
	confirmed := map[string]int64{}
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childGORACE(), envChild+"="+childGroup, envChildDir+"="+dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		must(t, err)
		must(t, cmd.Start())
		killed, n := false, 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var (
				conv  string
				first int64
			)
			if _, err := fmt.Sscanf(sc.Text(), "GROUP %s %d", &conv, &first); err != nil {
				if !killed {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
					t.Fatalf("child said %q; stderr: %s", sc.Text(), stderr.String())
				}
				continue
			}
			confirmed[conv] = first
			if n++; !killed && n >= 15 {
				must(t, cmd.Process.Kill()) // SIGKILL
				killed = true
			}
		}
		_ = cmd.Wait()
		if !killed {
			t.Fatalf("child exited after %d groups; stderr: %s", n, stderr.String())
		}
	}
	s := openAt(t, dir, Options{})
	entries, err := s.After(0, 0)
	must(t, err)
	type seen struct {
		n           int
		first, last int64
	}
	groups := map[string]*seen{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Conversation, "grp-") {
			continue
		}
		g := groups[e.Conversation]
		if g == nil {
			g = &seen{first: e.Seq}
			groups[e.Conversation] = g
		}
		g.n++
		g.last = e.Seq
	}
	for conv, g := range groups {
		if g.n != groupSize || g.last-g.first != groupSize-1 {
			t.Fatalf("group %s: %d entries from seq %d to %d after kill -9, want %d consecutive", conv, g.n, g.first, g.last, groupSize)
		}
	}
	for conv, first := range confirmed {
		if g := groups[conv]; g == nil || g.first != first {
			t.Fatalf("confirmed group %s (seq %d) lost after kill -9", conv, first)
		}
	}
	rep, err := s.Verify(context.Background(), nil)
	must(t, err)
	if !rep.OK() {
		t.Fatalf("verify after kill -9: %v", rep.Faults)
	}
	t.Logf("%d groups whole after two kills, %d confirmed", len(groups), len(confirmed))
}
