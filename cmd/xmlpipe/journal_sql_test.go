package main

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestJournalSQL: after `@greeter Dan`, the journal view of the data
// directory's database reads with plain SQL on a read-only connection, as
// `sqlite3 -readonly` would: `SELECT *` shows the greeting's text and the
// shout, and its rows are the rows `journal tail` prints (seq, time,
// direction, kind, sender, recipient, root tag and thread).
func TestJournalSQL(t *testing.T) {
	dir := helloDir(t)
	data := filepath.Join(dir, "state")
	tail := recordHello(t, dir, data)

	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "xmlpipe.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	rows, err := db.Query(`SELECT * FROM journal ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			fmt.Fprintf(&all, "%s|", v)
		}
		all.WriteString("\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	for _, want := range []string{`|Greeting|<Greeting xmlns=""><Name>Dan</Name></Greeting>|`,
		`|ShoutedResponse|<ShoutedResponse xmlns=""><Message>HELLO, DAN!</Message></ShoutedResponse>|`} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("SELECT * FROM journal lacks %q:\n%s", want, all.String())
		}
	}

	// The tail's lines, field by field, against the same columns in SQL.
	line := regexp.MustCompile(`(?m)^\s*(\d+) (\S+) (\w+)\s+(\S+)\s+(\S+) → (\S+) \[(\S+)\] thread=(\S+) \d+B$`)
	var fromTail []string
	for _, m := range line.FindAllStringSubmatch(tail, -1) {
		fromTail = append(fromTail, strings.Join(m[1:], " "))
	}
	if len(fromTail) < 4 {
		t.Fatalf("tail has %d journal lines, want at least 4:\n%s", len(fromTail), tail)
	}
	rows, err = db.Query(`SELECT seq, time, direction, kind, sender, recipient, root, thread FROM journal ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var fromSQL []string
	for rows.Next() {
		var f [8]string
		if err := rows.Scan(&f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7]); err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse(time.RFC3339Nano, f[1])
		if err != nil {
			t.Fatalf("seq %s: time %q: %v", f[0], f[1], err)
		}
		f[1] = at.Format(time.RFC3339Nano) // as the tail prints it
		fromSQL = append(fromSQL, strings.Join(f[:], " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(fromSQL, "\n") != strings.Join(fromTail, "\n") {
		t.Errorf("journal rows differ\nSQL:\n%s\ntail:\n%s", strings.Join(fromSQL, "\n"), strings.Join(fromTail, "\n"))
	}
}
