package store

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// StatementCount is how often the writer ran one SQL statement and how
// many rows those runs changed: the store's work attributed to the tables
// and the callers behind it (for benchmarks, which divide the difference
// of two snapshots by the work done in between).
type StatementCount struct {
	// Query is the statement's text as it was prepared.
	Query string
	// Runs counts its executions inside the writer's transactions.
	Runs int64
	// Rows counts the rows its executions inserted, updated or deleted
	// (0 for a query that returns rows).
	Rows int64
}

// statementCounts counts the writer's runs of each statement. Only the
// goroutine holding the writeConn adds to it, so that goroutine looks its
// counters up without the lock; mu serialises adding a new statement with
// snapshot's walk of the map from any goroutine.
type statementCounts struct {
	mu      sync.Mutex
	byQuery map[string]*statementCount
}

// statementCount is one statement's counters.
type statementCount struct{ runs, rows atomic.Int64 }

func newStatementCounts() *statementCounts {
	return &statementCounts{byQuery: map[string]*statementCount{}}
}

// add counts one run of query that changed rows rows.
func (c *statementCounts) add(query string, rows int64) {
	n := c.byQuery[query]
	if n == nil {
		n = &statementCount{}
		c.mu.Lock()
		c.byQuery[query] = n
		c.mu.Unlock()
	}
	n.runs.Add(1)
	n.rows.Add(rows)
}

// snapshot returns the counts so far, ordered by query; none before the
// writer's connection opened.
func (c *statementCounts) snapshot() []StatementCount {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	out := make([]StatementCount, 0, len(c.byQuery))
	for q, n := range c.byQuery {
		out = append(out, StatementCount{Query: q, Runs: n.runs.Load(), Rows: n.rows.Load()})
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b StatementCount) int { return strings.Compare(a.Query, b.Query) })
	return out
}

// StatementCounts returns, for every statement the writer has run since
// the store opened (journal inserts, delivery marks, kernel-state and
// extension writes, queries inside write transactions, BEGIN and COMMIT),
// how often it ran and the rows it changed, ordered by query text.
func (s *Store) StatementCounts() []StatementCount { return s.stmtCounts.snapshot() }
