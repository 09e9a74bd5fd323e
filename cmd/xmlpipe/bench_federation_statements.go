package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// fedStatement is one store statement of the federation bench: how often
// one organism's writer ran it, and the rows it changed, per call.
type fedStatement struct {
	// Organism is "a" (the caller) or "b" (the callee).
	Organism string `json:"organism"`
	// Statement is the query with its whitespace collapsed and its lists
	// of values or placeholders elided, so that the journal's inserts of
	// any number of rows count as one statement.
	Statement string  `json:"statement"`
	Runs      float64 `json:"runs_per_call"`
	Rows      float64 `json:"rows_per_call"`
}

// stmtSnapshot is both organisms' statement counts at one moment, by
// organism and statement.
type stmtSnapshot map[[2]string]store.StatementCount

// statementSnapshot takes both organisms' statement counts (only with
// --statements: the bench's own work, not the link's). It runs on the
// measuring goroutine alone, which owns p.keys.
func (p *fedPair) statementSnapshot() stmtSnapshot {
	s := stmtSnapshot{}
	for _, o := range []struct {
		name string
		org  *organism.Organism
	}{{"a", p.a}, {"b", p.b}} {
		for _, c := range o.org.Store().StatementCounts() {
			key, ok := p.keys[c.Query]
			if !ok {
				if p.keys == nil {
					p.keys = map[string]string{}
				}
				key = statementKey(c.Query)
				p.keys[c.Query] = key
			}
			k := [2]string{o.name, key}
			sum := s[k]
			sum.Runs += c.Runs
			sum.Rows += c.Rows
			s[k] = sum
		}
	}
	return s
}

// add adds to s what happened between from and to.
func (s stmtSnapshot) add(from, to stmtSnapshot) {
	for k, c := range to {
		sum := s[k]
		sum.Runs += c.Runs - from[k].Runs
		sum.Rows += c.Rows - from[k].Rows
		s[k] = sum
	}
}

// perCall returns the statements s counts divided by calls, the ones that
// ran at all, by organism and statement.
func (s stmtSnapshot) perCall(calls int64) []fedStatement {
	if calls <= 0 {
		return nil
	}
	var out []fedStatement
	for k, c := range s {
		if c.Runs == 0 {
			continue
		}
		out = append(out, fedStatement{Organism: k[0], Statement: k[1],
			Runs: float64(c.Runs) / float64(calls), Rows: float64(c.Rows) / float64(calls)})
	}
	slices.SortFunc(out, func(a, b fedStatement) int {
		if c := strings.Compare(a.Organism, b.Organism); c != 0 {
			return c
		}
		return strings.Compare(a.Statement, b.Statement)
	})
	return out
}

var (
	// spaces are runs of whitespace in a query.
	spaces = regexp.MustCompile(`\s+`)
	// valueLists are the tuples after VALUES, up to an ON CONFLICT or
	// RETURNING clause or the end.
	valueLists = regexp.MustCompile(` VALUES \(.*?\)(, \(.*?\))*( |$)`)
	// inLists are IN lists of placeholders.
	inLists = regexp.MustCompile(`IN \((\?, )*\?\)`)
)

// statementKey names a query in the bench's table: the journal's inserts
// of k rows, and deletions of k threads, are one statement whatever k.
func statementKey(q string) string {
	q = spaces.ReplaceAllString(strings.TrimSpace(q), " ")
	q = valueLists.ReplaceAllString(q, " VALUES (…)$2")
	return inLists.ReplaceAllString(q, "IN (…)")
}

// printStatements prints the statements of one phase as a table.
func printStatements(b *strings.Builder, phase string, ss []fedStatement) {
	fmt.Fprintf(b, "statements per call, %s (a: caller, b: callee; runs, rows changed):\n", phase)
	for _, s := range ss {
		q := s.Statement
		if len(q) > 96 {
			q = q[:95] + "…"
		}
		fmt.Fprintf(b, "  %s %6.2f %6.2f  %s\n", s.Organism, s.Runs, s.Rows, q)
	}
}
