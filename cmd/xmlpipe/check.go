package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/failure"
	"github.com/xml-pipeline/xmlpipe/xmlpipe/stage"
)

// runCheck is `xmlpipe check [--config organism.yaml] FILE|-`: one message
// through every ingress stage and, with a configuration, routing and the
// target listeners' payload validation and decode. It prints the canonical
// envelope (exit 0), or the <huh> the sender would get on stdout and the
// full diagnostics on stderr (exit 1).
func runCheck(_ context.Context, args []string, std streams) int {
	fs := newFlags("check", "[--config organism.yaml] FILE|-", std.err)
	cfgPath := configFlag(fs, "organism.yaml: also route, validate and decode the payload")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, pos, 1, 1) {
		return exitUsage
	}
	var p *pump.Pump
	maxBytes := 0
	if *cfgPath != "" {
		o, err := organism.Load(*cfgPath, organism.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			fmt.Fprintln(std.err, err)
			return exitFailure
		}
		p, maxBytes = o.Pump, o.Config.Organism.MaxMessageBytes
	}
	raw, err := readInput(pos[0], std.in)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe check: %v\n", err)
		return exitFailure
	}
	in, err := stage.NewIngress(stage.IngressConfig{MaxBytes: maxBytes})
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe check: %v\n", err)
		return exitFailure
	}
	m, err := in.Read(raw)
	if err != nil {
		return refuse(std, raw, err, nil)
	}
	defer m.Close()
	var routed []string
	if p != nil {
		targets, err := resolve(p, m)
		if err != nil {
			return refuse(std, raw, err, m.Diagnostics)
		}
		for _, l := range targets {
			if _, _, err := m.Decode(l.Payload); err != nil {
				return refuse(std, raw, err, m.Diagnostics)
			}
			routed = append(routed, l.Name)
		}
	}
	fmt.Fprintf(std.out, "%s\n", m.Canonical)
	var notes strings.Builder
	for _, d := range m.Diagnostics {
		fmt.Fprintf(&notes, "note: %s\n", d)
	}
	if p != nil {
		fmt.Fprintf(&notes, "route: <%s> → %s (payload valid and decoded)\n", m.PayloadName, strings.Join(routed, ", "))
	}
	fmt.Fprint(std.err, notes.String())
	return exitOK
}

// refuse prints the <huh> the sender would get and the diagnostics (the
// failure's, then the notes of the stages that passed), and returns exit 1.
// A privileged message is dropped by the pump without a <huh>; so it is here.
func refuse(std streams, raw []byte, err error, notes []failure.Diagnostic) int {
	if errors.Is(err, failure.ErrPrivileged) {
		fmt.Fprintf(std.err, "dropped (security event, the sender gets no <huh>): %s\n", failureText(err))
		return exitFailure
	}
	core, cerr := stage.Core()
	if cerr != nil {
		fmt.Fprintf(std.err, "xmlpipe check: %v\n", cerr)
		return exitFailure
	}
	huh, herr := core.Huh.AppendPayload(nil, stage.NewHuh(err, raw))
	if herr != nil {
		fmt.Fprintf(std.err, "xmlpipe check: %v\n", herr)
		return exitFailure
	}
	fmt.Fprintf(std.out, "%s\n", huh)
	var b strings.Builder
	b.WriteString("error: " + failureText(err) + "\n")
	for _, d := range notes {
		fmt.Fprintf(&b, "note: %s\n", d)
	}
	fmt.Fprint(std.err, b.String())
	return exitFailure
}

// resolve finds the listeners a message goes to, as the pump routes: with
// <to>, the listener of that name (case-insensitive) whose payload root
// matches; without, every listener of the payload root.
func resolve(p *pump.Pump, m *stage.Inbound) ([]pump.Listener, error) {
	noRoute := func(format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		return &failure.Failure{Stage: failure.StageRoute, Err: failure.ErrNoRoute,
			Diagnostics: []failure.Diagnostic{{Stage: failure.StageRoute, Msg: msg}}}
	}
	tag := m.PayloadName
	if m.PayloadNS != "" {
		tag = "{" + m.PayloadNS + "}" + tag
	}
	if m.To != "" {
		l, ok := p.Lookup(m.To)
		switch {
		case !ok:
			return nil, noRoute("no listener named %q", m.To)
		case !l.Payload.Matches(m.PayloadName, m.PayloadNS):
			return nil, noRoute("%s takes <%s>, not <%s>", l.Name, l.Payload.Name(), tag)
		}
		return []pump.Listener{l}, nil
	}
	var out []pump.Listener
	for _, info := range p.Listeners() {
		if l, ok := p.Lookup(info.Name); ok && l.Payload.Matches(m.PayloadName, m.PayloadNS) {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, noRoute("no listener for <%s>", tag)
	}
	return out, nil
}
