package federation

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestAbsentImportToldOnceThenQuiet: A imports Echo and Shot, a typo of
// the Shout B exports. Echo is imported; Shot is asked for a few times
// quickly (a listener B is still registering would arrive then), then told
// once — naming the tag and what B exports, the closest first — and asked
// for only every quietImportPause: not warned of every 30 s for ever. A
// tag B exports soon after the link came up is imported in the fast phase.
func TestAbsentImportToldOnceThenQuiet(t *testing.T) {
	echo := imported{Tag: "Echo", Name: "echo", Description: "echoes", XSD: echoXSD("")}
	shout := imported{Tag: "Shout", Name: "shout", Description: "shouts",
		XSD: []byte(strings.ReplaceAll(string(echoXSD("")), "Echo", "Shout"))}
	fast := []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond}
	tests := []struct {
		name    string
		imports []string
		// late is exported once A asked the first time (nil: never).
		late *imported
		// pauses are the pauses A takes before asking again.
		pauses []time.Duration
		// told is A's one line about the tag, "" for none.
		told string
	}{{
		name:    "typo",
		imports: []string{"Echo", "Shot"},
		pauses:  append(fast, quietImportPause),
		told:    `import <Shot>: the peer does not export it; it exports <Shout>, <Echo>`,
	}, {
		name:    "registered late",
		imports: []string{"Echo", "Shout"},
		late:    &shout,
		pauses:  fast[:1],
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			aKey := newKey(t)
			c := newCallee(t, aKey)
			meta := &exportsMeta{}
			c.m.opts.Meta = meta
			if tt.late == nil {
				meta.set(echo, shout)
			} else {
				meta.set(echo)
			}
			logs := &logBuffer{}
			log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			p := callerPump(t, log, nil)
			m, err := New(Options{Organism: "a", Key: aKey, Pump: p, Logger: log, BackoffBase: 10 * time.Millisecond,
				Gateways: []config.Gateway{{Name: "b", RemoteURL: c.url(), TrustedIdentity: writePublic(t, c.key),
					Import: tt.imports}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := m.Close(); err != nil {
					t.Error(err)
				}
				if t.Failed() {
					t.Logf("caller log:\n%s", logs.String())
				}
			})
			m.importPause = time.Millisecond
			pauses := make(chan time.Duration, 16)
			m.onImportPause = func(_ string, d time.Duration) {
				if tt.late != nil {
					meta.set(echo, *tt.late)
				}
				pauses <- d
			}
			done := make(chan struct{})
			var once sync.Once
			m.onRefresh = func(_ string, err error) {
				if err == nil {
					once.Do(func() { close(done) })
				}
			}
			m.Start()

			var got []time.Duration
			deadline := time.After(30 * time.Second)
			for len(got) < len(tt.pauses) {
				select {
				case d := <-pauses:
					got = append(got, d)
				case <-deadline:
					t.Fatalf("A paused %v, want %v", got, tt.pauses)
				}
			}
			if diff := cmp.Diff(tt.pauses, got); diff != "" {
				t.Errorf("A's pauses before asking again (-want +got):\n%s", diff)
			}
			if tt.late != nil {
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					t.Fatal("the late export was not imported")
				}
				if _, ok := p.Lookup(tt.late.Name); !ok {
					t.Errorf("%s not imported", tt.late.Name)
				}
			}
			if _, ok := p.Lookup("echo"); !ok {
				t.Error("the good import was not imported beside the missing one")
			}
			s := logs.String()
			if strings.Contains(s, "asking the peer again") {
				t.Errorf("A warns of the missing import on every attempt:\n%s", s)
			}
			if tt.told != "" && strings.Count(s, tt.told) != 1 {
				t.Errorf("A's log says %q %d times, want once:\n%s", tt.told, strings.Count(s, tt.told), s)
			}
		})
	}
}
