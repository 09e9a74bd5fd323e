package config

import "time"

// Default returns an organism with every default applied and nothing else:
// no listeners, no LLM backends, no gateways. Its DataDir is the relative
// "data"; Parse and Load resolve it against the configuration's directory.
func Default() *Organism {
	return &Organism{
		Organism: OrganismSection{
			Name:            "unnamed",
			Port:            8765,
			Bind:            "127.0.0.1",
			DataDir:         "data",
			MaxMessageBytes: 1 << 20,
		},
		MaxConcurrentPipelines: 50,
		MaxConcurrentHandlers:  20,
		MaxConcurrentPerAgent:  5,
		MaxChainDepth:          256,
		MaxInFlight:            4096,
		AdmitWait:              Duration(2 * time.Second),
		MaxQueueWait:           Duration(30 * time.Second),
		ThreadScheduling:       BreadthFirst,
		LLM: LLM{
			Strategy:       Failover,
			Retries:        3,
			RetryBaseDelay: Duration(time.Second),
			RetryMaxDelay:  Duration(60 * time.Second),
		},
		OOB: OOB{
			Enabled: true,
			Bind:    "127.0.0.1",
			Port:    8766,
		},
		Meta: Meta{
			Enabled:               true,
			AllowListCapabilities: true,
			AllowSchemaRequests:   AccessAuthenticated,
			AllowExampleRequests:  AccessAuthenticated,
			AllowPromptRequests:   AccessAuthenticated,
		},
		Platform: Platform{
			ContextBuffer: ContextBuffer{
				MaxSlotsPerThread: 10000,
				MaxThreads:        1000,
				TTLHours:          24,
				NoteTTL:           defaultNoteTTL,
				MaxNotes:          minMaxNotes, // max(max_threads, 1000) once loaded
			},
			ThreadTTL: Duration(time.Hour),
		},
		Journal: Journal{
			Enabled:       true,
			Retention:     Retention{Policy: RetainForever},
			SweepInterval: Duration(time.Hour),
		},
		Budgets:    Budgets{OnExceed: ExceedStop, RepeatLimit: 3},
		Governance: Governance{AlertAfter: 3, AlertWindow: Duration(10 * time.Minute)},
		Memory:     Memory{Consent: ConsentAsk, MaxBytes: DefaultMemoryBytes},
		Auth: Auth{
			SessionTTL:          Duration(8 * time.Hour),
			MaxFailures:         5,
			FailureWindow:       Duration(time.Minute),
			Lockout:             Duration(time.Minute),
			MaxLockout:          Duration(time.Hour),
			MaxConcurrentHashes: 2,
			MaxHashQueue:        8,
		},
		Observability: Observability{Metrics: Metrics{Enabled: true}},
		Routing:       defaultRouting(),
	}
}
