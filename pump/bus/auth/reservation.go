package auth

import (
	"net/netip"
)

// reservation is one login's hold on the rate limits: a slot reserved in the
// budget of its user name and address pair and in that of its address,
// taken before anything is verified and settled exactly once afterwards.
type reservation struct {
	s *Service
	c Credentials
	// pair and addr are the limiter keys ("" when not limited).
	pair, addr string
	settled    bool
}

// begin reserves c's slots. It fails with a *LimitError wrapping
// ErrRateLimited while the pair or the address is locked out or its budget
// is taken by recent failures and attempts in flight. The caller must
// settle the attempt (fail or succeed) or release it.
func (s *Service) begin(c Credentials) (*reservation, error) {
	now := s.clock()
	a := &reservation{s: s, c: c, addr: addrKey(c.Addr)}
	// Names that cannot exist are not tracked per pair (the address still
	// counts), so junk names cannot grow the limiter.
	if ValidName(c.Username) == nil {
		a.pair = pairKey(c.Username, a.addr)
	}
	ok, wait := s.pairs.reserve(a.pair, now)
	if ok {
		if ok, wait = s.addrs.reserve(a.addr, now); !ok {
			s.pairs.release(a.pair, now)
		}
	}
	if !ok {
		s.log.Warn("auth: login refused: rate limited", "user", c.Username, "addr", c.Addr, "retry_after", wait)
		return nil, &LimitError{Err: ErrRateLimited, Wait: wait}
	}
	return a, nil
}

// fail settles a as a failure (logged with reason) against its pair and
// its address, and returns ErrInvalidCredentials.
func (a *reservation) fail(reason string) error {
	s := a.s
	a.settled = true
	now := s.clock()
	s.log.Warn("auth: login failed", "user", a.c.Username, "addr", a.c.Addr, "reason", reason)
	if d := s.pairs.fail(a.pair, now); d > 0 {
		s.log.Warn("auth: user locked out from address", "user", a.c.Username, "addr", a.c.Addr, "for", d)
	}
	if d := s.addrs.fail(a.addr, now); d > 0 {
		s.log.Warn("auth: address locked out", "addr", a.c.Addr, "for", d)
	}
	return ErrInvalidCredentials
}

// succeed settles a as a success: the pair's failures and lockout streak
// are forgiven; the address's failures stand.
func (a *reservation) succeed() {
	a.settled = true
	a.s.pairs.forgive(a.pair)
	a.s.addrs.release(a.addr, a.s.clock())
}

// release gives the slots back uncounted unless a was settled (a login
// that never got verified: no hash slot, a cancelled wait, a store error).
func (a *reservation) release() {
	if a.settled {
		return
	}
	a.settled = true
	now := a.s.clock()
	a.s.pairs.release(a.pair, now)
	a.s.addrs.release(a.addr, now)
}

// pairKey is the limiter key of a user name from an address key.
func pairKey(user, addr string) string { return user + "\x00" + addr }

// addrKey is the limiter key of a client address: IPv6 addresses count per
// /64 (one host usually holds a whole /64), IPv4-mapped ones as IPv4, and
// anything else (no address, not an IP) as written.
func addrKey(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	p, err := ip.WithZone("").Prefix(64)
	if err != nil {
		return addr
	}
	return p.String()
}
