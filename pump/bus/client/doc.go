// Package client is the client side of the main bus's protocol (package bus
// documents it): a user's login over HTTPS (POST /auth/login, /auth/logout)
// and its REST requests (Client), the /ws socket — its "connected"
// greeting, subscribe, JSON frames and pipelined raw sends (Conn) — and
// request/reply matching over one socket, with the event frames handed to
// the caller (Session).
//
// The remote console (pump/console's Remote) and the load generator
// (pump/bench/busload) speak the bus through it. Like pump/bus/wire, auth
// and certs it is a library of the protocol: it imports no transport.
package client
