package envsig

import (
	_ "embed"
	"sync"

	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

//go:embed profile.xsd
var profileXSD []byte

// profile is the compiled profile.xsd, compiled on first use and shared
// read-only afterwards.
var profile = sync.OnceValues(func() (*stage.Schema, error) {
	return stage.CompileSchema(profileXSD, "mem:/envsig/profile.xsd")
})
