package config

// Journal is the journal: section.
type Journal struct {
	// Enabled turns the journal on (default true).
	Enabled bool `yaml:"enabled"`
	// Retention is the organism-wide retention policy (default
	// retain_forever); listeners may override it.
	Retention Retention `yaml:"retention"`
	// SweepInterval is how often retention is applied (default 1h); it is
	// also applied once when the organism starts.
	SweepInterval Duration `yaml:"sweep_interval"`
}

// RetentionFor returns the retention policy of the named listener's
// messages: its own retention when set, else the journal's. Names compare
// case-insensitively, as routing does.
func (o *Organism) RetentionFor(listener string) Retention {
	if l, ok := o.Listener(listener); ok && !l.Retention.IsZero() {
		return l.Retention
	}
	return o.Journal.Retention
}
