package meta

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// reachOnly is a profile reaching the listeners named.
type reachOnly map[string]bool

func (r reachOnly) Name() string             { return "only" }
func (r reachOnly) Reaches(name string) bool { return r[name] }
func (r reachOnly) MayDial(string) bool      { return true }

// TestListenersWithinProfile: a question travelling under a profile sees
// only the capabilities the profile reaches: the list leaves the others
// out, and a question about one is refused exactly as a question about a
// capability that does not exist.
func TestListenersWithinProfile(t *testing.T) {
	ls, err := Listeners(NewService(allOpen(), testCatalog(t)), CallersFunc(func(string) Caller { return user }))
	if err != nil {
		t.Fatal(err)
	}
	md := xmlpipe.Metadata{From: "api:alice", ThreadID: "t", Profile: reachOnly{"adder": true}}
	resp, err := ls[3].Handler.Handle(context.Background(), &ListCapabilities{}, md)
	if err != nil {
		t.Fatal(err)
	}
	caps := resp.(*xmlpipe.RespondResponse).Payload.(*Capabilities)
	if len(caps.Capability) != 1 || caps.Capability[0].Name != "adder" {
		t.Errorf("capabilities under the profile: %+v, want adder alone", caps.Capability)
	}
	_, errMasked := ls[0].Handler.Handle(context.Background(), &RequestSchema{Capability: "calc.sub"}, md)
	_, errNone := ls[0].Handler.Handle(context.Background(), &RequestSchema{Capability: "no.such"}, md)
	if !errors.Is(errMasked, ErrRefused) || strings.Replace(errMasked.Error(), "calc.sub", "no.such", 1) != errNone.Error() {
		t.Errorf("schema of a masked capability: %v; of one that does not exist: %v", errMasked, errNone)
	}
	md.Profile = nil
	resp, err = ls[3].Handler.Handle(context.Background(), &ListCapabilities{}, md)
	if err != nil || len(resp.(*xmlpipe.RespondResponse).Payload.(*Capabilities).Capability) < 2 {
		t.Errorf("capabilities without a profile: %+v, %v", resp, err)
	}
}
