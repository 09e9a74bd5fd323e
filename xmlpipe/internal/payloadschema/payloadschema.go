// Package payloadschema hands the stage engine (package xmlpipe/stage) the
// compiled schema an xmlpipe.PayloadType keeps unexported: the stages
// validate a payload inside the envelope's parsed document, and the schema's
// libxml2 handle is no part of the handler API.
package payloadschema

import "github.com/xml-pipeline/xmlpipe/xmlpipe/internal/lx"

// Of returns the compiled schema of pt, a *xmlpipe.PayloadType. Package
// xmlpipe sets it in its init, which runs before that of any package
// importing it.
var Of func(pt any) *lx.Schema
