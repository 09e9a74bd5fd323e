// Package config holds the settings the LLM listener takes: the llm:
// section of organism.yaml (router strategy, backends, retries), the budget
// exceed policy, and the Duration type those settings are written in.
//
// The listener owns these types so that it never imports the pump's
// configuration package (listeners sit below the pump); pump/config aliases
// them into the organism's configuration, where they are decoded and
// validated with file:line errors.
package config
