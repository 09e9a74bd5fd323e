package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriteConnValues round-trips every argument type the writer binds through
// a table on the writer's own connection, including the empty text and
// empty blob that must not turn into NULL.
func TestWriteConnValues(t *testing.T) {
	s, _ := openTest(t, Options{})
	type named string
	args := []any{nil, int64(-7), 42, true, false, 1.5, "", "héllo", []byte{}, []byte{0, 1, 2}, []byte(nil), named("n")}
	var got []string
	_, err := s.do(context.Background(), "writer values", func(w *writer) (int64, error) {
		if _, err := w.conn.exec(`CREATE TEMP TABLE v (i INTEGER PRIMARY KEY, x)`); err != nil {
			return 0, err
		}
		for i, a := range args {
			if _, err := w.conn.exec(`INSERT INTO v (i, x) VALUES (?, ?)`, i, a); err != nil {
				return 0, err
			}
		}
		err := w.conn.query(`SELECT typeof(x) || ':' || quote(x) FROM v ORDER BY i`, nil, func(rows *sql.Rows) error {
			var v string
			got = append(got, v)
			return rows.Scan(&got[len(got)-1])
		})
		if err != nil {
			return 0, err
		}
		return w.conn.exec(`DROP TABLE v`)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"null:NULL", "integer:-7", "integer:42", "integer:1", "integer:0", "real:1.5", "text:''",
		"text:'héllo'", "blob:X''", "blob:X'000102'", "null:NULL", "text:'n'"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stored values (-want +got):\n%s", d)
	}
}

// TestWriteConnErrors: every failure is an error naming its cause, and the
// statement is usable again afterwards.
func TestWriteConnErrors(t *testing.T) {
	s, _ := openTest(t, Options{})
	_, err := s.do(context.Background(), "writer errors", func(w *writer) (int64, error) {
		c := w.conn
		if _, err := c.exec(`CREATE TEMP TABLE e (k TEXT PRIMARY KEY)`); err != nil {
			return 0, err
		}
		for _, tc := range []struct {
			name, query string
			args        []any
			want        string
		}{
			{"syntax", `INSERT INTO nowhere VALUES (?)`, []any{1}, "no such table"},
			{"too few arguments", `INSERT INTO e (k) VALUES (?)`, nil, "missing argument"},
			{"unsupported type", `INSERT INTO e (k) VALUES (?)`, []any{struct{}{}}, "argument $1"},
			{"constraint", `INSERT INTO e (k) VALUES (?)`, []any{"dup"}, ""},
			{"constraint again", `INSERT INTO e (k) VALUES (?)`, []any{"dup"}, "UNIQUE constraint failed"},
		} {
			_, err := c.exec(tc.query, tc.args...)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s: %v", tc.name, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
			}
		}
		n, err := c.queryInt64(`SELECT count(*) FROM e`)
		if err != nil || n != 1 {
			t.Errorf("after the failures: count = %d, %v; want 1", n, err)
		}
		return c.exec(`DROP TABLE e`)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWriteConnExecValues: execValues stores driver values as exec does,
// reuses its statement (ordinals set afresh each time), reports failures
// and leaves the statement usable after them.
func TestWriteConnExecValues(t *testing.T) {
	s, _ := openTest(t, Options{})
	_, err := s.do(context.Background(), "writer exec values", func(w *writer) (int64, error) {
		c := w.conn
		if _, err := c.exec(`CREATE TEMP TABLE ev (i INTEGER PRIMARY KEY, x)`); err != nil {
			return 0, err
		}
		const insert = `INSERT INTO ev (i, x) VALUES (?, ?), (?, ?)`
		for _, tc := range []struct {
			name string
			args []any
			want string // "" for success
		}{
			{"ints and text", []any{int64(1), int64(-7), int64(2), "héllo"}, ""},
			{"empty text and blobs", []any{int64(3), "", int64(4), []byte{}}, ""},
			{"blob and null", []any{int64(5), []byte{0, 1, 2}, int64(6), nil}, ""},
			{"not a driver value", []any{int64(7), 42, int64(8), "x"}, "invalid driver.Value type"},
			{"too few", []any{int64(9), "x", int64(10)}, "missing argument"},
			{"constraint", []any{int64(1), "dup", int64(11), "x"}, "UNIQUE constraint failed"},
		} {
			args := make([]driver.NamedValue, len(tc.args))
			for i, a := range tc.args {
				args[i] = driver.NamedValue{Ordinal: 99, Value: a} // execValues sets the ordinals
			}
			n, err := c.execValues(insert, args)
			switch {
			case tc.want == "" && (err != nil || n != 2):
				t.Errorf("%s: n = %d, err = %v; want 2 rows", tc.name, n, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
			}
		}
		var got []string
		err := c.query(`SELECT typeof(x) || ':' || quote(x) FROM ev ORDER BY i`, nil, func(rows *sql.Rows) error {
			got = append(got, "")
			return rows.Scan(&got[len(got)-1])
		})
		if err != nil {
			return 0, err
		}
		want := []string{"integer:-7", "text:'héllo'", "text:''", "blob:X''", "blob:X'000102'", "null:NULL"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("stored values (-want +got):\n%s", d)
		}
		if len(c.driverStmts) != 1 {
			t.Errorf("%d driver statements prepared, want 1", len(c.driverStmts))
		}
		return c.exec(`DROP TABLE ev`)
	})
	if err != nil {
		t.Fatal(err)
	}
}
