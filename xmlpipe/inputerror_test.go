package xmlpipe_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/xml-pipeline/xmlpipe/xmlpipe"
)

// TestInputError: wrapped by the pump's own context, an InputError is
// still found by errors.As, says exactly its Err's text (what its caller
// is told, none of the wrapping) and lets errors.Is see that Err.
func TestInputError(t *testing.T) {
	errEmpty := errors.New("Name is empty")
	err := fmt.Errorf("handler failed: greeter: %w", &xmlpipe.InputError{Err: errEmpty})
	ie, ok := errors.AsType[*xmlpipe.InputError](err)
	if !ok {
		t.Fatalf("errors.As found no *InputError in %v", err)
	}
	if got := ie.Error(); got != "Name is empty" {
		t.Errorf("Error() = %q, want %q", got, "Name is empty")
	}
	if !errors.Is(err, errEmpty) {
		t.Errorf("errors.Is(%v, errEmpty) = false", err)
	}
}
