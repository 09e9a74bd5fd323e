// Package config loads and validates organism.yaml, the bootstrap source of
// truth of an xmlpipe organism, and the .env file that accompanies it.
//
// The file is parsed into a yaml.Node tree first, so that every problem —
// an unknown key, a value of the wrong type, a missing field, a dangling peer —
// is reported with the file and line it comes from:
//
//	organism.yaml:12: listeners[1]: unknown key "payload_clas" (did you mean "payload_class"?)
//
// Every key of the Python runtime loader and of the documented design is
// accepted, so the reference's shipped organism.yaml loads unchanged. Keys the
// reference silently ignored (unknown keys, unknown LLM strategies) are errors
// here. All problems of a file are reported at once, joined with errors.Join;
// each wraps ErrConfig.
//
// Relative paths in the file (data_dir, identity, tls, wasm modules, gateway
// identities, the OOB socket) are resolved against the directory that holds
// the file, never against the working directory.
package config
