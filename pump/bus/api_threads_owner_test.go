package bus

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
)

// threadOwners reads GET /api/v1/threads as token and returns each
// listed thread's owner by thread id, and each thread's conversation.
func threadOwners(t *testing.T, f *fixture, token string) (owners, convs map[string]string) {
	t.Helper()
	status, body, _ := f.do("GET", "/api/v1/threads?limit=200", token, nil)
	if status != http.StatusOK {
		t.Fatalf("threads: %d %v", status, body)
	}
	owners, convs = map[string]string{}, map[string]string{}
	for _, row := range body["threads"].([]any) {
		th := row.(map[string]any)
		owner, ok := th["owner"].(string)
		if !ok {
			t.Errorf("thread %v has no owner field", th["id"])
		}
		owners[th["id"].(string)] = owner
		convs[th["id"].(string)] = th["conversation"].(string)
	}
	return owners, convs
}

// TestThreadsCarryTheirOwner: every thread of a conversation, listed or
// looked up, names the user who began it — through REST or /ws alike, the
// user the cancel and kill ownership check knows — for any reader,
// viewers too.
func TestThreadsCarryTheirOwner(t *testing.T) {
	f := newFixture(t)
	done := f.watchCompletions()
	olga := f.loginAs("olga", auth.Operator)
	ada := f.loginAs("ada", auth.Admin)
	vic := f.loginAs("vic", auth.Viewer)

	inject := func(token string) string {
		t.Helper()
		s, b, _ := f.do("POST", "/api/v1/inject", token, map[string]any{"to": "greeter",
			"payload": map[string]string{"name": "Owner"}})
		if s != http.StatusOK {
			t.Fatalf("inject: %d %v", s, b)
		}
		return b["thread_id"].(string)
	}
	byREST, byAdmin := inject(olga), inject(ada)
	ws := f.dial("/ws", olga)
	readUntil(t, ws, "connected")
	writeFrame(t, ws, frame{"type": "send", "raw": "@greeter Dan"})
	bySocket := readUntil(t, ws, "sent")["thread_id"].(string)
	for _, c := range []string{byREST, byAdmin, bySocket} {
		done.wait(t, c)
	}
	f.waitJournal()

	want := map[string]string{byREST: "olga", byAdmin: "ada", bySocket: "olga"}
	owners, convs := threadOwners(t, f, vic)
	got := map[string]string{}
	for id, owner := range owners {
		conv := convs[id]
		if _, ours := want[conv]; !ours {
			continue
		}
		if owner != want[conv] {
			t.Errorf("thread %s of conversation %s: owner %q, want %q", id, conv, owner, want[conv])
		}
		got[conv] = owner
		// The thread's own lookup says the same.
		s, b, _ := f.do("GET", "/api/v1/threads/"+id, vic, nil)
		if s != http.StatusOK || b["owner"] != want[conv] {
			t.Errorf("GET /api/v1/threads/%s: %d owner %v, want %q", id, s, b["owner"], want[conv])
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("owners of the conversations listed (-want +got):\n%s", diff)
	}
	if len(owners) <= len(want) {
		t.Errorf("only %d threads listed: the conversations' inner threads are missing", len(owners))
	}
}

// TestThreadOwnersFollowTheProfile: a user with a profile learns the owner
// of no conversation it may not see — those are not listed at all, and
// their ids are unknown to it — while a user without one sees each owner.
func TestThreadOwnersFollowTheProfile(t *testing.T) {
	f := newFixtureWith(t, profiledOrganism)
	done := f.watchCompletions()
	secret := f.user("calcuser", auth.Operator)
	if err := f.auth.SetProfile(context.Background(), "calcuser", "calc"); err != nil {
		t.Fatal(err)
	}
	calc := f.login("calcuser", secret)
	f.nextStep()
	open := f.loginAs("open", auth.Admin)
	inject := func(token, to string, payload map[string]string) string {
		t.Helper()
		s, b, _ := f.do("POST", "/api/v1/inject", token, map[string]any{"to": to, "payload": payload})
		if s != http.StatusOK {
			t.Fatalf("inject %s: %d %v", to, s, b)
		}
		return b["thread_id"].(string)
	}
	mine := inject(calc, "calculate", map[string]string{"expression": "6 * 7"})
	greet := inject(open, "greeter", map[string]string{"name": "Ann"})
	sum := inject(open, "calculate", map[string]string{"expression": "1 + 1"})
	for _, c := range []string{mine, greet, sum} {
		done.wait(t, c)
	}
	f.waitJournal()

	owners, _ := threadOwners(t, f, calc)
	if diff := cmp.Diff(map[string]string{mine: "calcuser"}, owners); diff != "" {
		t.Errorf("threads the calc user sees, by owner (-want +got):\n%s", diff)
	}
	for _, id := range []string{greet, sum} {
		if s, b, _ := f.do("GET", "/api/v1/threads/"+id, calc, nil); s != http.StatusNotFound {
			t.Errorf("another's thread %s for the calc user: %d %v, want 404", id, s, b)
		}
	}
	owners, _ = threadOwners(t, f, open)
	for id, want := range map[string]string{mine: "calcuser", greet: "open", sum: "open"} {
		if owners[id] != want {
			t.Errorf("thread %s for the user without a profile: owner %q, want %q", id, owners[id], want)
		}
	}
}
