package aeiou

import (
	"fmt"
	"time"
)

// Defaults of Config.
const (
	DefaultTTL            = 120 * time.Second
	DefaultMaxTTL         = 5 * time.Minute
	DefaultRotationBuffer = 60 * time.Second
	DefaultMaxSkew        = 30 * time.Second
	DefaultRepeatLimit    = 3
)

// Config tunes AEIOU loop control. The zero value is the defaults.
type Config struct {
	// TTL is the lifetime of a minted token (default 120s). Tokens carry it
	// in whole seconds.
	TTL time.Duration `yaml:"ttl"`
	// MaxTTL is the longest token lifetime a verifier accepts (default 5m);
	// TTL must not exceed it, and neither may ReplayTTL fall short of it.
	MaxTTL time.Duration `yaml:"max_ttl"`
	// RotationBuffer is added to MaxTTL for a rotated-out key's grace
	// (§11.5; default 60s).
	RotationBuffer time.Duration `yaml:"rotation_buffer"`
	// MaxSkew is how far in the future a token's issued_at may lie (default
	// 30s; minter and verifier share a clock in one process, so this only
	// absorbs clock steps).
	MaxSkew time.Duration `yaml:"max_skew"`
	// ReplayTTL and ReplayCapacity bound each session's replay cache (§11.3;
	// default 5m and 4096).
	ReplayTTL      time.Duration `yaml:"replay_ttl"`
	ReplayCapacity int           `yaml:"replay_capacity"`
	// RepeatLimit is the progress guard's N (§9; default 3): the same
	// digest this many turns in a row halts with ERR_NO_PROGRESS.
	RepeatLimit int `yaml:"repeat_limit"`
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.MaxTTL == 0 {
		c.MaxTTL = DefaultMaxTTL
	}
	if c.RotationBuffer == 0 {
		c.RotationBuffer = DefaultRotationBuffer
	}
	if c.MaxSkew == 0 {
		c.MaxSkew = DefaultMaxSkew
	}
	if c.ReplayTTL == 0 {
		c.ReplayTTL = DefaultReplayTTL
	}
	if c.ReplayCapacity == 0 {
		c.ReplayCapacity = DefaultReplayCapacity
	}
	if c.RepeatLimit == 0 {
		c.RepeatLimit = DefaultRepeatLimit
	}
	return c
}

// Validate checks the configuration (after defaults): durations positive and
// whole seconds where tokens carry them, TTL ≤ MaxTTL ≤ ReplayTTL, a
// positive capacity, RepeatLimit at least 2.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.TTL < time.Second || c.TTL%time.Second != 0:
		return fmt.Errorf("%w: ttl %v must be a whole number of seconds, at least 1s", ErrConfig, c.TTL)
	case c.MaxTTL < time.Second || c.MaxTTL%time.Second != 0:
		return fmt.Errorf("%w: max_ttl %v must be a whole number of seconds, at least 1s", ErrConfig, c.MaxTTL)
	case c.TTL > c.MaxTTL:
		return fmt.Errorf("%w: ttl %v exceeds max_ttl %v", ErrConfig, c.TTL, c.MaxTTL)
	case c.ReplayTTL < c.MaxTTL:
		return fmt.Errorf("%w: replay_ttl %v is shorter than max_ttl %v (a jti could be forgotten while its token is valid)", ErrConfig, c.ReplayTTL, c.MaxTTL)
	case c.RotationBuffer < 0:
		return fmt.Errorf("%w: rotation_buffer %v is negative", ErrConfig, c.RotationBuffer)
	case c.MaxSkew < 0 || c.MaxSkew%time.Second != 0:
		return fmt.Errorf("%w: max_skew %v must be a whole number of seconds, not negative", ErrConfig, c.MaxSkew)
	case c.ReplayCapacity < 1:
		return fmt.Errorf("%w: replay_capacity %d must be positive", ErrConfig, c.ReplayCapacity)
	case c.RepeatLimit < 2:
		return fmt.Errorf("%w: repeat_limit %d must be at least 2", ErrConfig, c.RepeatLimit)
	}
	return nil
}
