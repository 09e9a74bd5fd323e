package fetch

import (
	"net"
	"net/netip"
)

// block is a range fetch never dials, with what it is.
type block struct {
	prefix netip.Prefix
	name   string
}

func blocks(spec ...string) []block {
	out := make([]block, 0, len(spec)/2)
	for i := 0; i+1 < len(spec); i += 2 {
		out = append(out, block{netip.MustParsePrefix(spec[i]), spec[i+1]})
	}
	return out
}

// special4 is the IANA IPv4 Special-Purpose Address Registry, every entry
// (also those marked globally reachable: anycast relays and AS112 servers
// are nobody's web pages), plus multicast.
var special4 = blocks(
	"0.0.0.0/8", "this network (RFC 791)",
	"10.0.0.0/8", "private (RFC 1918)",
	"100.64.0.0/10", "shared address space, carrier-grade NAT (RFC 6598)",
	"127.0.0.0/8", "loopback (RFC 1122)",
	"169.254.0.0/16", "link-local, cloud metadata (RFC 3927)",
	"172.16.0.0/12", "private (RFC 1918)",
	"192.0.0.0/24", "IETF protocol assignments (RFC 6890)",
	"192.0.2.0/24", "documentation, TEST-NET-1 (RFC 5737)",
	"192.31.196.0/24", "AS112-v4 (RFC 7535)",
	"192.52.193.0/24", "AMT (RFC 7450)",
	"192.88.99.0/24", "deprecated 6to4 relay anycast (RFC 7526)",
	"192.168.0.0/16", "private (RFC 1918)",
	"192.175.48.0/24", "direct delegation AS112 service (RFC 7534)",
	"198.18.0.0/15", "benchmarking (RFC 2544)",
	"198.51.100.0/24", "documentation, TEST-NET-2 (RFC 5737)",
	"203.0.113.0/24", "documentation, TEST-NET-3 (RFC 5737)",
	"224.0.0.0/4", "multicast (RFC 5771)",
	"240.0.0.0/4", "reserved, and the limited broadcast address (RFC 1112, RFC 919)",
)

// special6 is the IANA IPv6 Special-Purpose Address Registry, every entry,
// plus multicast and the deprecated site-local range; the IPv4-embedding
// ranges (IPv4-mapped, NAT64 64:ff9b::/96, 6to4) are judged by the IPv4
// address inside them (see Special) and are not listed.
var special6 = blocks(
	"::/128", "unspecified (RFC 4291)",
	"::1/128", "loopback (RFC 4291)",
	"::/96", "IPv4-compatible, deprecated (RFC 4291)",
	"::ffff:0:0:0/96", "IPv4-translated (RFC 2765)",
	"64:ff9b:1::/48", "local-use IPv4/IPv6 translation (RFC 8215)",
	"100::/64", "discard-only (RFC 6666)",
	"2001::/23", "IETF protocol assignments: Teredo, benchmarking, ORCHID, AMT, AS112, drone IDs (RFC 2928)",
	"2001:db8::/32", "documentation (RFC 3849)",
	"2620:4f:8000::/48", "direct delegation AS112 service (RFC 7534)",
	"3fff::/20", "documentation (RFC 9637)",
	"5f00::/16", "segment routing SIDs (RFC 9602)",
	"fc00::/7", "unique local (RFC 4193)",
	"fe80::/10", "link-local (RFC 4291)",
	"fec0::/10", "site-local, deprecated (RFC 3879)",
	"ff00::/8", "multicast (RFC 4291)",
)

var (
	// global6 is where IPv6 global unicast addresses are allocated; nothing
	// outside it is public (bar the IPv4 embeddings below).
	global6 = netip.MustParsePrefix("2000::/3")
	// nat64 is the well-known NAT64 prefix: the last 32 bits are the IPv4
	// address translated to (RFC 6052).
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// sixToFour carries an IPv4 address in bits 16–47 (RFC 3056).
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Special names the special-purpose range ip is in, or returns "" when ip
// is a public unicast address. An IPv4 address wrapped in IPv6 — IPv4-mapped,
// NAT64 (64:ff9b::/96) or 6to4 (2002::/16) — is judged by the IPv4
// address it reaches. A zoned address is never public.
func Special(ip netip.Addr) string {
	switch {
	case !ip.IsValid():
		return "not an address"
	case ip.Zone() != "":
		return "zoned (link-local scope)"
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return special(ip, special4)
	}
	a := ip.As16()
	switch {
	case nat64.Contains(ip):
		if s := special(netip.AddrFrom4([4]byte(a[12:16])), special4); s != "" {
			return "NAT64 of " + s
		}
		return ""
	case sixToFour.Contains(ip):
		if s := special(netip.AddrFrom4([4]byte(a[2:6])), special4); s != "" {
			return "6to4 of " + s
		}
		return ""
	}
	if s := special(ip, special6); s != "" {
		return s
	}
	if !global6.Contains(ip) {
		return "unallocated (outside 2000::/3)"
	}
	return ""
}

func special(ip netip.Addr, bs []block) string {
	for _, b := range bs {
		if b.prefix.Contains(ip) {
			return b.name
		}
	}
	return ""
}

// Public reports whether ip is a public unicast address: in no IANA
// special-purpose range (private, loopback, link-local and cloud metadata,
// carrier-grade NAT, documentation, benchmarking, reserved, multicast,
// broadcast, unique local, discard-only, Teredo, ORCHID…), IPv4 wrapped in
// IPv6 judged as IPv4 (see Special).
func Public(ip netip.Addr) bool { return Special(ip) == "" }

// isLocal reports whether ip is one of this host's own interface addresses
// (a public address of the host reaches its own services as loopback would).
func isLocal(ip netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // cannot tell: fail closed
	}
	ip = ip.Unmap()
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if own, ok := netip.AddrFromSlice(n.IP); ok && own.Unmap() == ip {
			return true
		}
	}
	return false
}
