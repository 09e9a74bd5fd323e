package stage

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckRef(t *testing.T) {
	tests := []struct {
		ref string
		ok  bool
	}{
		{"", true},
		{"call_abc-123", true},
		{"toolu_01A09q90qw90lq917835lq9", true},
		{"émoji 🎉 <&>", true},
		{strings.Repeat("x", MaxRefBytes), true},
		{strings.Repeat("x", MaxRefBytes+1), false},
		{"a\nb", false},
		{"a\x00b", false},
		{"\xff", false},
		{"\uFFFE", false},
	}
	for _, tc := range tests {
		err := CheckRef(tc.ref)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrBadRef)) {
			t.Errorf("CheckRef(%q) = %v, want ok=%v", tc.ref, err, tc.ok)
		}
	}
}

// TestInReplyToIsRead: the ref an envelope carries in <meta> reaches the
// Envelope, escaped and whole; an envelope without one has none, and one in
// another namespace or under another name is not it.
func TestInReplyToIsRead(t *testing.T) {
	in, err := NewIngress(IngressConfig{})
	if err != nil {
		t.Fatal(err)
	}
	thread := NewThreadID()
	body := []byte(`<Echo xmlns=""><Text>hi</Text></Echo>`)
	tests := []struct {
		name string
		env  []byte
		want string
	}{
		{"ref", AppendEnvelopeInReplyTo(nil, "calc", "agent", thread, "call_<1>&", body), "call_<1>&"},
		{"none", AppendEnvelopeInReplyTo(nil, "calc", "agent", thread, "", body), ""},
		{"other namespace", []byte(`<message xmlns="` + EnvelopeNS + `"><meta><from>a</from><thread>` + thread +
			`</thread><in-reply-to xmlns="urn:other">x</in-reply-to></meta>` + string(body) + `</message>`), ""},
		{"other name", []byte(`<message xmlns="` + EnvelopeNS + `"><meta><from>a</from><thread>` + thread +
			`</thread><ref xmlns="https://xml-pipeline.org/ns/core/v1">x</ref></meta>` + string(body) + `</message>`), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := in.Read(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.InReplyTo != tc.want {
				t.Fatalf("InReplyTo %q, want %q", m.InReplyTo, tc.want)
			}
			if pb, _ := m.PayloadBytes(); !strings.Contains(string(pb), `<Text>hi</Text>`) {
				t.Fatalf("payload %q", pb)
			}
		})
	}
}
