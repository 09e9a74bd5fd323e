// Package schemas holds the fixed XML Schemas of xmlpipe, embedded in the
// binary: the message envelope, the core <huh> error, the SystemError
// payload, the structured <refusal>, the system messages, the privileged
// (OOB) protocol and the meta introspection vocabulary.
//
// The per-listener payload schemas that `go generate` writes into
// schemas/<listener>/ are not part of this set; they are derived from Go
// types by package gen.
//
// Every accessor returns a fresh copy, so callers may keep or modify the
// bytes freely.
package schemas

import _ "embed" // for the //go:embed directives below

// Target namespaces of the fixed schemas. SystemError has none.
const (
	// EnvelopeNS is the namespace of <message> and its <meta> block.
	EnvelopeNS = "https://xml-pipeline.org/ns/envelope/v1"
	// CoreNS is the namespace of the core <huh> error payload.
	CoreNS = "https://xml-pipeline.org/ns/core/v1"
	// MetaNS is the namespace of the meta introspection requests and responses.
	MetaNS = "https://xml-pipeline.org/ns/meta/v1"
	// SystemNS is the namespace of the messages only the pump emits.
	SystemNS = "https://xml-pipeline.org/system"
	// PrivilegedNS is the namespace of the out-of-band control protocol.
	PrivilegedNS = "https://xml-pipeline.org/privileged-msg"
)

var (
	//go:embed envelope.xsd
	envelopeXSD string
	//go:embed core.xsd
	coreXSD string
	//go:embed system-error.xsd
	systemErrorXSD string
	//go:embed refusal.xsd
	refusalXSD string
	//go:embed system-msg.xsd
	systemXSD string
	//go:embed privileged-msg.xsd
	privilegedXSD string
	//go:embed meta.xsd
	metaXSD string
)

// fixedSchema pairs a file name with its embedded text.
type fixedSchema struct {
	name string
	text string
}

// fixed lists the schemas in the order Names reports them: the envelope
// first, then the error payloads, then the vocabularies.
var fixed = []fixedSchema{
	{"envelope.xsd", envelopeXSD},
	{"core.xsd", coreXSD},
	{"system-error.xsd", systemErrorXSD},
	{"refusal.xsd", refusalXSD},
	{"system-msg.xsd", systemXSD},
	{"privileged-msg.xsd", privilegedXSD},
	{"meta.xsd", metaXSD},
}

// Fixed returns the bytes of one fixed schema by file name ("envelope.xsd",
// …); ok is false if the name is unknown. Names are matched exactly.
func Fixed(name string) (b []byte, ok bool) {
	for _, s := range fixed {
		if s.name == name {
			return []byte(s.text), true
		}
	}
	return nil, false
}

// Names lists the fixed schema file names in a stable order: envelope.xsd,
// core.xsd, system-error.xsd, refusal.xsd, system-msg.xsd, privileged-msg.xsd,
// meta.xsd.
func Names() []string {
	names := make([]string, len(fixed))
	for i, s := range fixed {
		names[i] = s.name
	}
	return names
}

// Envelope returns envelope.xsd, the schema of the <message> envelope
// (namespace EnvelopeNS).
func Envelope() []byte { return []byte(envelopeXSD) }

// Core returns core.xsd, the schema of the core <huh> error payload
// (namespace CoreNS).
func Core() []byte { return []byte(coreXSD) }

// SystemError returns system-error.xsd, the schema of the <SystemError>
// delivery-failure payload (no namespace).
func SystemError() []byte { return []byte(systemErrorXSD) }

// Refusal returns refusal.xsd, the schema of the structured <refusal> a
// constitution rule or a human's denial answers a message with (namespace
// CoreNS).
func Refusal() []byte { return []byte(refusalXSD) }

// System returns system-msg.xsd, the schema of the messages only the pump
// emits: boot, shutdown-signal, huh, heartbeat, listener-joined and
// listener-left (namespace SystemNS).
func System() []byte { return []byte(systemXSD) }

// Privileged returns privileged-msg.xsd, the schema of the out-of-band
// control protocol: signed requests, responses and pushes (namespace
// PrivilegedNS).
func Privileged() []byte { return []byte(privilegedXSD) }

// Meta returns meta.xsd, the schema of the meta introspection requests and
// responses (namespace MetaNS).
func Meta() []byte { return []byte(metaXSD) }
