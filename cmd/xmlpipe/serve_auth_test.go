package main

import (
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// TestAuthOptions: organism.yaml's auth: defaults are the user service's
// defaults, and every key reaches the service.
func TestAuthOptions(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	ignore := cmpopts.IgnoreFields(auth.Options{}, "Logger", "Clock")
	cfg := config.Default()
	cfg.Organism.Name = "hello"
	want := auth.Options{SessionTTL: auth.DefaultSessionTTL, MaxFailures: auth.DefaultMaxFailures,
		FailureWindow: auth.DefaultFailureWindow, Lockout: auth.DefaultLockout, MaxLockout: auth.DefaultMaxLockout,
		MaxConcurrentHashes: auth.DefaultMaxConcurrentHashes, MaxHashQueue: auth.DefaultMaxHashQueue, Organism: "hello"}
	if diff := cmp.Diff(want, authOptions(cfg, log), ignore); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}

	cfg.Auth = config.Auth{SessionTTL: config.Duration(time.Hour), MaxFailures: 3, FailureWindow: config.Duration(2 * time.Minute),
		Lockout: config.Duration(3 * time.Minute), MaxLockout: config.Duration(4 * time.Hour), MaxConcurrentHashes: 1, MaxHashQueue: 2}
	want = auth.Options{SessionTTL: time.Hour, MaxFailures: 3, FailureWindow: 2 * time.Minute, Lockout: 3 * time.Minute,
		MaxLockout: 4 * time.Hour, MaxConcurrentHashes: 1, MaxHashQueue: 2, Organism: "hello"}
	got := authOptions(cfg, log)
	if diff := cmp.Diff(want, got, ignore); diff != "" {
		t.Errorf("configured (-want +got):\n%s", diff)
	}
	if got.Logger != log {
		t.Error("the logger did not reach the service")
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
