package config

import (
	"os"
	"strings"
	"time"
)

// LoopControl is how an agent's loop decides to go on: "" (its model's
// answer ends the turn) or aeiou (AEIOU v3 signed control tokens).
type LoopControl string

// LoopAEIOU is AEIOU v3 loop control: the agent is offered the aeiou_magic
// tool and decides continue, done or abort with a host-signed token it
// writes as the last line of its answer.
const LoopAEIOU LoopControl = "aeiou"

// AEIOU is the aeiou: section: how AEIOU v3 loop control (agents with
// loop_control: aeiou) mints and verifies its tokens. The keys are made
// fresh at every start (two Ed25519 keys: the primary and the abort-only
// fallback) unless hmac_secret_env names a shared secret for HS256. It
// applies at the next start.
type AEIOU struct {
	// TTL is a token's lifetime (default 120s; whole seconds, at most
	// 5m).
	TTL Duration `yaml:"ttl"`
	// ReplayTTL and ReplayCapacity bound each session's replay cache
	// (defaults 5m and 4096).
	ReplayTTL      Duration `yaml:"replay_ttl"`
	ReplayCapacity int      `yaml:"replay_capacity"`
	// RepeatLimit is the progress guard's N: the same output this many
	// turns in a row halts the loop with ERR_NO_PROGRESS (default 3).
	RepeatLimit int `yaml:"repeat_limit"`
	// HMACSecretEnv names the environment variable holding an HS256 secret
	// (at least 32 bytes) to tag tokens with instead of a fresh Ed25519
	// key.
	HMACSecretEnv string `yaml:"hmac_secret_env"`
}

// HMACSecret returns the HS256 secret hmac_secret_env names ("" when it
// names none).
func (a AEIOU) HMACSecret() string {
	if a.HMACSecretEnv == "" {
		return ""
	}
	return os.Getenv(a.HMACSecretEnv)
}

// maxAEIOUTTL is the longest token TTL (the verifier's max_ttl).
const maxAEIOUTTL = 5 * time.Minute

// checkAEIOU reports a bad aeiou: section.
func (o *Organism) checkAEIOU(r *reporter) {
	a := o.AEIOU
	if d := a.TTL.D(); d != 0 && (d < time.Second || d > maxAEIOUTTL || d%time.Second != 0) {
		r.add("aeiou.ttl", "want whole seconds from 1s to %s, got %s", Duration(maxAEIOUTTL), a.TTL)
	}
	if d := a.ReplayTTL.D(); d != 0 && d < maxAEIOUTTL {
		r.add("aeiou.replay_ttl", "want at least %s (the longest a token lives), got %s", Duration(maxAEIOUTTL), a.ReplayTTL)
	}
	r.nonNegative("aeiou.replay_capacity", a.ReplayCapacity)
	if a.RepeatLimit != 0 && a.RepeatLimit < 2 {
		r.add("aeiou.repeat_limit", "want at least 2 (0 or unset: 3), got %d", a.RepeatLimit)
	}
	if a.HMACSecretEnv != "" {
		if v, ok := os.LookupEnv(a.HMACSecretEnv); ok && len(v) < 32 {
			r.add("aeiou.hmac_secret_env", "%s holds %d bytes; an HS256 secret needs at least 32", a.HMACSecretEnv, len(v))
		}
	}
}

// checkLoopControl reports a bad loop_control of listener l.
func checkLoopControl(r *reporter, path string, l Listener) {
	switch {
	case l.LoopControl == "":
	case !l.Agent:
		r.add(path+".loop_control", "only agents take loop_control (set agent: true)")
	case l.LoopControl != LoopAEIOU:
		r.add(path+".loop_control", "unknown loop_control %q (want aeiou)", l.LoopControl)
	case strings.EqualFold(string(l.ToolCalling), string(XMLToolCalling)):
		r.add(path+".loop_control", "aeiou loop control needs native tool calling (the aeiou_magic tool); this agent has tool_calling: xml")
	case !l.Response.IsZero():
		r.add(path+".loop_control", "aeiou loop control needs a text answer (its token is the last line); this agent declares a response payload")
	}
}

// normalizeLoopControl lower-cases loop_control values.
func normalizeLoopControl(l *Listener) {
	l.LoopControl = LoopControl(strings.ToLower(strings.TrimSpace(string(l.LoopControl))))
}
