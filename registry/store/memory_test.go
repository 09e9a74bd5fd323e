package store

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestMemoryPutSearchDelete(t *testing.T) {
	s, dir := openTest(t, Options{})
	ctx := context.Background()
	at := time.Unix(1_700_000_000, 0).UTC()
	rows := []MemoryRow{
		{ID: "m1", User: "alice", Agent: "researcher", Content: "Alice prefers tea over coffee", Tags: []string{"drinks"},
			Consent: "ap1", Conversation: "c1", Thread: "t1", CreatedAt: at},
		{ID: "m2", User: "alice", Agent: "researcher", Content: "Alice's café is Le Procope", Consent: "policy:always",
			CreatedAt: at.Add(time.Second)},
		{ID: "m3", User: "bob", Agent: "researcher", Content: "Bob prefers coffee", Consent: "ap2", CreatedAt: at.Add(2 * time.Second)},
		{ID: "m4", User: "", Agent: "planner", Content: "The organism's own note about tea", Consent: "policy:always",
			CreatedAt: at.Add(3 * time.Second)},
	}
	for _, r := range rows {
		if err := s.PutMemory(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(ms []MemoryRow) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    MemoryQuery
		want []string
	}{
		{"alice newest first", MemoryQuery{User: "alice"}, []string{"m2", "m1"}},
		{"alice tea", MemoryQuery{User: "alice", Text: "tea?"}, []string{"m1"}},
		{"diacritics folded", MemoryQuery{User: "alice", Text: "cafe"}, []string{"m2"}},
		{"operators are words", MemoryQuery{User: "alice", Text: `tea" OR NEAR(coffee) *`}, []string{"m1"}},
		{"bob cannot see alice", MemoryQuery{User: "bob", Text: "tea"}, nil},
		{"organism space", MemoryQuery{User: "", Text: "tea"}, []string{"m4"}},
		{"tags match", MemoryQuery{User: "alice", Text: "drinks"}, []string{"m1"}},
		{"any user", MemoryQuery{AnyUser: true, Text: "coffee"}, []string{"m3", "m1"}},
		{"limit", MemoryQuery{AnyUser: true, Limit: 2}, []string{"m4", "m3"}},
		{"by id", MemoryQuery{AnyUser: true, ID: "m3"}, []string{"m3"}},
		{"no words: newest", MemoryQuery{User: "alice", Text: "?!"}, []string{"m2", "m1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Memories(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(got); !slices.Equal(g, tc.want) {
				t.Fatalf("got %v, want %v", g, tc.want)
			}
		})
	}
	got, _ := s.Memories(ctx, MemoryQuery{User: "alice", ID: "m1"})
	if len(got) != 1 || got[0].Consent != "ap1" || got[0].Tags[0] != "drinks" || !got[0].CreatedAt.Equal(at) ||
		got[0].Conversation != "c1" || got[0].Thread != "t1" || got[0].Agent != "researcher" {
		t.Fatalf("row %+v", got)
	}
	if err := s.PutMemory(ctx, rows[0]); err == nil {
		t.Fatal("duplicate id stored")
	}
	for _, bad := range []MemoryRow{
		{Agent: "a", Content: "x", Consent: "c", CreatedAt: at},
		{ID: "x", Content: "x", Consent: "c", CreatedAt: at},
		{ID: "x", Agent: "a", Content: "  ", Consent: "c", CreatedAt: at},
		{ID: "x", Agent: "a", Content: "x", CreatedAt: at},
		{ID: "x", Agent: "a", Content: "x", Consent: "c"},
		{ID: "x", Agent: "a", Content: "x", Consent: "c", CreatedAt: at, Tags: []string{"a\nb"}},
	} {
		if err := s.PutMemory(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutMemory(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	if err := s.DeleteMemory(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMemory(ctx, "m1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if got, _ := s.Memories(ctx, MemoryQuery{User: "alice", Text: "tea"}); len(got) != 0 {
		t.Fatalf("deleted memory still found: %+v", got)
	}
	// A restart keeps the rest, index included.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openAt(t, dir, Options{})
	if got, _ := s2.Memories(ctx, MemoryQuery{User: "alice", Text: "cafe"}); len(got) != 1 || got[0].ID != "m2" {
		t.Fatalf("after restart: %+v", got)
	}
}
