package oob

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"sync"

	"github.com/xml-pipeline/xmlpipe/schemas"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// reply is one response and what to do once it was written (a shutdown
// acts after its ack reached the client).
type reply struct {
	resp  *Response
	after func()
}

var (
	schemaOnce sync.Once
	schema     *stage.Schema
	schemaErr  error
)

// Schema returns the compiled privileged-msg.xsd.
func Schema() (*stage.Schema, error) {
	schemaOnce.Do(func() {
		schema, schemaErr = stage.CompileSchema(schemas.Privileged(), "mem:/schemas/privileged-msg.xsd")
	})
	return schema, schemaErr
}

// Handle verifies one request and runs its operation, without a
// connection (so without subscriptions); the returned document is a
// <privileged-response>. Actions that follow the answer (shutdown) run
// before it returns.
func (s *Server) Handle(raw []byte) []byte {
	r := s.handle(raw, nil)
	if r.after != nil {
		r.after()
	}
	b, err := marshal(r.resp)
	if err != nil {
		s.log.Error("oob: marshal", "error", err)
	}
	return b
}

// handle verifies raw — size, well-formed, signed, valid against the XSD,
// signature, freshness, first use — and runs its operation. Every refusal
// is an <error> and a security event.
func (s *Server) handle(raw []byte, c *conn) reply {
	now := s.opts.Clock()
	if len(raw) > s.opts.MaxBytes {
		s.security("oversized OOB request", "bytes", len(raw))
		return s.fail("", CodeMalformed, "request too large", "")
	}
	var req Request
	if err := xml.Unmarshal(raw, &req); err != nil || req.XMLName.Space != NS {
		if err != nil && req.XMLName.Space == NS {
			// A privileged-msg whose values do not decode (detailed=maybe):
			// the XSD names the element and what it wants.
			if sch, serr := Schema(); serr == nil {
				if verr := sch.Validate(raw); verr != nil {
					s.security("invalid OOB request", "request", req.Payload.ID, "error", failureText(verr))
					return s.fail(req.Payload.ID, CodeMalformed, "the request does not match privileged-msg.xsd", failureText(verr))
				}
			}
		}
		s.security("malformed OOB request", "error", errText(err, "root is not "+NS+" privileged-msg"))
		return s.fail("", CodeMalformed, "not a privileged-msg document", errText(err, ""))
	}
	id := req.Payload.ID
	if req.Signature == nil || len(bytes.TrimSpace([]byte(req.Signature.Value))) == 0 {
		s.security("unsigned OOB request", "request", id)
		return s.fail(id, CodeUnsigned, "the request is not signed", "")
	}
	sch, err := Schema()
	if err != nil {
		return s.fail(id, CodeInternal, "the protocol schema does not compile", err.Error())
	}
	if err := sch.Validate(raw); err != nil {
		s.security("invalid OOB request", "request", id, "error", failureText(err))
		return s.fail(id, CodeMalformed, "the request does not match privileged-msg.xsd", failureText(err))
	}
	sig, err := verifySignature(s.opts.Owner, raw, req.Signature)
	if err != nil {
		s.security("wrongly signed OOB request", "request", id, "error", err)
		return s.fail(id, CodeInvalidSignature, "the signature does not verify", err.Error())
	}
	ts := req.Payload.Timestamp
	if d := now.Sub(ts); d > s.opts.Window || d < -s.opts.Window {
		s.security("stale OOB request", "request", id, "timestamp", ts, "skew", d)
		return s.fail(id, CodeStale, fmt.Sprintf("timestamp is outside ±%s of the organism's clock", s.opts.Window), "")
	}
	if err := s.replay.add(string(sig), ts.Add(s.opts.Window), now); err != nil {
		if errors.Is(err, errReplayed) {
			s.security("replayed OOB request", "request", id)
			return s.fail(id, CodeReplayed, "this signature was already used", "")
		}
		if errors.Is(err, errNotRecorded) {
			s.log.Error("OOB request refused: its signature could not be recorded", "request", id, "error", err)
			return s.fail(id, CodeInternal, "the request could not be recorded; sign it again and retry", "")
		}
		s.security("OOB replay cache full", "request", id, "entries", s.replay.len())
		return s.fail(id, CodeBusy, "too many requests in the freshness window", "")
	}
	if c != nil && !c.verified {
		c.verified = true // a fresh request the owner's key signed
		s.verifiedConn(c)
	}
	out := s.ops.run(&req.Payload, c)
	out.resp.RequestID = id
	return out
}

// fail is an <error> response.
func (s *Server) fail(id, code, msg, details string) reply {
	return reply{resp: s.response(id, ResponsePayload{Error: &ErrorResponse{Code: code, Message: msg, Details: details}})}
}

// response wraps a result.
func (s *Server) response(id string, p ResponsePayload) *Response {
	return &Response{Version: Version, RequestID: id, Timestamp: s.opts.Clock().UTC(), Payload: p}
}

func errText(err error, fallback string) string {
	if err != nil {
		return err.Error()
	}
	return fallback
}

// failureText is an error with its diagnostics.
func failureText(err error) string {
	var f *failure.Failure
	if errors.As(err, &f) && len(f.Diagnostics) > 0 {
		var b bytes.Buffer
		for i, d := range f.Diagnostics {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(d.Msg)
		}
		return b.String()
	}
	return err.Error()
}
