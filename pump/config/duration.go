package config

import llmconfig "github.com/xml-pipeline/xmlpipe/listeners/llm/config"

// Duration is a time.Duration written in YAML either as a number of seconds
// (1.0, 120) — the reference's form — or as a Go duration string ("1h",
// "90s", "1.5s"). It is defined with the LLM listener's settings, which are
// written in it, and used by every section.
type Duration = llmconfig.Duration
