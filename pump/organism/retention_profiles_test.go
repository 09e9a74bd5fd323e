package organism

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/hello"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// converseAs is converse for a conversation begun under profile.
func converseAs(t *testing.T, o *Organism, profile, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	conv, err := o.Pump.Send(pump.WithProfile(ctx, profile), "console", "greeter", &hello.Greeting{Name: name},
		pump.OutletFunc(func(e pump.Event) {
			if e.Kind == pump.EventComplete {
				close(done)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("conversation of %s never completed", profile)
	}
	return conv
}

// viewRow is one row of the journal view.
type viewRow struct {
	seq                   int64
	kind, listener        string
	profile, pruned, load sql.NullString
}

// conversationView reads the journal view's rows of conv, by seq.
func conversationView(t *testing.T, db *sql.DB, conv string) []viewRow {
	t.Helper()
	rows, err := db.Query(`SELECT seq, kind, listener, profile, pruned, payload FROM journal WHERE conversation = ? ORDER BY seq`, conv)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []viewRow
	for rows.Next() {
		var r viewRow
		if err := rows.Scan(&r.seq, &r.kind, &r.listener, &r.profile, &r.pruned, &r.load); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRetentionByProfile runs the hello-world organism with three profiles
// of different retention — prune_on_delivery, retain_forever and a window
// — and one conversation under each, then reads the journal view with SQL:
// every entry records its conversation's profile; the forgetful
// conversation's delivered messages and the brief one's entries are
// pruned, keeping their metadata and saying why; the keeper's stay whole.
func TestRetentionByProfile(t *testing.T) {
	dir := t.TempDir()
	o, out := startDurableHello(t, dir, func(c *config.Organism) {
		c.Profiles = map[string]config.Profile{
			"forgetful": {Listeners: []string{"*"}, Retention: config.Retention{Policy: config.PruneOnDelivery}},
			"keeper":    {Listeners: []string{"*"}, Retention: config.Retention{Policy: config.RetainForever}},
			"brief": {Listeners: []string{"*"},
				Retention: config.Retention{Policy: config.Window, Window: config.Duration(50 * time.Millisecond)}},
		}
		c.Journal.Retention = config.Retention{Policy: config.RetainForever}
		c.Journal.SweepInterval = config.Duration(10 * time.Millisecond)
	})
	defer shutdown(t, o)
	convs := map[string]string{}
	for _, p := range []string{"forgetful", "keeper", "brief"} {
		convs[p] = converseAs(t, o, p, p)
		<-out.ch
	}
	if err := o.Store().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, store.DatabaseFileName)+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// prunedBy reports whether every entry of conv the policy prunes is
	// pruned (a delivered message for prune_on_delivery, every entry for
	// the window).
	done := func(profile string, rows []viewRow) bool {
		for _, r := range rows {
			prunable := profile == "brief" || r.kind == "message" && r.listener != ""
			if prunable && !r.pruned.Valid {
				return false
			}
		}
		return len(rows) > 0
	}
	deadline := time.Now().Add(30 * time.Second)
	for !done("forgetful", conversationView(t, db, convs["forgetful"])) || !done("brief", conversationView(t, db, convs["brief"])) {
		if time.Now().After(deadline) {
			t.Fatalf("not pruned after 30 s:\nforgetful %+v\nbrief %+v", conversationView(t, db, convs["forgetful"]),
				conversationView(t, db, convs["brief"]))
		}
		time.Sleep(20 * time.Millisecond) // polling the sweeper's effect on the database
	}

	wantReason := map[string]string{"forgetful": "prune_on_delivery at ", "brief": "window(50ms) at "}
	for profile, conv := range convs {
		rows := conversationView(t, db, conv)
		t.Logf("%s: %+v", profile, rows)
		if len(rows) < 3 {
			t.Fatalf("%s: %d journal rows, want the greeting, the greeter's answer and the shout: %+v", profile, len(rows), rows)
		}
		pruned := 0
		for _, r := range rows {
			if r.profile.String != profile {
				t.Errorf("%s seq %d: profile %+v, want %q", profile, r.seq, r.profile, profile)
			}
			switch {
			case r.pruned.Valid:
				pruned++
				if !strings.HasPrefix(r.pruned.String, wantReason[profile]) || r.load.Valid {
					t.Errorf("%s seq %d: pruned %q with payload %v, want %q… without", profile, r.seq, r.pruned.String,
						r.load.Valid, wantReason[profile])
				}
			case !r.load.Valid:
				t.Errorf("%s seq %d: kept without its payload", profile, r.seq)
			}
		}
		switch {
		case profile == "keeper" && pruned != 0:
			t.Errorf("keeper: %d entries pruned, want none: %+v", pruned, rows)
		case profile != "keeper" && pruned == 0:
			t.Errorf("%s: nothing pruned: %+v", profile, rows)
		}
	}
	rep, err := o.Store().Verify(context.Background(), nil)
	if err != nil || !rep.OK() {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

// TestRetentionPolicyCombines: the organism's retention function takes a
// profile's retention over journal.retention, combines it with the
// listener's own so that nothing either keeps is lost, and falls back to
// the listener's or the journal's without a profile retention.
func TestRetentionPolicyCombines(t *testing.T) {
	cfg, err := config.Load("../../organism.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Journal.Retention = config.Retention{Policy: config.RetainDays, Days: 30}
	cfg.Profiles = map[string]config.Profile{
		"concierge": {Listeners: []string{"*"}, Retention: config.Retention{Policy: config.PruneOnDelivery}},
		"audit":     {Listeners: []string{"*"}, Retention: config.Retention{Policy: config.Window, Window: config.Duration(time.Hour)}},
		"coder":     {Listeners: []string{"*"}, Retention: config.Retention{Policy: config.RetainForever}},
		"plain":     {Listeners: []string{"*"}},
	}
	for i := range cfg.Listeners {
		if cfg.Listeners[i].Name == "shouter" {
			cfg.Listeners[i].Retention = config.Retention{Policy: config.RetainDays, Days: 2}
		}
	}
	policy := RetentionPolicy(cfg)
	tests := []struct {
		listener, profile string
		want              store.Retention
	}{
		{"greeter", "", store.Retention{Policy: store.RetainDays, Days: 30}},
		{"shouter", "", store.Retention{Policy: store.RetainDays, Days: 2}},
		{"greeter", "plain", store.Retention{Policy: store.RetainDays, Days: 30}},
		{"greeter", "unknown", store.Retention{Policy: store.RetainDays, Days: 30}},
		{"greeter", "callable:calculate", store.Retention{Policy: store.RetainDays, Days: 30}},
		{"greeter", "concierge", store.Retention{Policy: store.PruneOnDelivery}},
		{"greeter", "audit", store.Retention{Policy: store.Window, Window: time.Hour}},
		{"shouter", "concierge", store.Retention{Policy: store.PruneOnDelivery, Window: 48 * time.Hour}},
		{"shouter", "audit", store.Retention{Policy: store.RetainDays, Days: 2}},
		{"shouter", "coder", store.Retention{Policy: store.RetainForever}},
		{"greeter", "audit&concierge", store.Retention{Policy: store.PruneOnDelivery, Window: time.Hour}},
		{"greeter", "coder&concierge", store.Retention{Policy: store.RetainForever}},
		{"greeter", "concierge&plain", store.Retention{Policy: store.PruneOnDelivery}},
	}
	for _, tt := range tests {
		if got := policy(tt.listener, tt.profile); got != tt.want {
			t.Errorf("policy(%q, %q) = %+v, want %+v", tt.listener, tt.profile, got, tt.want)
		}
	}
}

// TestRetentionReloadAppliesToProfile: a reload that shortens a profile's
// retention applies from the next sweep, to the entries already journaled
// under the profile as well as to new ones; the thread keeps its profile.
func TestRetentionReloadAppliesToProfile(t *testing.T) {
	dir := t.TempDir()
	profiles := func(r config.Retention) map[string]config.Profile {
		return map[string]config.Profile{"shifting": {Listeners: []string{"*"}, Retention: r}}
	}
	o, out := startDurableHello(t, dir, func(c *config.Organism) {
		c.Profiles = profiles(config.Retention{Policy: config.RetainForever})
		c.Journal.SweepInterval = config.Duration(10 * time.Millisecond)
	})
	defer shutdown(t, o)
	before := converseAs(t, o, "shifting", "before")
	<-out.ch
	if err := o.Store().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, store.DatabaseFileName)+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, r := range conversationView(t, db, before) {
		if r.pruned.Valid {
			t.Fatalf("pruned under retain_forever: %+v", r)
		}
	}

	next := *o.CurrentConfig()
	next.Profiles = profiles(config.Retention{Policy: config.PruneOnDelivery})
	if _, err := o.Reload(&next); err != nil {
		t.Fatal(err)
	}
	after := converseAs(t, o, "shifting", "after")
	<-out.ch
	deadline := time.Now().Add(30 * time.Second)
	for _, conv := range []string{before, after} {
		for {
			rows := conversationView(t, db, conv)
			pruned := 0
			for _, r := range rows {
				if r.profile.String != "shifting" {
					t.Fatalf("profile %+v, want shifting", r.profile)
				}
				if r.pruned.Valid {
					pruned++
				}
			}
			if len(rows) > 0 && pruned == len(rows) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the reload, not pruned: %+v", rows)
			}
			time.Sleep(20 * time.Millisecond) // polling the sweeper's effect on the database
		}
	}
}
