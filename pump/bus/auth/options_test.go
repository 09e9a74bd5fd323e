package auth

import (
	"errors"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		ok   bool
	}{
		{"zero", Options{}, true},
		{"cheap argon2", Options{Argon2: cheap}, true},
		{"negative ttl", Options{SessionTTL: -time.Second}, false},
		{"negative failures", Options{MaxFailures: -1}, false},
		{"negative window", Options{FailureWindow: -1}, false},
		{"negative lockout", Options{Lockout: -1}, false},
		{"negative hashes", Options{MaxConcurrentHashes: -1}, false},
		{"negative max lockout", Options{MaxLockout: -1}, false},
		{"lockout above max lockout", Options{Lockout: 2 * time.Hour, MaxLockout: time.Hour}, false},
		{"lockout above the default max lockout", Options{Lockout: 2 * time.Hour}, true},
		{"negative hash queue", Options{MaxHashQueue: -1}, false},
		{"memory below 8 per thread", Options{Argon2: Argon2Params{MemoryKiB: 16}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if tt.ok != (err == nil) || err != nil && !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	if _, err := New(nil, Options{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("New(nil store) = %v", err)
	}
}

func TestOptionsDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	if o.SessionTTL != 8*time.Hour || o.MaxFailures != 5 || o.FailureWindow != time.Minute || o.Lockout != time.Minute ||
		o.Argon2 != (Argon2Params{Time: 3, MemoryKiB: 65536, Threads: 4}) || o.MaxConcurrentHashes != 2 || o.Clock == nil || o.Logger == nil ||
		o.MaxLockout != time.Hour || o.MaxHashQueue != 8 {
		t.Fatalf("defaults = %+v", o)
	}
	if o := (Options{Lockout: 2 * time.Hour}).withDefaults(); o.MaxLockout != 2*time.Hour {
		t.Errorf("max lockout below a long lockout: %v", o.MaxLockout)
	}
}
