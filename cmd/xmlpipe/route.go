package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/xml-pipeline/xmlpipe/listeners/route"
	"github.com/xml-pipeline/xmlpipe/pump"
	"github.com/xml-pipeline/xmlpipe/pump/config"
	"github.com/xml-pipeline/xmlpipe/pump/console"
	"github.com/xml-pipeline/xmlpipe/pump/organism"
)

// routeTimeout bounds one route command: embedding requests and fill
// models included.
const routeTimeout = 2 * time.Minute

// runRoute is `xmlpipe route [--profile P] [--agent A] [--limit N] [--fill]
// [--config organism.yaml] "need" [organism.yaml]`: assemble the organism (not started) and print
// the capabilities that match the need, ranked and masked, with their
// scores; with --fill also the payload it would send to the first one.
// Nothing is sent.
func runRoute(ctx context.Context, args []string, std streams) int {
	fs := newFlags("route", `[--profile P] [--agent A] [--limit N] [--fill] [--config organism.yaml] "need" [organism.yaml]`, std.err)
	profile := fs.String("profile", "", "rank only what profile P may use (needs a profiles: section)")
	agent := fs.String("agent", "", "rank only what listener A may use (an agent's peers and tools, within A's own profile)")
	limit := fs.Int("limit", route.DefaultLimit, "list at most N candidates")
	fill := fs.Bool("fill", false, "also build the payload the first candidate would get")
	cfgFile := configFlag(fs, "organism.yaml to rank the listeners of (or give it after the need)")
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	if !wantArgs(fs, pos, 1, 2) {
		return exitUsage
	}
	cfgPos, ok := configPos(fs, pos[1:], *cfgFile)
	if !ok {
		return exitUsage
	}
	if *limit <= 0 {
		fmt.Fprintf(std.err, "xmlpipe route: --limit must be positive, got %d\n", *limit)
		return exitUsage
	}
	need := pos[0]
	if strings.TrimSpace(need) == "" {
		fmt.Fprintf(std.err, "xmlpipe route: %v (the need is the first argument)\n", route.ErrEmptyNeed)
		return exitUsage
	}
	o, err := resolveConfig(cfgPos).build(organism.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(std.err, err)
		return exitFailure
	}
	var mask route.Mask
	if *profile != "" {
		m, err := o.ProfileMask(*profile)
		if err != nil {
			fmt.Fprintf(std.err, "xmlpipe route: %v\n", err)
			return exitFailure
		}
		mask = m
	}
	if *agent != "" {
		m, err := o.PeersMask(*agent)
		if err != nil {
			hint := ""
			if errors.Is(err, pump.ErrUnknownListener) {
				var names []string
				for _, l := range o.Pump.Listeners() {
					names = append(names, l.Name)
				}
				hint = config.Suggest(*agent, names)
			}
			fmt.Fprintf(std.err, "xmlpipe route: --agent: %v%s\n", err, hint)
			return exitFailure
		}
		mask = route.Both(mask, m)
	}
	r, err := o.Router()
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe route: %v\n", err)
		return exitFailure
	}
	ctx, cancel := context.WithTimeout(ctx, routeTimeout)
	defer cancel()
	cands, err := r.Rank(ctx, need, mask, *limit)
	if err != nil {
		fmt.Fprintf(std.err, "xmlpipe route: %s\n", routeReason(err))
		return exitFailure
	}
	if len(cands) == 0 {
		fmt.Fprintf(std.err, "xmlpipe route: %v\n", &route.RefusalError{Need: need})
		return exitFailure
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RANK\tSCORE\tLISTENER\tDESCRIPTION")
	for i, c := range cands {
		fmt.Fprintf(tw, "%d\t%.3f\t%s\t%s\n", i+1, c.Score, console.Cell(c.Name), console.Cell(c.Description))
	}
	_ = tw.Flush()
	fmt.Fprint(std.out, b.String())
	if !*fill {
		return exitOK
	}
	p, err := r.Plan(ctx, need, mask)
	if err != nil {
		var fe *route.FillError
		if errors.As(err, &fe) {
			fmt.Fprintf(std.err, "xmlpipe route: --fill: %v\n", fe)
		} else {
			fmt.Fprintf(std.err, "xmlpipe route: --fill: %s\n", routeReason(err))
		}
		return exitFailure
	}
	fmt.Fprintf(std.out, "\npayload for %s (filled by %s):\n%s\n", p.Selected.Name, p.Fill.By, p.Fill.Payload)
	return exitOK
}

// routeReason is the text of an error of package route without the
// package's own "route: " prefix, which the command's "xmlpipe route: "
// already says.
func routeReason(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "route: "); ok {
		return rest
	}
	return msg
}
