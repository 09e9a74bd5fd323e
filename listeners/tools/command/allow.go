package command

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/xml-pipeline/xmlpipe/listeners/tools"
)

// SafePath is the PATH programs are looked up in and run with; the
// organism's own PATH is never used.
const SafePath = "/usr/local/bin:/usr/bin:/bin"

// Limits on a call's arguments.
const (
	MaxArgs     = 256
	MaxArgBytes = 4096
)

// Refusals.
var (
	ErrNotAllowed = errors.New("run_command: command not in the allow-list (tool_config.run_command.allowed_commands)")
	ErrArgument   = errors.New("run_command: argument not allowed")
	ErrEmpty      = errors.New("run_command: empty command")
	ErrNotFound   = errors.New("run_command: command not found")
	ErrConfig     = errors.New("run_command")
)

// The placeholders an argument pattern may end with.
const (
	// File is an existing regular file inside allowed_paths, named as the
	// files tool names it ("notes/a.txt"); the program gets its real path.
	File = "file"
	// Dir is an existing directory inside allowed_paths, likewise.
	Dir = "dir"
	// Text is any text that is neither an option nor a path: it does not
	// begin with "-", holds no "/" and is not "." or "..".
	Text = "text"
	// Int is a non-negative decimal integer (at most 18 digits).
	Int = "int"
)

// pattern is one parsed argument pattern: a literal prefix and, unless
// the pattern is a plain literal, a placeholder after it.
type pattern struct {
	prefix, placeholder string
	src                 string
}

// parsePattern reads "-l" (a literal: the argument must be exactly that),
// "{file}" or "--lines={int}" (a literal prefix, then one placeholder,
// which ends the pattern).
func parsePattern(s string) (pattern, error) {
	if s == "" {
		return pattern{}, errors.New("an empty argument pattern")
	}
	if strings.ContainsRune(s, 0) {
		return pattern{}, fmt.Errorf("argument pattern %q holds a NUL byte", s)
	}
	open := strings.IndexByte(s, '{')
	if open < 0 {
		if strings.ContainsRune(s, '}') {
			return pattern{}, fmt.Errorf("argument pattern %q: a stray }", s)
		}
		return pattern{prefix: s, src: s}, nil
	}
	name, ok := strings.CutSuffix(s[open+1:], "}")
	if !ok || strings.ContainsAny(name, "{}") || strings.ContainsAny(s[:open], "{}") {
		return pattern{}, fmt.Errorf("argument pattern %q: a placeholder ({file}, {dir}, {text} or {int}) must end the pattern, and only one", s)
	}
	switch name {
	case File, Dir, Text, Int:
	default:
		return pattern{}, fmt.Errorf("argument pattern %q: unknown placeholder {%s} (want {file}, {dir}, {text} or {int})", s, name)
	}
	return pattern{prefix: s[:open], placeholder: name, src: s}, nil
}

// allowed is one allow-list entry, parsed.
type allowed struct {
	name     string
	patterns []pattern
}

// parseEntries parses the allow-list and checks it against the rest of
// the configuration.
func parseEntries(c tools.Config) ([]allowed, error) {
	out := make([]allowed, 0, len(c.AllowedCommands))
	for _, e := range c.AllowedCommands {
		name := e.Name
		switch {
		case strings.TrimSpace(name) == "":
			return nil, fmt.Errorf("%w: an allowed_commands entry without a command", ErrConfig)
		case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || r == 0 }) >= 0:
			return nil, fmt.Errorf("%w: allowed command %q: a program name, without arguments or spaces (declare arguments in args)", ErrConfig, name)
		case strings.ContainsRune(name, '/') && !filepath.IsAbs(name):
			return nil, fmt.Errorf("%w: allowed command %q: a bare name or an absolute path", ErrConfig, name)
		}
		a := allowed{name: name}
		for _, s := range e.Args {
			p, err := parsePattern(s)
			if err != nil {
				return nil, fmt.Errorf("%w: allowed command %s: %w", ErrConfig, name, err)
			}
			if (p.placeholder == File || p.placeholder == Dir) && len(c.AllowedPaths) == 0 {
				return nil, fmt.Errorf("%w: allowed command %s: %s needs allowed_paths (the roots file arguments must lie in)", ErrConfig, name, s)
			}
			a.patterns = append(a.patterns, p)
		}
		out = append(out, a)
	}
	return out, nil
}

// lookPath finds a program: an absolute path as it is, a bare name in
// SafePath. It must be an executable regular file.
func lookPath(name string) (string, error) {
	dirs := filepath.SplitList(SafePath)
	if filepath.IsAbs(name) {
		dirs = []string{""}
	}
	for _, d := range dirs {
		p := name
		if d != "" {
			p = filepath.Join(d, name)
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s (looked in %s)", ErrNotFound, name, SafePath)
}

// resolve checks a call against the allow-list: the command must be an
// entry's name exactly, and every argument must match one of that entry's
// patterns (in any order, any number of times). Entries of one command are
// alternatives: the first that accepts every argument wins. It returns the
// program's path and the arguments to run it with ({file} and {dir}
// replaced by real paths). Nothing runs unless it returns nil.
func resolve(c tools.Config, cmd string, args []string) (string, []string, error) {
	if strings.TrimSpace(cmd) == "" {
		return "", nil, ErrEmpty
	}
	entries, err := parseEntries(c)
	if err != nil {
		return "", nil, err
	}
	if len(args) > MaxArgs {
		return "", nil, fmt.Errorf("%w: %d arguments (max: %d)", ErrArgument, len(args), MaxArgs)
	}
	var roots []tools.Root
	if len(c.AllowedPaths) > 0 {
		if roots, err = tools.Roots(c.AllowedPaths); err != nil {
			return "", nil, fmt.Errorf("%w: allowed_paths is misconfigured", ErrConfig)
		}
	}
	var refusal error
	for _, e := range entries {
		if e.name != cmd {
			continue
		}
		argv, err := e.accept(args, roots, c.DataDir)
		if err != nil {
			refusal = err
			continue
		}
		path, err := lookPath(e.name)
		if err != nil {
			return "", nil, err
		}
		return path, argv, nil
	}
	if refusal != nil {
		return "", nil, refusal
	}
	return "", nil, fmt.Errorf("%w: %q", ErrNotAllowed, cmd)
}

// accept matches every argument against the entry's patterns.
func (e allowed) accept(args []string, roots []tools.Root, dataDir string) ([]string, error) {
	out := make([]string, len(args))
	for i, a := range args {
		if len(a) > MaxArgBytes {
			return nil, fmt.Errorf("%w: argument %d is %d bytes (max: %d)", ErrArgument, i+1, len(a), MaxArgBytes)
		}
		if strings.IndexByte(a, 0) >= 0 { // no program can receive it; a path would be cut short
			return nil, fmt.Errorf("%w: argument %d holds a NUL byte", ErrArgument, i+1)
		}
		var why error
		matched := false
		for _, p := range e.patterns {
			v, ok, err := p.match(a, roots, dataDir)
			if ok {
				out[i], matched = v, true
				break
			}
			if err != nil && why == nil {
				why = err
			}
		}
		if !matched {
			return nil, e.refuse(i, a, why)
		}
	}
	return out, nil
}

// refuse explains why argument i was refused, naming what the entry accepts.
func (e allowed) refuse(i int, a string, why error) error {
	accepts := "no arguments"
	if len(e.patterns) > 0 {
		srcs := make([]string, len(e.patterns))
		for j, p := range e.patterns {
			srcs[j] = fmt.Sprintf("%q", p.src)
		}
		accepts = "only " + strings.Join(srcs, ", ")
	}
	if why != nil {
		return fmt.Errorf("%w: %s argument %d %q: %w (%s accepts %s)", ErrArgument, e.name, i+1, a, why, e.name, accepts)
	}
	return fmt.Errorf("%w: %s argument %d %q (%s accepts %s)", ErrArgument, e.name, i+1, a, e.name, accepts)
}

// match reports whether argument a matches p, and the argument to pass.
// err says why a placeholder that could have matched did not.
func (p pattern) match(a string, roots []tools.Root, dataDir string) (string, bool, error) {
	if p.placeholder == "" {
		return a, a == p.prefix, nil
	}
	v, ok := strings.CutPrefix(a, p.prefix)
	if !ok {
		return "", false, nil
	}
	switch p.placeholder {
	case Int:
		if v == "" || len(v) > 18 || strings.Trim(v, "0123456789") != "" {
			return "", false, nil
		}
		return a, true, nil
	case Text:
		if v == "" || v == "." || v == ".." || strings.HasPrefix(v, "-") || strings.ContainsRune(v, '/') {
			return "", false, nil
		}
		return a, true, nil
	}
	real, err := realIn(roots, v, p.placeholder, dataDir)
	if err != nil {
		return "", false, err
	}
	return p.prefix + real, true, nil
}

// realIn resolves a {file} or {dir} value: the path names a root as the
// files tool's paths do; it must exist inside that root (through os.Root,
// so neither ".." nor a symlink leaves it), be of the wanted kind, and
// its real path (symlinks resolved) must lie in the root and outside the
// data directory. The real path is what the program gets.
func realIn(roots []tools.Root, v, kind, dataDir string) (string, error) {
	r, rel, err := tools.Locate(roots, v)
	if err != nil {
		return "", err
	}
	root, err := os.OpenRoot(r.Dir)
	if err != nil {
		return "", fmt.Errorf("root %s unavailable", r.Name)
	}
	defer root.Close()
	st, err := root.Stat(rel)
	if err != nil {
		return "", fmt.Errorf("%s: %w", r.Display(rel), pathReason(err))
	}
	switch {
	case kind == File && !st.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a regular file", r.Display(rel))
	case kind == File && tools.HardLinked(st):
		return "", fmt.Errorf("%s has more than one hard link", r.Display(rel))
	case kind == Dir && !st.IsDir():
		return "", fmt.Errorf("%s is not a directory", r.Display(rel))
	}
	rootReal, err := filepath.EvalSymlinks(r.Dir)
	if err != nil {
		return "", fmt.Errorf("root %s unavailable", r.Name)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(r.Dir, filepath.FromSlash(rel)))
	if err != nil {
		return "", fmt.Errorf("%s: %w", r.Display(rel), pathReason(err))
	}
	if rel, err := filepath.Rel(rootReal, real); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", tools.ErrOutside
	}
	if tools.CheckOutsideData(real, dataDir) != nil {
		return "", fmt.Errorf("%s: %w", r.Display(rel), tools.ErrDataDir)
	}
	return real, nil
}

// pathReason is the reason inside a path error, without the host path.
func pathReason(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
