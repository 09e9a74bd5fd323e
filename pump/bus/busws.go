package bus

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// Close reasons of the legacy <authenticate/> handshake (python-reference
// §7.3), sent with close code 1008.
const (
	ReasonNotAuthenticate = "First message must be <authenticate/>"
	ReasonMissingTOTP     = "Missing TOTP code"
	ReasonInvalidTOTP     = "Invalid TOTP"
	ReasonBadXML          = "Invalid/tampered XML"
	ReasonAuthTimeout     = "Authentication timeout"
	// ReasonForbidden closes a /bus client whose role may not inject.
	ReasonForbidden = "Forbidden"
	// ReasonLegacyDisabled closes a /bus client without a bearer token when
	// Options.LegacyTOTPLogin is off (the default).
	ReasonLegacyDisabled = "Legacy TOTP login disabled; use a bearer token"
)

// busSocket is one /bus client: raw envelopes in, the envelopes of its
// conversations out.
type busSocket struct {
	s    *Server
	c    *conn
	addr string
}

// handleBusWS is GET /bus. It authenticates itself: a bearer token
// (Authorization header or subprotocol) is checked before the upgrade;
// without one the first frame must be the legacy <authenticate totp="…"/>
// when Options.LegacyTOTPLogin allows it, and the socket is closed with
// ReasonLegacyDisabled otherwise.
func (s *Server) handleBusWS(w http.ResponseWriter, r *http.Request) {
	var sess auth.Session
	switch token := bearerToken(r); {
	case s.opts.Insecure:
		sess = insecureSession
	case token != "":
		var ok bool
		if sess, ok = s.tokenSession(w, r, token); !ok {
			return
		}
		if !sess.Role.Allows(auth.Operator) {
			writeError(w, http.StatusForbidden, "Forbidden")
			return
		}
	}
	sock := &busSocket{s: s, addr: clientAddr(r)}
	if sock.c = s.openConn(w, r, "bus", sess, sock.encode); sock.c == nil {
		return
	}
	defer sock.c.finish()
	defer s.router.forget(sock)
	if sess.Username == "" { // no token: the legacy first frame authenticates, when enabled
		if !s.opts.LegacyTOTPLogin {
			sock.legacyDisabled()
			return
		}
		var ok bool
		if sess, ok = sock.legacyAuth(); !ok {
			return
		}
		sock.c.authenticated(sess)
	}
	sock.c.serve(sock.frame)
}

// legacyDisabled refuses a client without a bearer token while the legacy
// login is off: it reads the first frame (within AuthTimeout, so the close
// frame is not lost to a reset on unread data) and closes with 1008 and
// ReasonLegacyDisabled.
func (b *busSocket) legacyDisabled() {
	_ = b.c.ws.SetReadDeadline(time.Now().Add(b.s.opts.AuthTimeout))
	_, _, err := b.c.ws.ReadMessage()
	if err != nil {
		if ne, ok := errors.AsType[net.Error](err); !ok || !ne.Timeout() {
			return // the client went away
		}
	}
	b.c.log.Warn("legacy authentication refused: disabled", "security", true,
		"hint", "send a bearer token, or set auth.legacy_totp_login: true in organism.yaml")
	b.c.close(websocket.ClosePolicyViolation, ReasonLegacyDisabled)
}

// legacyAuth reads the first frame, <authenticate totp="NNNNNN"/>, within
// AuthTimeout and checks the code against every user's TOTP secret. On
// failure it closes the socket with 1008 and the reference's reason.
func (b *busSocket) legacyAuth() (auth.Session, bool) {
	s := b.s
	_ = b.c.ws.SetReadDeadline(time.Now().Add(s.opts.AuthTimeout))
	_, data, err := b.c.readFrame()
	if err != nil {
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			b.c.log.Warn("legacy authentication timed out", "security", true)
			b.c.close(websocket.ClosePolicyViolation, ReasonAuthTimeout)
		}
		return auth.Session{}, false
	}
	var sess auth.Session
	code, reason := parseAuthenticate(data)
	if reason == "" {
		sess, err = s.opts.Auth.CheckCode(b.c.ctx, code, b.addr)
		switch {
		case err == nil:
		case errors.Is(err, auth.ErrInvalidCredentials), errors.Is(err, auth.ErrRateLimited), errors.Is(err, auth.ErrBusy):
			reason = ReasonInvalidTOTP
		default:
			b.c.log.Error("TOTP check failed", "error", err)
			reason = ReasonInvalidTOTP
		}
	}
	if reason == "" && !sess.Role.Allows(auth.Operator) {
		reason = ReasonForbidden
	}
	if reason != "" {
		b.c.log.Warn("legacy authentication refused", "reason", reason, "security", true)
		b.c.close(websocket.ClosePolicyViolation, reason)
		return auth.Session{}, false
	}
	b.c.log.Info("legacy authentication", "user", sess.Username)
	return sess, true
}

// parseAuthenticate reads the legacy first frame and returns its code, or
// the close reason. A frame that is not well-formed is repaired the way the
// pump repairs (lexical pre-fix, then a recovering parse that keeps what it
// can: here, the root element's start tag).
func parseAuthenticate(data []byte) (code, reason string) {
	root, err := rootElement(data, true)
	if err != nil {
		fixed, _ := stage.LexFix(data)
		if root, err = rootElement(fixed, false); err != nil {
			return "", ReasonBadXML
		}
	}
	if root.Name.Local != "authenticate" {
		return "", ReasonNotAuthenticate
	}
	for _, a := range root.Attr {
		if a.Name.Space == "" && a.Name.Local == "totp" {
			code = strings.TrimSpace(a.Value)
		}
	}
	if code == "" {
		return "", ReasonMissingTOTP
	}
	return code, ""
}

// rootElement returns a document's root start tag. Strictly, the whole
// document must be well-formed; otherwise the first start tag is enough
// (what follows it may be truncated or broken).
func rootElement(data []byte, strict bool) (xml.StartElement, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = strict
	var root *xml.StartElement
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if !strict && root != nil {
				break
			}
			return xml.StartElement{}, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root == nil {
				c := t.Copy()
				root = &c
			}
			if !strict {
				return *root, nil
			}
		case xml.Directive:
			return xml.StartElement{}, errors.New("directives are not allowed")
		}
	}
	if root == nil {
		return xml.StartElement{}, errors.New("no root element")
	}
	return *root, nil
}

// frame handles one envelope from the client: a privileged root is dropped
// (security event), anything else goes through Pump.Inject like every
// message; a refused frame gets a <huh> envelope back.
func (b *busSocket) frame(data []byte) {
	s := b.s
	// The early busy check needs only the frame's head: a frame refused
	// costs that much, not a scan of its payload. A privileged one is
	// dropped as ever (the security event), busy or not.
	head := scanHead(data)
	if !head.privileged() {
		if err := s.busRefusingEarly(b.principal(), head); err != nil {
			b.refused(head, "", data, err)
			return
		}
	}
	info := scanFrame(data)
	if s.opts.Insecure && info.ok && info.rootNS == "" && info.rootName == "authenticate" {
		return // dev mode needs no authentication: a legacy client's handshake is ignored
	}
	if info.privileged() {
		b.privileged(info)
		return
	}
	who := b.principal()
	if !head.ok { // its head read only once LexFix repaired it
		if err := s.busRefusingEarly(who, info); err != nil {
			b.refused(info, "", data, err)
			return
		}
	}
	var (
		thread string
		err    error
	)
	switch {
	case info.ok && stage.IsThreadID(info.thread) && !s.ownsLive(who, info.thread):
		// Another party's live conversation: its events are never routed
		// here; the pump refuses the frame (a security event) untouched.
		thread, err = s.pump.InjectAs(b.c.ctx, data, nil, who)
	case info.ok && stage.IsThreadID(info.thread):
		conv := s.conversationOf(info.thread)
		s.router.claim(conv, b)
		thread, err = s.pump.InjectAs(b.c.ctx, data, nil, who)
		s.router.settle(conv, err == nil)
	default:
		// The pump assigns a new thread (and conversation) id: routing
		// starts when InjectAs says which. A refused frame begins no
		// conversation: nothing is routed for the thread of its <huh>.
		s.router.lateBegin()
		thread, err = s.pump.InjectAs(b.c.ctx, data, nil, who)
		conv := ""
		if err == nil {
			conv = s.conversationOf(thread)
		}
		s.router.lateEnd(conv, b)
	}
	if err != nil {
		b.refused(info, thread, data, err)
	}
}

// busRefusingEarly is refusingEarly for a /bus frame: its <to>, else the
// listeners its payload's root tag reaches (any of them refusing refuses
// it, as admission does), on the thread it names. Nil for a frame the
// quick scan could not read: the pump reads it.
func (s *Server) busRefusingEarly(who pump.Principal, info frameInfo) error {
	if !info.ok || !info.envelope() {
		return nil
	}
	thread := ""
	if stage.IsThreadID(info.thread) {
		thread = info.thread
	}
	if info.to != "" {
		return s.refusingEarly(who, info.to, thread)
	}
	targets, err := s.pump.Resolve("", info.payloadNS, info.payloadName, true)
	if err != nil {
		return nil
	}
	for _, target := range targets {
		if err := s.refusingEarly(who, target, thread); err != nil {
			return err
		}
	}
	return nil
}

// principal is the identity the socket's session sends as: every envelope
// on /bus must carry <from>websocket:USER</from>, the identity a /ws target
// send builds.
func (b *busSocket) principal() pump.Principal {
	user := b.c.sess.Username
	return pump.Principal{From: sourceWebSocket + ":" + user, User: user, Profile: b.c.sess.Profile}
}

// ownsLive reports whether thread is not live, or is a thread of a live
// conversation who began (the pump's check, before routing its events).
func (s *Server) ownsLive(who pump.Principal, thread string) bool {
	origin, live := s.pump.Threads().Origin(thread)
	return !live || who.Owns(origin)
}

// conversationOf is the conversation a thread belongs to: its root thread,
// or the thread itself when the registry does not know it.
func (s *Server) conversationOf(thread string) string {
	if root := s.pump.Threads().Root(thread); root != "" {
		return root
	}
	return thread
}

// privileged drops a privileged message: logged as a security event, the
// client learns nothing but a generic <huh>.
func (b *busSocket) privileged(info frameInfo) {
	root := info.rootName
	if info.payloadName != "" {
		root = info.payloadName
	}
	b.s.log.Warn("security event: privileged message on the main bus dropped", "security", true,
		"user", b.c.sess.Username, "addr", b.addr, "root", root)
	b.c.send(b.s.huhEnvelope(info.from, info.thread, stage.NewHuh(failure.ErrPrivileged, nil)))
}

// refused answers a frame the pump did not take; thread is the one the pump
// journaled its refusal on ("" for none), the <huh>'s when the frame named
// none.
func (b *busSocket) refused(info frameInfo, thread string, data []byte, err error) {
	switch {
	case errors.Is(err, failure.ErrPrivileged):
		b.privileged(info)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// the socket is closing
	case errors.Is(err, pump.ErrClosed), errors.Is(err, pump.ErrNotStarted):
		b.c.close(websocket.CloseTryAgainLater, "Organism not running")
	case errors.Is(err, pump.ErrCannotJournal):
		// Not taken, nothing kept, while the storage cannot commit: the
		// client may send the frame again once it recovers.
		text, _, _ := storageRefusalOf(err)
		b.c.send(b.s.huhEnvelope(b.principal().From, "", &xmlpipe.Huh{Error: text, OriginalAttempt: data}))
	case errors.Is(err, pump.ErrBusy):
		// Not taken, nothing kept: the client may send the frame again. The
		// text names neither the reason (which could tell a busy listener
		// from a missing one) nor a conversation (a fresh thread id).
		_, retry, _ := busyOf(err)
		b.c.send(b.s.huhEnvelope(b.principal().From, "", &xmlpipe.Huh{
			Error: busyText + "; retry in " + strconv.Itoa(retry) + " s", OriginalAttempt: data}))
	default:
		var cause error = err
		if f, ok := errors.AsType[*failure.Failure](err); ok {
			cause = f.Err
		}
		if !stage.IsThreadID(thread) {
			thread = info.thread
		}
		if errors.Is(err, pump.ErrForgedSender) || errors.Is(err, pump.ErrForeignThread) {
			thread = "" // a fresh id: an impostor's <huh> names no conversation
		}
		b.c.send(b.s.huhEnvelope(b.principal().From, thread, stage.NewHuh(cause, data)))
	}
}

// conversationEvent implements sink: the conversation's envelopes go back
// to the client — every message a listener emitted, replies addressed to
// the outside, and the <huh>/SystemError messages sent to its listeners.
// The client's own message (from outside the organism) is not echoed.
func (b *busSocket) conversationEvent(e pump.Event) {
	switch e.Kind {
	case pump.EventMessage:
		if _, fromListener := b.s.pump.Lookup(e.From); fromListener && len(e.Envelope) > 0 {
			b.c.send(e.Envelope)
		}
	case pump.EventReply:
		if len(e.Envelope) > 0 {
			b.c.send(e.Envelope)
		}
	case pump.EventHuh, pump.EventSystemError:
		b.c.send(e)
	}
}

// output implements sink: printed lines and streamed text are not
// envelopes; /bus clients see the messages that carried them (an agent's
// answer arrives whole, as its envelope).
func (b *busSocket) output(organism.Output) {}

// encode turns a queued item into a text frame (in the writer goroutine).
func (b *busSocket) encode(item any) (int, []byte, error) {
	switch it := item.(type) {
	case []byte:
		return websocket.TextMessage, it, nil
	case pump.Event:
		return websocket.TextMessage, b.s.errorEnvelope(it), nil
	}
	return 0, nil, nil
}

// errorEnvelope rebuilds the envelope of a <huh> or SystemError the pump
// sent to a listener (the event carries the payload value).
func (s *Server) errorEnvelope(e pump.Event) []byte {
	var body []byte
	var err error
	switch p := e.Payload.(type) {
	case *xmlpipe.Huh:
		body, err = s.core.Huh.AppendPayload(nil, p)
	case *xmlpipe.SystemError:
		body, err = s.core.SystemError.AppendPayload(nil, p)
	default:
		return nil
	}
	if err != nil || !stage.IsThreadID(e.Thread) || e.From == "" {
		return nil
	}
	return stage.AppendEnvelope(nil, e.From, e.To, e.Thread, body)
}
