package organism

import (
	"errors"
	"strings"
	"testing"

	"github.com/xml-pipeline/xmlpipe/listeners/catalog"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// An unknown payload_class or handler that is a typo of an accepted name —
// a Python reference name included — is told with the name it meant;
// another is told with the catalog's names. Each is told at its key's
// line (payload_class: 4, handler: 5), not the entry's.
func TestUnknownCatalogNameNearest(t *testing.T) {
	tests := []struct {
		name, payload, handler string
		is                     error
		want                   string
	}{
		{"python handler typo", "handlers.hello.GreetingResponse", "handlers.hello.handle_shoutt", catalog.ErrUnknownHandler,
			`organism.yaml:5: listener shouter: handler: unknown handler "handlers.hello.handle_shoutt" (did you mean "handlers.hello.handle_shout"?)`},
		{"python payload typo", "handlers.hello.GreetingRespons", "handlers.hello.handle_shout", catalog.ErrUnknownPayload,
			`organism.yaml:4: listener shouter: payload_class: unknown payload_class "handlers.hello.GreetingRespons" (did you mean "handlers.hello.GreetingResponse"?)`},
		{"go name typo", "hello.GreetngResponse", "hello.Shout", catalog.ErrUnknownPayload,
			`organism.yaml:4: listener shouter: payload_class: unknown payload_class "hello.GreetngResponse" (did you mean "hello.GreetingResponse"?)`},
		{"nothing close", "handlers.hello.GreetingResponse", "mine.Frobnicate", catalog.ErrUnknownHandler,
			`organism.yaml:5: listener shouter: handler: unknown handler "mine.Frobnicate" (known: hello.Greeter, `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("organism.yaml", []byte(`organism: {name: names}
listeners:
  - name: shouter
    payload_class: `+tt.payload+`
    handler: `+tt.handler+`
    description: Shouts
`))
			if err != nil {
				t.Fatal(err)
			}
			_, err = New(cfg, Options{})
			if !errors.Is(err, tt.is) {
				t.Fatalf("error = %v, want one wrapping %v", err, tt.is)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant it to begin %s", err, tt.want)
			}
		})
	}
}
