package hello

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestShout: the shouted greeting goes where OriginalSender says; an empty
// (or blank) OriginalSender — a client writing to shouter directly — is an
// error saying so, not a send to no one — an *xmlpipe.InputError, whose
// text its sender's client is told.
func TestShout(t *testing.T) {
	resp, err := Shout(context.Background(), &GreetingResponse{Message: "Hi", OriginalSender: "response-handler"}, xmlpipe.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	want := xmlpipe.Send("response-handler", &ShoutedResponse{Message: "HI"})
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	for _, sender := range []string{"", "  "} {
		resp, err := Shout(context.Background(), &GreetingResponse{Message: "hi", OriginalSender: sender}, xmlpipe.Metadata{})
		if !errors.Is(err, ErrNoOriginalSender) || resp != nil {
			t.Errorf("OriginalSender %q: %v, %v; want ErrNoOriginalSender", sender, resp, err)
		}
		if _, ok := errors.AsType[*xmlpipe.InputError](err); !ok {
			t.Errorf("OriginalSender %q: %v is no *xmlpipe.InputError: its sender would not be told why", sender, err)
		}
	}
}
