// Package meta answers the meta introspection questions of meta.xsd
// (namespace schemas.MetaNS): request-schema, request-example,
// request-prompt and list-capabilities. The answers come from "core" — the
// organism registers the four listeners of Listeners as system listeners
// (core.request-schema, …) — and every question is allowed or refused by the
// organism's meta: flags (Flags).
//
// A refused question and a question about a capability the caller may not
// see (unknown, hidden, or outside a federation peer's export filter) fail
// with the same ErrRefused, which the pump turns into the same canned <huh>
// a message to a listener that does not exist gets: no answer reveals
// topology the caller may not see.
//
// The package does not import the pump: the organism supplies the
// capabilities (Catalog) and who a sender is (Callers).
package meta
