package config

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// Librarian is an agent's librarian: block (seed 000 §6.3). The librarian
// curates the agent's context before every model call — it folds segments
// of the conversation that are irrelevant to the current task into
// summaries, folds then evicts what does not fit the context window, and
// offers the model context_unfold to read any folded or evicted segment
// back in full. It is not an agent (One Thinker): it only ever asks its
// model for a summary.
//
//	librarian:
//	  model: grok-3-mini     # writes fold summaries; unset: extractive summaries
//	  fold_below: 0.08       # relevance under which a segment is folded
//	  unfold_above: 0.2      # relevance at which a folded segment comes back
//	  keep_recent: 2         # segments before the current turn never folded
//
// An agent without the block keeps today's behaviour: its history is fitted
// to the context window, oldest first, with a note. `librarian: {}` turns
// the librarian on with the defaults. Agents in xml tool calling mode, which
// has no functions to unfold with, are fitted to the window as before.
type Librarian struct {
	// Model writes fold summaries — a cheaper model than the agent's,
	// served by the llm: backends. Unset: summaries are extractive (the
	// first sentence and the key lines of the segment), no model call.
	Model string `yaml:"model"`
	// FoldBelow folds a segment less relevant than this to the current
	// task (0 to 1; unset: 0.08; 0: segments are folded only to fit the
	// context window).
	FoldBelow Ratio `yaml:"fold_below"`
	// UnfoldAbove unfolds a folded segment at least this relevant (0 to 1,
	// at least fold_below; unset: 0.2).
	UnfoldAbove Ratio `yaml:"unfold_above"`
	// KeepRecent is how many segments before the current turn are never
	// folded for relevance (unset: 2).
	KeepRecent *int `yaml:"keep_recent"`
	// MinFoldTokens: segments smaller than this many tokens are never
	// folded for relevance (unset: 64).
	MinFoldTokens *int `yaml:"min_fold_tokens"`
	// SummaryWords bounds a fold summary (unset: 60).
	SummaryWords int `yaml:"summary_words"`
	// MaxSummaries bounds the model summaries written before one model call
	// (unset: 2; the other folded segments keep an extractive one until a
	// later call).
	MaxSummaries int `yaml:"max_summaries"`
	// SummaryTimeout bounds one model summary (unset: 30s).
	SummaryTimeout Duration `yaml:"summary_timeout"`
}

// The librarian defaults.
const (
	DefaultFoldBelow     = 0.08
	DefaultUnfoldAbove   = 0.2
	DefaultKeepRecent    = 2
	DefaultMinFoldTokens = 64
)

// Ratio is a number from 0 to 1 that may be left unset.
type Ratio struct {
	// Value is the number when Set.
	Value float64
	// Set reports whether the file gave one.
	Set bool
}

// UnmarshalYAML reads a number.
func (r *Ratio) UnmarshalYAML(n *yaml.Node) error {
	var t Temperature
	if err := t.UnmarshalYAML(n); err != nil {
		return err
	}
	*r = Ratio(t)
	return nil
}

// MarshalYAML writes the number, or null when unset.
func (r Ratio) MarshalYAML() (any, error) {
	if !r.Set {
		return nil, nil
	}
	return r.Value, nil
}

// Or returns the ratio, or def when unset.
func (r Ratio) Or(def float64) float64 {
	if !r.Set {
		return def
	}
	return r.Value
}

// intOr returns *p, or def when p is nil.
func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// KeepRecentOr is keep_recent with its default.
func (l *Librarian) KeepRecentOr() int { return intOr(l.KeepRecent, DefaultKeepRecent) }

// MinFoldTokensOr is min_fold_tokens with its default.
func (l *Librarian) MinFoldTokensOr() int { return intOr(l.MinFoldTokens, DefaultMinFoldTokens) }

// checkLibrarian reports out-of-range librarian settings.
func checkLibrarian(r *reporter, path string, l *Librarian) {
	for _, k := range []struct {
		key string
		v   Ratio
	}{{"fold_below", l.FoldBelow}, {"unfold_above", l.UnfoldAbove}} {
		if k.v.Set && (k.v.Value < 0 || k.v.Value > 1) {
			r.add(path+"."+k.key, "want a number from 0 to 1, got %v", k.v.Value)
		}
	}
	if fb, ua := l.FoldBelow.Or(DefaultFoldBelow), l.UnfoldAbove.Or(DefaultUnfoldAbove); ua < fb && l.UnfoldAbove.Set {
		r.add(path+".unfold_above", "want at least fold_below (%v), got %v: a segment would flap between tiers", fb, ua)
	}
	r.nonNegative(path+".keep_recent", l.KeepRecentOr())
	r.nonNegative(path+".min_fold_tokens", l.MinFoldTokensOr())
	r.nonNegative(path+".summary_words", l.SummaryWords)
	r.nonNegative(path+".max_summaries", l.MaxSummaries)
	if l.SummaryTimeout < 0 {
		r.add(path+".summary_timeout", "want a positive duration, got %v", l.SummaryTimeout)
	}
	if l.Model != "" && strings.TrimSpace(l.Model) == "" {
		r.add(path+".model", "empty model name")
	}
}
