package main

import "testing"

// TestStatementKey: the bench's table counts a statement of any number of
// rows or list items as one, and keeps what follows the values.
func TestStatementKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"INSERT INTO t (a, b) VALUES (?, ?)", "INSERT INTO t (a, b) VALUES (…)"},
		{"INSERT INTO t (a, b)\n\tVALUES (?, ?), (?, ?), (?, ?)", "INSERT INTO t (a, b) VALUES (…)"},
		{"INSERT INTO d (part, marks) VALUES (?, ?) ON CONFLICT (part) DO UPDATE SET marks = excluded.marks",
			"INSERT INTO d (part, marks) VALUES (…) ON CONFLICT (part) DO UPDATE SET marks = excluded.marks"},
		{"DELETE FROM threads WHERE id IN (?, ?, ?)", "DELETE FROM threads WHERE id IN (…)"},
		{"DELETE FROM threads WHERE id IN (?)", "DELETE FROM threads WHERE id IN (…)"},
		{"  UPDATE federation_received   SET done = 1 WHERE conv = ?", "UPDATE federation_received SET done = 1 WHERE conv = ?"},
	} {
		if got := statementKey(tc.in); got != tc.want {
			t.Errorf("statementKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
