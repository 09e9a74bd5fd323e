package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
)

// llmCallsSchema is the journal of LLM calls: one row per
// attempt of a model call — its conversation, thread and agent, the backend
// and model, tokens, timing, outcome — and the journal seq of the envelope
// the call produced once it is known (envelope_seq, NULL until linked).
// sqlite3 reads it beside the journal:
//
//	SELECT c.id, c.agent, c.model, c.prompt_tokens, c.completion_tokens,
//	       c.duration_ns / 1e6 AS ms, c.envelope_seq FROM llm_calls c WHERE c.conversation = ?;
const llmCallsSchema = `
CREATE TABLE IF NOT EXISTS llm_calls (
	id                INTEGER PRIMARY KEY,
	time_ns           INTEGER NOT NULL,
	conversation      TEXT    NOT NULL DEFAULT '',
	thread            TEXT    NOT NULL DEFAULT '',
	agent             TEXT    NOT NULL DEFAULT '',
	backend           TEXT    NOT NULL,
	model             TEXT    NOT NULL DEFAULT '',
	attempt           INTEGER NOT NULL DEFAULT 1,
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	wait_ns           INTEGER NOT NULL DEFAULT 0,
	first_token_ns    INTEGER NOT NULL DEFAULT 0,
	duration_ns       INTEGER NOT NULL DEFAULT 0,
	streamed          INTEGER NOT NULL DEFAULT 0,
	finish_reason     TEXT    NOT NULL DEFAULT '',
	tool_calls        INTEGER NOT NULL DEFAULT 0,
	error             TEXT    NOT NULL DEFAULT '',
	envelope_seq      INTEGER,
	usage_estimated   INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS llm_calls_conversation ON llm_calls (conversation, id);
CREATE INDEX IF NOT EXISTS llm_calls_thread ON llm_calls (thread, id);
CREATE INDEX IF NOT EXISTS llm_calls_time ON llm_calls (time_ns);
`

// maxCallText bounds the error text a call row keeps.
const maxCallText = 4 << 10

// CallRow is one LLM call (one attempt at one backend) as the store keeps
// it.
type CallRow struct {
	// ID numbers the calls in the order they were recorded (AppendCall).
	ID int64
	// Time is when the attempt began.
	Time time.Time
	// Conversation and Thread are where the agent worked; Agent is its name.
	Conversation, Thread, Agent string
	// Backend names the backend; Model is the model that answered (or was
	// asked for when the call failed).
	Backend, Model string
	// Attempt numbers the attempts of one model call from 1.
	Attempt int
	// PromptTokens and CompletionTokens are the call's usage (of a failed
	// or aborted call: the estimate of what it spent once the model had
	// begun to stream, else 0).
	PromptTokens, CompletionTokens int
	// UsageEstimated says the tokens are an estimate (4 bytes a token):
	// the backend reported no usage, or the call was stopped mid-stream.
	UsageEstimated bool
	// Wait is the time spent waiting for the backend's limits, FirstToken
	// the time to the first streamed piece (0: none), Duration the whole
	// attempt.
	Wait, FirstToken, Duration time.Duration
	// Streamed says the call asked for a stream.
	Streamed bool
	// FinishReason is why the model stopped ("aborted" for a call its
	// caller stopped, "" for a failed call).
	FinishReason string
	// ToolCalls is how many tool calls the reply made.
	ToolCalls int
	// Error is why the call failed ("" when it succeeded).
	Error string
	// EnvelopeSeq is the journal seq of the envelope the call produced (0:
	// not known, see LinkCalls).
	EnvelopeSeq int64
}

// AppendCall records c with the next call id (c.ID is ignored) and returns
// it. The write is asynchronous, ordered with the journal's: a call
// recorded before an envelope is appended is committed with or before it.
func (s *Store) AppendCall(c CallRow) (int64, error) {
	if c.Backend == "" {
		return 0, fmt.Errorf("%w: call without a backend", ErrInvalid)
	}
	at, err := encodeTime("time", c.Time)
	if err != nil {
		return 0, err
	}
	if at == nil {
		return 0, fmt.Errorf("%w: call without a time", ErrInvalid)
	}
	if len(c.Error) > maxCallText {
		c.Error = strings.ToValidUTF8(c.Error[:maxCallText], "") + "…"
	}
	var link any
	if c.EnvelopeSeq > 0 {
		link = c.EnvelopeSeq
	}
	id := s.callSeq.Add(1)
	args := []any{id, at, c.Conversation, c.Thread, c.Agent, c.Backend, c.Model, int64(c.Attempt),
		int64(c.PromptTokens), int64(c.CompletionTokens), int64(c.Wait), int64(c.FirstToken), int64(c.Duration),
		c.Streamed, c.FinishReason, int64(c.ToolCalls), c.Error, link, c.UsageEstimated}
	err = s.enqueueAsync(&op{kind: opFunc, name: "append call", fn: func(w *writer) (int64, error) {
		return w.exec(`INSERT INTO llm_calls (id, time_ns, conversation, thread, agent, backend, model, attempt,
			prompt_tokens, completion_tokens, wait_ns, first_token_ns, duration_ns, streamed, finish_reason, tool_calls,
			error, envelope_seq, usage_estimated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
	}})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// LinkCalls records seq as the envelope the calls ids produced (calls
// already linked keep their link). Asynchronous, like AppendCall.
func (s *Store) LinkCalls(ids []int64, seq int64) error {
	if len(ids) == 0 {
		return nil
	}
	if seq <= 0 {
		return fmt.Errorf("%w: link calls to seq %d", ErrInvalid, seq)
	}
	ids = slices.Clone(ids)
	return s.enqueueAsync(&op{kind: opFunc, name: "link calls", fn: func(w *writer) (int64, error) {
		var n int64
		for _, id := range ids {
			k, err := w.exec(`UPDATE llm_calls SET envelope_seq = ? WHERE id = ? AND envelope_seq IS NULL`, seq, id)
			if err != nil {
				return n, err
			}
			n += k
		}
		return n, nil
	}})
}

// CallFilter selects calls: those of a conversation or thread (Thread
// matches either; "" matches every call), the newest Limit (0: 100).
type CallFilter struct {
	Thread string
	Limit  int
}

// maxCallLimit bounds the calls one read returns.
const maxCallLimit = 1000

// Calls returns the newest calls f selects, oldest first.
func (r *Reader) Calls(f CallFilter) ([]CallRow, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, maxCallLimit)
	estimated, err := r.callsEstimated()
	if err != nil {
		return nil, fmt.Errorf("store: read calls: %w", err)
	}
	query := `SELECT id, time_ns, conversation, thread, agent, backend, model, attempt, prompt_tokens,
		completion_tokens, wait_ns, first_token_ns, duration_ns, streamed, finish_reason, tool_calls, error,
		envelope_seq, ` + estimated + ` FROM llm_calls`
	args := []any{}
	if f.Thread != "" {
		query += ` WHERE id IN (SELECT id FROM llm_calls WHERE conversation = ? UNION SELECT id FROM llm_calls WHERE thread = ?)`
		args = append(args, f.Thread, f.Thread)
	}
	query += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	var out []CallRow
	err = r.read(func(db *sql.DB) error {
		var err error
		out, err = scanRows(context.Background(), db, query, args, func(rows *sql.Rows) (CallRow, error) {
			var (
				c                    CallRow
				at, wait, first, dur int64
				link                 sql.NullInt64
			)
			err := rows.Scan(&c.ID, &at, &c.Conversation, &c.Thread, &c.Agent, &c.Backend, &c.Model, &c.Attempt,
				&c.PromptTokens, &c.CompletionTokens, &wait, &first, &dur, &c.Streamed, &c.FinishReason, &c.ToolCalls,
				&c.Error, &link, &c.UsageEstimated)
			c.Time = time.Unix(0, at).UTC()
			c.Wait, c.FirstToken, c.Duration = time.Duration(wait), time.Duration(first), time.Duration(dur)
			c.EnvelopeSeq = link.Int64
			return c, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: read calls: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// callsEstimated returns what Calls selects for a call's usage_estimated:
// the column, or 0 in a database an older binary wrote that no Open has
// migrated yet (a read-only reader's; the column is never dropped, so
// once seen it is not looked for again).
func (r *Reader) callsEstimated() (string, error) {
	if r.callsEstimatedCol.Load() {
		return "usage_estimated", nil
	}
	var n int
	err := r.read(func(db *sql.DB) error {
		return db.QueryRowContext(context.Background(),
			`SELECT count(*) FROM pragma_table_info('llm_calls') WHERE name = 'usage_estimated'`).Scan(&n)
	})
	if err != nil {
		return "", err
	}
	if n == 0 {
		return "0", nil
	}
	r.callsEstimatedCol.Store(true)
	return "usage_estimated", nil
}

// CallTotals sums the tokens of a thread's successful calls.
type CallTotals struct {
	PromptTokens, CompletionTokens, Calls int
}

// ThreadCallTotals returns, for each thread keep accepts, the sums of its
// successful calls (those without an error), read with the llm_calls
// index on thread: what a restarted organism's token ledger restores, so
// a thread's budget (budgets.thread_tokens) goes on counting across a
// restart instead of starting again.
func (s *Store) ThreadCallTotals(ctx context.Context, keep func(thread string) bool) (map[string]CallTotals, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	out := map[string]CallTotals{}
	err := eachRow(ctx, s.rdb, `SELECT thread, SUM(prompt_tokens), SUM(completion_tokens), COUNT(*)
		FROM llm_calls WHERE thread <> '' AND error = '' GROUP BY thread`, nil, func(rows *sql.Rows) error {
		var (
			thread string
			t      CallTotals
		)
		if err := rows.Scan(&thread, &t.PromptTokens, &t.CompletionTokens, &t.Calls); err != nil {
			return err
		}
		if keep(thread) {
			out[thread] = t
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: thread call totals: %w", err)
	}
	return out, nil
}
