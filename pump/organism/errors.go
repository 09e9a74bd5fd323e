package organism

import "errors"

// Errors of adding listeners while the organism runs (AddListener). The
// errors returned wrap one of them.
var (
	// ErrNoLLM means a YAML agent was added but no usable LLM backend
	// serves its model (none configured, or every api_key_env unset). It
	// also matches errors.ErrUnsupported: this organism cannot run agents.
	ErrNoLLM error = unsupportedError("no usable LLM backend")
	// ErrOutsideOrganism means a wasm listener's module, xsd or
	// capabilities.dir lies outside the organism's directory tree.
	ErrOutsideOrganism = errors.New("outside the organism's directory")
	// ErrNotModule means a wasm listener's module is not a WebAssembly
	// file: not named *.wasm, not a regular file, too large, or without
	// the WebAssembly magic.
	ErrNotModule = errors.New("not a WebAssembly module file")
	// ErrDataDirOverlap means a wasm listener's capabilities.dir is the
	// organism's data directory (keys, journal, SQLite files,
	// certificates), lies inside it or contains it — at assembly or when
	// added while the organism runs.
	ErrDataDirOverlap = errors.New("overlaps the organism's data directory")
)

// unsupportedError is a sentinel error that also matches
// errors.ErrUnsupported, so callers that do not import this package (oob)
// can tell "this organism cannot do that" from a bad request.
type unsupportedError string

func (e unsupportedError) Error() string { return string(e) }

// Is reports whether target is errors.ErrUnsupported.
func (e unsupportedError) Is(target error) bool { return target == errors.ErrUnsupported }
