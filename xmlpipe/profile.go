package xmlpipe

import (
	"context"
	"errors"
	"fmt"
)

// Profile is a security profile as a handler sees it (Metadata.Profile):
// seed 000 §8.4's dispatch table and network allow-list of the thread its
// messages travel on. The pump implements it; a nil Profile allows
// everything.
type Profile interface {
	// Name is the profile's name: one profile, or several joined by "&"
	// (their intersection).
	Name() string
	// Reaches reports whether a message sent under the profile can reach
	// the listener called name (false for a listener that does not exist).
	Reaches(name string) bool
	// MayDial reports whether a handler working under the profile may open
	// a connection to hostport ("host:port", as net.Dial takes it).
	MayDial(hostport string) bool
}

// ErrNetworkDenied is the error of a dial the thread's profile does not
// allow (see CheckDial).
var ErrNetworkDenied = errors.New("network address not allowed by the thread's profile")

// CheckDial returns nil when the profile in ctx (WithProfile) may dial
// hostport, else an error wrapping ErrNetworkDenied. A context without a
// profile may dial anything. Network tools call it in their dialers.
func CheckDial(ctx context.Context, hostport string) error {
	p, _ := ctx.Value(profileKey{}).(Profile)
	if p == nil || p.MayDial(hostport) {
		return nil
	}
	return fmt.Errorf("%w: %s (profile %s)", ErrNetworkDenied, hostport, p.Name())
}

// WithProfile returns ctx carrying p, for CheckDial to consult where a
// handler's connections are dialled. A nil p returns ctx.
func WithProfile(ctx context.Context, p Profile) context.Context {
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, profileKey{}, p)
}

// profileKey carries WithProfile's profile.
type profileKey struct{}
