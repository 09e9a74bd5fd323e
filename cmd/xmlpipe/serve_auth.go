package main

import (
	"log/slog"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/pump/config"
)

// authOptions are the user service's options for the organism named in cfg:
// its auth: section (session lifetime, login limits, hash concurrency).
func authOptions(cfg *config.Organism, log *slog.Logger) auth.Options {
	a := cfg.Auth
	return auth.Options{
		SessionTTL:          a.SessionTTL.D(),
		MaxFailures:         a.MaxFailures,
		FailureWindow:       a.FailureWindow.D(),
		Lockout:             a.Lockout.D(),
		MaxLockout:          a.MaxLockout.D(),
		MaxConcurrentHashes: a.MaxConcurrentHashes,
		MaxHashQueue:        a.MaxHashQueue,
		Organism:            cfg.Organism.Name,
		Logger:              log,
	}
}
