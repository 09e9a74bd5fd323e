package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// runValidate is `xmlpipe validate [organism.yaml]`: load and assemble the
// organism without starting it; print its listeners count and routing
// table, or every configuration error with file:line. What will not act as
// its Python reading suggests (config.Organism.Warnings), a gateway export no
// listener takes, a WASM listener whose output is routed by its root tag
// rather than answered to its caller, and a profile's (or a callable's
// requires:) name that matches no listener are warnings on stderr (exit 0).
func runValidate(_ context.Context, args []string, std streams) int {
	fs := newFlags("validate", "[organism.yaml]", std.err)
	cfgFile := configFlag(fs, "organism.yaml to validate (or give it as the argument)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if pos, ok = configPos(fs, pos, *cfgFile); !ok {
		return exitUsage
	}
	if !wantArgs(fs, pos, 0, 1) {
		return exitUsage
	}
	src := resolveConfig(pos)
	o, err := src.build(organism.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(std.err, err)
		return exitFailure
	}
	var b strings.Builder
	fmt.Fprintf(&b, "organism %s: %d listeners\n", o.Config.Organism.Name, len(o.Config.Listeners))
	b.WriteString("routes:\n")
	for _, r := range o.Pump.Routes() {
		fmt.Fprintf(&b, "  %s → %s", r.Tag, strings.Join(r.Listeners, ", "))
		if r.Broadcast {
			b.WriteString(" (broadcast)")
		}
		b.WriteByte('\n')
	}
	writeProfiles(&b, o)
	fmt.Fprint(std.out, b.String())
	for _, w := range o.Config.Warnings() {
		fmt.Fprintln(std.err, "warning: "+w)
	}
	for _, w := range o.UnservedExports() {
		fmt.Fprintln(std.err, "warning: "+w)
	}
	for _, w := range outputRoutedByTag(o) {
		fmt.Fprintln(std.err, "warning: "+w)
	}
	for _, w := range o.UnmatchedProfileNames() {
		fmt.Fprintln(std.err, "warning: "+w)
	}
	return exitOK
}

// outputRoutedByTag warns of each WASM listener with no response contract
// (no response:, and no describe export declaring one): its guest's output
// is routed by its root tag instead of answered to its caller, which then
// gets no answer but a <huh> when no listener takes that tag. What tag the
// guest writes is known only when it runs, so this is a warning.
func outputRoutedByTag(o *organism.Organism) []string {
	var out []string
	for i, lc := range o.Config.Listeners {
		if lc.Type != config.WasmListener {
			continue
		}
		if l, ok := o.Pump.Lookup(lc.Name); !ok || l.Response != nil {
			continue
		}
		path := fmt.Sprintf("listeners[%d]", i)
		out = append(out, fmt.Sprintf("%s: %s: %s declares no response: its output goes to the listener of its "+
			"root tag, not back to its caller, who gets a <huh> when no listener takes it "+
			"(declare response: to answer the caller)", o.Config.Pos(path), path, lc.Name))
	}
	return out
}

// writeProfiles lists each profile's dispatch table (the organism's own
// listeners, in every profile, left out), network allow-list and journal
// retention.
func writeProfiles(b *strings.Builder, o *organism.Organism) {
	names := o.Config.ProfileNames()
	if len(names) == 0 {
		return
	}
	b.WriteString("profiles:\n")
	for _, name := range names {
		var reach []string
		for _, li := range o.Pump.Listeners() {
			if !strings.HasPrefix(li.Name, "system.") && !strings.HasPrefix(li.Name, "core.") && o.Pump.ProfileReaches(name, li.Name) {
				reach = append(reach, li.Name)
			}
		}
		slices.Sort(reach)
		p := o.Config.Profiles[name]
		net := "any address"
		if p.Network.Set {
			net = strings.Join(p.Network.Addrs, ", ")
			if net == "" {
				net = "none"
			}
		}
		keep := "journal's " + o.Config.Journal.Retention.String()
		if !p.Retention.IsZero() {
			keep = p.Retention.String()
		}
		// A profile that reaches nothing (a misspelt name, a listener not
		// registered yet) says so rather than leaving a blank.
		table := strings.Join(reach, ", ")
		if table == "" {
			table = "no listener"
		}
		fmt.Fprintf(b, "  %s → %s (network: %s; retention: %s)\n", name, table, net, keep)
	}
}
