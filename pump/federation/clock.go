package federation

import (
	"fmt"
	"time"
)

// clockWarn is how far the clocks of two linked organisms may differ
// before each warns of it as the link comes up. Envelopes are refused only
// further apart (futureSkew ahead, the stale age behind), but an envelope
// sent more than recentWindow before the receiver's now is checked for
// copies in the tables rather than in memory, so a minute already costs.
const clockWarn = time.Minute

// clockApart says how the peer's clock stands against this organism's (as
// its handshake told: p.ahead), for an operator: "2h0m0s behind", "5m3s
// ahead of". It is "" when the peer told no time or the clocks agree
// within clockWarn.
func clockApart(p peer) string {
	if !p.clockKnown {
		return ""
	}
	switch d := p.ahead.Round(time.Second); {
	case d > clockWarn:
		return fmt.Sprintf("%s ahead of", d)
	case -d > clockWarn:
		return fmt.Sprintf("%s behind", -d)
	}
	return ""
}

// warnClock warns, as the link with p comes up, when p's clock and this
// organism's differ by more than clockWarn: what is refused because of
// it, and that the clocks want synchronising.
func (g *gateway) warnClock(p peer) {
	apart := clockApart(p)
	if apart == "" {
		return
	}
	g.log.Warn(fmt.Sprintf("federation: the peer's clock is %s this organism's (as its handshake told): "+
		"envelopes sent more than %s ahead of the receiver's clock, or longer ago than %s, are refused; "+
		"synchronise the two clocks", apart, futureSkew, g.m.stale), "peer", p.organism)
}
