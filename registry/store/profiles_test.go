package store

import (
	"context"
	"testing"
)

// TestLayout1GetsProfiles: a database of layout 1 (users and threads
// without their profile columns) opens at the current layout: the columns are added,
// the rows kept, and profiles are stored from then on.
func TestLayout1GetsProfiles(t *testing.T) {
	s, dir := openTest(t, Options{})
	must(t, s.Close())
	db := rawDB(t, dir)
	for _, q := range []string{
		`ALTER TABLE users DROP COLUMN profile`,
		`ALTER TABLE threads DROP COLUMN profile`,
		`INSERT INTO users (name, password_hash, role) VALUES ('ann', 'h', 'viewer')`,
		`INSERT INTO threads (id, path) VALUES ('t1', '["org"]')`,
		`PRAGMA user_version = 1`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must(t, db.Close())

	s = openAt(t, dir, Options{})
	ctx := context.Background()
	u, err := s.GetUser(ctx, "ann")
	if err != nil || u.Profile != "" || u.Role != "viewer" {
		t.Fatalf("ann after the upgrade: %+v, %v", u, err)
	}
	u.Profile = "calc"
	must(t, s.PutUser(ctx, u))
	if u, err := s.GetUser(ctx, "ann"); err != nil || u.Profile != "calc" {
		t.Fatalf("ann's profile: %+v, %v", u, err)
	}
	must(t, s.PutThread(ThreadRow{ID: "t2", Path: []string{"org"}, Profile: "calc&readers"}))
	flush(t, s)
	rows, err := s.LoadThreads()
	must(t, err)
	if len(rows) != 2 || rows[0].ID != "t1" || rows[0].Profile != "" || rows[1].Profile != "calc&readers" {
		t.Fatalf("threads after the upgrade: %+v", rows)
	}
	must(t, s.Close())
	if v := userVersion(t, dir); v != layoutVersion {
		t.Errorf("user_version = %d, want %d", v, layoutVersion)
	}
}
