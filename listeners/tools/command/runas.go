package command

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// DefaultRunAs is the user programs run as when run_as is not set.
const DefaultRunAs = "nobody"

// Self is the run_as value that keeps the organism's own user (only for an
// organism that does not run as root).
const Self = "self"

// nobodyID is nobody's uid and gid on Debian and most Linux systems, used
// when the user database has no "nobody".
const nobodyID = 65534

// Refusals.
var (
	ErrPrivileges = errors.New("run_command: cannot run the program without the organism's privileges")
	ErrDataOpen   = errors.New("run_command: the organism's data directory is open to the run_as user")
)

// errSelfAsRoot: run_as self in an organism running as root (refused at
// load by Check, and by each call should the organism become root).
var errSelfAsRoot = fmt.Errorf("%w: run_as self would run programs as root; name an unprivileged user", ErrPrivileges)

// identity is who a program runs as: a uid and gid, or the organism's own
// user (self).
type identity struct {
	uid, gid uint32
	self     bool
}

// parseRunAs reads run_as: "" (nobody), "self", a user name, "UID" or
// "UID:GID". Root (uid 0) is refused: no program ever runs as root.
func parseRunAs(s string) (identity, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = DefaultRunAs
	}
	if s == Self {
		return identity{self: true}, nil
	}
	var id identity
	if u, g, numeric := strings.Cut(s, ":"); numeric || strings.Trim(s, "0123456789") == "" {
		uid, err1 := strconv.ParseUint(u, 10, 32)
		gid, err2 := uid, error(nil)
		if numeric {
			gid, err2 = strconv.ParseUint(g, 10, 32)
		}
		if err1 != nil || err2 != nil {
			return identity{}, fmt.Errorf("%w: run_as %q: want a user name, UID, UID:GID or self", ErrConfig, s)
		}
		id = identity{uid: uint32(uid), gid: uint32(gid)}
	} else {
		u, err := user.Lookup(s)
		switch {
		case err != nil && s == DefaultRunAs:
			id = identity{uid: nobodyID, gid: nobodyID}
		case err != nil:
			return identity{}, fmt.Errorf("%w: run_as %q: %w", ErrConfig, s, err)
		default:
			uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
			gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
			if err1 != nil || err2 != nil {
				return identity{}, fmt.Errorf("%w: run_as %q: uid %q gid %q are not numbers", ErrConfig, s, u.Uid, u.Gid)
			}
			id = identity{uid: uint32(uid), gid: uint32(gid)}
		}
	}
	if id.uid == 0 || id.gid == 0 {
		return identity{}, fmt.Errorf("%w: run_as %q is root: programs never run as root", ErrConfig, s)
	}
	return id, nil
}

// credential decides how the program is started for an organism running as
// euid: as root it switches to the run_as user (no supplementary groups),
// after checking the data directory is closed to that user; otherwise it
// can only keep its own user, which run_as must say (self, or the same
// uid). nil means "as the organism's user".
func (id identity) credential(euid int, dataDir string) (*syscall.Credential, error) {
	switch {
	case id.self && euid == 0:
		return nil, errSelfAsRoot
	case id.self || (euid != 0 && uint32(euid) == id.uid):
		return nil, nil
	case euid != 0:
		return nil, fmt.Errorf("%w: the organism is not root, so it cannot run programs as uid %d (run_as); "+
			"run it as root, or set run_as: self to run them as the organism's own user", ErrPrivileges, id.uid)
	}
	if err := closedTo(dataDir, id.uid, id.gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: id.uid, Gid: id.gid, Groups: []uint32{}}, nil
}

// closedTo checks that uid:gid (without supplementary groups) can neither
// list nor enter dir ("" or a missing dir: nothing to protect).
func closedTo(dir string, uid, gid uint32) error {
	if dir == "" {
		return nil
	}
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrDataOpen, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%w: cannot read its owner", ErrDataOpen)
	}
	perm := st.Mode().Perm()
	var bits os.FileMode
	switch {
	case sys.Uid == uid:
		bits = perm >> 6
	case sys.Gid == gid:
		bits = perm >> 3
	default:
		bits = perm
	}
	if bits&0o5 != 0 {
		return fmt.Errorf("%w (uid %d:%d, mode %s): chmod 700 it", ErrDataOpen, uid, gid, perm)
	}
	return nil
}
