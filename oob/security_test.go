package oob

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRefusals: every refused request is answered with the XSD's <error>
// and logged as a security event; the operation never runs.
func TestRefusals(t *testing.T) {
	f := newFixture(t, nil)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	const op = `<shutdown><reason>attack</reason></shutdown>`
	signed := func(key ed25519.PrivateKey, at time.Time, id string) []byte {
		b, err := SignRequest(key, id, at, []byte(op))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	now := f.clock()
	good := signed(f.owner, now, "replay-me")
	if c := code(f.handle(t, good)); c != "" {
		t.Fatalf("first use refused: %s", c)
	}
	<-f.stopped
	f.srv.ops.stopping.Store(false) // let later shutdowns reach the checks
	tampered := bytes.Replace(signed(f.owner, now, "t"), []byte("attack"), []byte("attacK"), 1)
	tests := []struct {
		name string
		raw  []byte
		code string
		log  string
	}{
		{"not xml", []byte("hello"), CodeMalformed, "malformed OOB request"},
		{"wrong root", []byte(`<message xmlns="https://xml-pipeline.org/ns/envelope/v1"/>`), CodeMalformed, "malformed OOB request"},
		{"unsigned", []byte(`<privileged-msg xmlns="` + NS + `" version="1.1"><payload timestamp="` +
			now.UTC().Format(time.RFC3339) + `">` + op + `</payload></privileged-msg>`), CodeUnsigned, "unsigned OOB request"},
		{"empty signature", regexp.MustCompile(`(<signature[^>]*>)[^<]*`).ReplaceAll(good, []byte("$1")),
			CodeUnsigned, "unsigned OOB request"},
		{"signed by another key", signed(other, now, "x"), CodeInvalidSignature, "wrongly signed OOB request"},
		{"payload changed after signing", tampered, CodeInvalidSignature, "wrongly signed OOB request"},
		{"not base64", bytes.Replace(signed(f.owner, now, "b"), []byte(`algorithm="ed25519">`), []byte(`algorithm="ed25519">!!`), 1),
			CodeInvalidSignature, "wrongly signed OOB request"},
		{"other algorithm", bytes.Replace(signed(f.owner, now, "a"), []byte(`algorithm="ed25519"`), []byte(`algorithm="rsa"`), 1),
			CodeInvalidSignature, "wrongly signed OOB request"},
		{"not in the schema", func() []byte {
			b, _ := SignRequest(f.owner, "s", now, []byte(`<reboot/>`))
			return b
		}(), CodeMalformed, "invalid OOB request"},
		{"61s old", signed(f.owner, now.Add(-61*time.Second), "old"), CodeStale, "stale OOB request"},
		{"61s ahead", signed(f.owner, now.Add(61*time.Second), "new"), CodeStale, "stale OOB request"},
		{"replayed", good, CodeReplayed, "replayed OOB request"},
		{"replayed with the base64 reflowed", regexp.MustCompile(`(<signature[^>]*>)(.{20})`).ReplaceAll(good, []byte("$1$2\n  ")),
			CodeReplayed, "replayed OOB request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.handle(t, tc.raw)
			if got := code(r); got != tc.code {
				t.Fatalf("code %q (%+v), want %q", got, r.Payload.Error, tc.code)
			}
			if !f.securityLogged(tc.log) {
				t.Fatalf("no security event %q in\n%s", tc.log, f.logs)
			}
			select {
			case <-f.stopped:
				t.Fatal("a refused shutdown ran")
			default:
			}
		})
	}
	// A value the schema's type refuses fails Go's decoding first; the
	// answer still says what the XSD wants.
	b, err := SignRequest(f.owner, "v", now, []byte(`<list-listeners><detailed>maybe</detailed></list-listeners>`))
	if err != nil {
		t.Fatal(err)
	}
	want := &ErrorResponse{Code: CodeMalformed, Message: "the request does not match privileged-msg.xsd"}
	got := f.handle(t, b).Payload.Error
	if got == nil || got.Code != want.Code || got.Message != want.Message || !strings.Contains(got.Details, "'maybe'") {
		t.Fatalf("detailed=maybe answered %+v, want %+v with details naming 'maybe'", got, want)
	}
	// 59 s either way is within the window.
	for i, d := range []time.Duration{-59 * time.Second, 59 * time.Second} {
		if c := code(f.handle(t, signed(f.owner, now.Add(d), fmt.Sprint("edge", i)))); c != "" {
			t.Fatalf("%v skew refused: %s", d, c)
		}
		<-f.stopped
		f.srv.ops.stopping.Store(false)
	}
}

// TestThousandSignatures: 1,000 requests with 1,000 distinct signatures are
// all accepted; any one of them replayed is refused.
func TestThousandSignatures(t *testing.T) {
	f := newFixture(t, nil)
	reqs := make([][]byte, 1000)
	for i := range reqs {
		reqs[i] = f.sign(t, fmt.Sprintf("r%d", i), `<get-status/>`)
	}
	for i, raw := range reqs {
		if c := code(f.handle(t, raw)); c != "" {
			t.Fatalf("request %d refused: %s", i, c)
		}
	}
	if n := f.srv.replay.len(); n != 1000 {
		t.Fatalf("replay cache holds %d, want 1000", n)
	}
	for _, i := range []int{0, 499, 999} {
		if c := code(f.handle(t, reqs[i])); c != CodeReplayed {
			t.Fatalf("replay of %d: %q", i, c)
		}
	}
}

// TestReplayCacheBounded: the cache forgets a signature once its timestamp
// left the window, and when full of live ones refuses rather than forgets.
func TestReplayCacheBounded(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.ReplayMax = 3 })
	for i := range 3 {
		if c := code(f.do(t, `<get-status/>`)); c != "" {
			t.Fatalf("request %d: %s", i, c)
		}
	}
	if c := code(f.do(t, `<get-status/>`)); c != CodeBusy {
		t.Fatalf("4th request: %q, want %s", c, CodeBusy)
	}
	if !f.securityLogged("OOB replay cache full") {
		t.Fatal("full cache not logged")
	}
	f.advance(61 * time.Second)
	if c := code(f.do(t, `<get-status/>`)); c != "" {
		t.Fatalf("after expiry: %q", c)
	}
	if n := f.srv.replay.len(); n != 1 {
		t.Fatalf("cache holds %d after expiry, want 1", n)
	}
}

// TestSignedRequestsValid: what SignRequest builds is a valid privileged-msg.
func TestSignedRequestsValid(t *testing.T) {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	for _, op := range []string{`<list-listeners/>`, `<get-status><include-metrics>true</include-metrics></get-status>`,
		`<inject-message><to>a</to><payload><X xmlns="urn:x"><y/></X></payload></inject-message>`} {
		b, err := SignRequest(k, `id "with" <chars>`, time.Now(), []byte(op))
		if err != nil {
			t.Fatal(err)
		}
		validDoc(t, b)
		if !strings.Contains(string(b), `<signature algorithm="ed25519">`) {
			t.Fatalf("%s", b)
		}
	}
}

// BenchmarkHandle measures one signed get-status through the whole
// acceptance path (parse, XSD, C14N + Ed25519 verify, replay cache) and the
// operation.
func BenchmarkHandle(b *testing.B) {
	f := newFixture(b, nil)
	reqs := make([][]byte, b.N)
	for i := range reqs {
		r, err := SignRequest(f.owner, fmt.Sprint("b", i), f.clock(), []byte(`<get-status/>`))
		if err != nil {
			b.Fatal(err)
		}
		reqs[i] = r
	}
	b.ResetTimer()
	for i := range reqs {
		if out := f.srv.Handle(reqs[i]); bytes.Contains(out, []byte("<error>")) {
			b.Fatalf("%s", out)
		}
	}
}

// TestReplayCacheSharedAcrossRestarts: a server built with the previous
// one's cache (a reload) refuses what that one accepted.
func TestReplayCacheSharedAcrossRestarts(t *testing.T) {
	cache := NewReplayCache(0)
	f := newFixture(t, func(o *Options) { o.Replay = cache })
	req := f.sign(t, "once", `<get-status/>`)
	if c := code(f.handle(t, req)); c != "" {
		t.Fatalf("first: %s", c)
	}
	opts := f.srv.opts
	second, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Shutdown(context.Background())
	if c := code(mustResponse(t, second.Handle(req))); c != CodeReplayed {
		t.Fatalf("after restart: %q, want %s", c, CodeReplayed)
	}
}
