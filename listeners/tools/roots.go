package tools

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Root refusals, wrapped by each tool with its own name.
var (
	// ErrNoRoots: allowed_paths is empty, so no path is allowed.
	ErrNoRoots = errors.New("no roots configured (allowed_paths); nothing is allowed")
	// ErrOutside: the path leaves every root.
	ErrOutside = errors.New("path is outside the allowed roots")
	// ErrNUL: the path holds a NUL byte, which no file name can.
	ErrNUL = errors.New("path holds a NUL byte")
	// ErrRootConfig: allowed_paths itself is unusable (a missing or
	// non-directory root, two roots of one name, a root overlapping the
	// data directory).
	ErrRootConfig = errors.New("allowed_paths")
)

// Root is one allowed_paths directory. A caller's path names a root by its
// Name, the directory's base name: with roots /srv/notes and /srv/docs,
// "docs/a.txt" is /srv/docs/a.txt (see Locate).
type Root struct {
	// Name is the base name of Dir: how callers name the root.
	Name string
	// Dir is the root's absolute directory.
	Dir string
}

// Display is how path rel inside r is shown to a caller: the root's name
// and rel ("notes/a.txt"), never a host path.
func (r Root) Display(rel string) string {
	if rel == "" || rel == "." {
		return r.Name
	}
	return r.Name + "/" + rel
}

// Roots names the allowed_paths directories (made absolute). Two roots of
// the same name, or a root without one ("/"), are an ErrRootConfig error.
func Roots(paths []string) ([]Root, error) {
	if len(paths) == 0 {
		return nil, ErrNoRoots
	}
	roots := make([]Root, 0, len(paths))
	seen := map[string]string{}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrRootConfig, p, err)
		}
		name := filepath.Base(abs)
		if name == string(filepath.Separator) || name == "." || name == ".." {
			return nil, fmt.Errorf("%w: %q: a root must be a named directory (not /)", ErrRootConfig, p)
		}
		if other, dup := seen[name]; dup {
			return nil, fmt.Errorf("%w: %q and %q are both named %q; callers name a root by its base name, so roots need distinct ones",
				ErrRootConfig, other, p, name)
		}
		seen[name] = p
		roots = append(roots, Root{Name: name, Dir: abs})
	}
	return roots, nil
}

// Locate finds the root a caller's path names and the clean path inside it
// (slash-separated, "." for the root itself):
//   - a relative path whose first segment is a root's name is inside that
//     root: "notes/hello.txt" is hello.txt in the root named notes (and
//     "notes" is that root itself);
//   - any other relative path is inside the first root: "hello.txt";
//   - an absolute path must lie inside a root's directory.
//
// ".." never leaves a root (ErrOutside); symlinks are the business of the
// os.Root the caller opens on the result. A path holding a NUL byte is
// ErrNUL (cleaning around it would name another file).
func Locate(roots []Root, p string) (Root, string, error) {
	if len(roots) == 0 {
		return Root{}, "", ErrNoRoots
	}
	if strings.IndexByte(p, 0) >= 0 {
		return Root{}, "", ErrNUL
	}
	if filepath.IsAbs(p) {
		p = filepath.Clean(p)
		for _, r := range roots {
			if rel, err := filepath.Rel(r.Dir, p); err == nil && inside(rel) {
				return r, filepath.ToSlash(rel), nil
			}
		}
		return Root{}, "", ErrOutside
	}
	clean := path.Clean(filepath.ToSlash(p))
	if !inside(clean) {
		return Root{}, "", ErrOutside
	}
	first, rest, _ := strings.Cut(clean, "/")
	for _, r := range roots {
		if r.Name == first {
			if rest == "" {
				rest = "."
			}
			return r, rest, nil
		}
	}
	return roots[0], clean, nil
}

// inside reports whether a clean relative path stays where it starts.
func inside(rel string) bool {
	return rel != ".." && !strings.HasPrefix(rel, "../") && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) &&
		!filepath.IsAbs(rel)
}

// CheckRoots is the load-time check of allowed_paths: every root exists and
// is a directory (a missing root is refused, not created: a typo must not
// make a directory somewhere), the roots have distinct names, and none is,
// lies inside or contains the organism's data directory dataDir.
func CheckRoots(paths []string, dataDir string) error {
	roots, err := Roots(paths)
	if err != nil {
		return err
	}
	for _, r := range roots {
		st, err := os.Stat(r.Dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("%w: %s does not exist (create it, or fix the path)", ErrRootConfig, r.Dir)
		case err != nil:
			return fmt.Errorf("%w: %w", ErrRootConfig, err)
		case !st.IsDir():
			return fmt.Errorf("%w: %s is not a directory", ErrRootConfig, r.Dir)
		}
		if err := CheckOutsideData(r.Dir, dataDir); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrRootConfig, r.Dir, err)
		}
	}
	return nil
}

// ErrDataDir refuses a path that is, lies inside or contains the organism's
// data directory.
var ErrDataDir = errors.New("overlaps the organism's data directory (its keys and databases)")

// CheckOutsideData returns ErrDataDir when dir and dataDir, symlinks
// resolved, are the same directory or one contains the other; nil when
// dataDir is "".
func CheckOutsideData(dir, dataDir string) error {
	if dataDir == "" {
		return nil
	}
	a, b := realPath(dir), realPath(dataDir)
	if within(a, b) || within(b, a) {
		return ErrDataDir
	}
	return nil
}

// realPath is p absolute with its symlinks resolved, as far as they resolve.
func realPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	return abs
}

// within reports whether a is b or lies inside it (both absolute, clean).
func within(a, b string) bool {
	rel, err := filepath.Rel(b, a)
	return err == nil && inside(rel)
}
