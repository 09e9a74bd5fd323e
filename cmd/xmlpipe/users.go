package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/boombuler/barcode/qr"
	"github.com/pquerna/otp"
	"golang.org/x/term"

	"github.com/xml-pipeline/xmlpipe/pump/bus/auth"
	"github.com/xml-pipeline/xmlpipe/registry/store"
)

// usersUsage lists the users subcommands.
const usersUsage = `usage: xmlpipe users <command> [--data DIR] [--config organism.yaml]
  add NAME [--role viewer|operator|admin] [--profile P] [--password-stdin]
                                                                 create a user, print the TOTP secret
  list                                                           list users
  remove NAME                                                    delete a user and their sessions
  reset-totp NAME                                                new TOTP secret, revoke sessions
  passwd NAME [--password-stdin]                                 new password, revoke sessions
  role NAME viewer|operator|admin                                change a user's role
  profile NAME PROFILE                                           set a user's security profile ("" for none)
Users are managed while the organism is stopped (it holds the data directory).`

// userCommands are the subcommands of `xmlpipe users`.
var userCommands = map[string]commandFunc{
	"add":        runUsersAdd,
	"list":       runUsersList,
	"remove":     runUsersRemove,
	"reset-totp": runUsersResetTOTP,
	"passwd":     runUsersPasswd,
	"role":       runUsersRole,
	"profile":    runUsersProfile,
}

// usersArgon2 are the argon2id parameters of new password hashes (zero: the
// auth package's defaults). Tests set cheap ones.
var usersArgon2 auth.Argon2Params

// runUsers is `xmlpipe users add|list|remove|reset-totp|passwd|role …`.
func runUsers(ctx context.Context, args []string, std streams) int {
	if len(args) > 0 && isHelpArg(args[0]) {
		fmt.Fprintln(std.out, usersUsage)
		return exitOK
	}
	if len(args) == 0 || userCommands[args[0]] == nil {
		return subcommandUsage(std, "users", usersUsage, commandNames(userCommands), args)
	}
	return userCommands[args[0]](ctx, args[1:], std)
}

// usersCmd is one parsed users subcommand: its name, positional arguments
// and store flags.
type usersCmd struct {
	name  string
	pos   []string
	store journalStoreFlags
	std   streams
}

// parseUsers parses a users subcommand taking exactly npos positional
// arguments; extra adds the subcommand's own flags before parsing. It
// returns the exit code when parsing ended the command.
func parseUsers(name, argsUsage string, npos int, args []string, std streams, extra func(*flag.FlagSet)) (usersCmd, int, bool) {
	fs := newFlags("users "+name, argsUsage+" [--data DIR] [--config organism.yaml]", std.err)
	if extra != nil {
		extra(fs)
	}
	c := usersCmd{name: name, store: addStoreFlags(fs), std: std}
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return c, code, false
	}
	if !wantArgs(fs, pos, npos, npos) {
		return c, exitUsage, false
	}
	c.pos = pos
	return c, 0, true
}

// fail prints err for the subcommand and returns exitFailure.
func (c usersCmd) fail(err error) int {
	fmt.Fprintf(c.std.err, "xmlpipe users %s: %v\n", c.name, err)
	if errors.Is(err, store.ErrLocked) {
		fmt.Fprintln(c.std.err, "A running organism holds the data directory: stop it first, then manage users.")
	}
	return exitFailure
}

// usage prints err as a usage error and returns exitUsage.
func (c usersCmd) usage(err error) int {
	fmt.Fprintf(c.std.err, "xmlpipe users %s: %v\n", c.name, err)
	return exitUsage
}

// open opens the store (creating the data directory when create is set) and
// an auth service on it. The organism's name, when the configuration loads,
// labels TOTP accounts ("alice@hello-world").
func (c usersCmd) open(create bool) (*auth.Service, *store.Store, error) {
	var pos []string
	if *c.store.config != "" {
		pos = []string{*c.store.config}
	}
	dir, organismName := *c.store.data, ""
	cfg, err := resolveConfig(pos).load()
	switch {
	case err == nil:
		dir, organismName = dataDir(cfg, *c.store.data), cfg.Organism.Name
	case dir == "" || len(pos) > 0:
		return nil, nil, err
	}
	if !create {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("no data directory %s, so no users yet (create one with: xmlpipe users add NAME)", dir)
		} else if err != nil {
			return nil, nil, err
		}
	}
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		return nil, nil, err
	}
	svc, err := auth.New(st, auth.Options{Organism: organismName, Argon2: usersArgon2, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		_ = st.Close()
		return nil, nil, err
	}
	return svc, st, nil
}

// close closes st, reporting a failure.
func (c usersCmd) close(st *store.Store) {
	if err := st.Close(); err != nil {
		fmt.Fprintf(c.std.err, "xmlpipe users %s: close store: %v\n", c.name, err)
	}
}

// mustExist fails unless user exists (checked before asking for a
// password).
func mustExist(ctx context.Context, st *store.Store, name string) error {
	_, err := st.GetUser(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %q (see xmlpipe users list)", auth.ErrUnknownUser, name)
	}
	return err
}

// runUsersAdd is `xmlpipe users add NAME [--role R] [--password-stdin]`.
func runUsersAdd(ctx context.Context, args []string, std streams) int {
	var roleName, profile *string
	var fromStdin *bool
	c, code, ok := parseUsers("add", "NAME [--role viewer|operator|admin] [--profile P] [--password-stdin]", 1, args, std, func(fs *flag.FlagSet) {
		roleName = fs.String("role", string(auth.Operator), "role: viewer (read), operator (also inject) or admin (also control)")
		profile = fs.String("profile", "", "security profile of the user's conversations (a profiles: entry of organism.yaml)")
		fromStdin = fs.Bool("password-stdin", false, "read the password from the first line of stdin instead of a prompt")
	})
	if !ok {
		return code
	}
	name := c.pos[0]
	role, err := auth.ParseRole(*roleName)
	if err != nil {
		return c.usage(err)
	}
	if err := auth.ValidName(name); err != nil {
		return c.usage(err)
	}
	if err := c.checkProfile(*profile); err != nil {
		return c.usage(err)
	}
	svc, st, err := c.open(true)
	if err != nil {
		return c.fail(err)
	}
	defer c.close(st)
	if _, err := st.GetUser(ctx, name); err == nil {
		return c.fail(fmt.Errorf("%w: %q (reset its TOTP with xmlpipe users reset-totp, its password with xmlpipe users passwd)", auth.ErrUserExists, name))
	}
	password, err := readNewPassword(std, name, *fromStdin)
	if err != nil {
		return c.fail(err)
	}
	url, err := svc.AddUser(ctx, name, password, role)
	if err != nil {
		return c.fail(err)
	}
	if *profile != "" {
		if err := svc.SetProfile(ctx, name, *profile); err != nil {
			return c.fail(err)
		}
		role = auth.Role(string(role) + ", profile " + *profile)
	}
	fmt.Fprintf(std.err, "User %s (%s) created in %s. Add this TOTP secret to an authenticator app:\n", name, role, st.Dir())
	return c.provisioning(url)
}

// runUsersResetTOTP is `xmlpipe users reset-totp NAME`.
func runUsersResetTOTP(ctx context.Context, args []string, std streams) int {
	c, code, ok := parseUsers("reset-totp", "NAME", 1, args, std, nil)
	if !ok {
		return code
	}
	svc, st, err := c.open(false)
	if err != nil {
		return c.fail(err)
	}
	defer c.close(st)
	url, err := svc.ResetTOTP(ctx, c.pos[0])
	if err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(std.err, "New TOTP secret for %s; the old one and all their sessions are revoked. Add it to an authenticator app:\n", c.pos[0])
	return c.provisioning(url)
}

// provisioning prints the provisioning URL; on a terminal also a QR code
// and the secret for manual entry.
func (c usersCmd) provisioning(url string) int {
	if !isTerminal(c.std.out) {
		fmt.Fprintln(c.std.out, url)
		return exitOK
	}
	key, err := otp.NewKeyFromURL(url)
	if err != nil {
		return c.fail(err)
	}
	code, err := qrText(url)
	if err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(c.std.out, "%s\n%s\nsecret: %s\n", code, url, groupsOf4(key.Secret()))
	return exitOK
}

// runUsersList is `xmlpipe users list`.
func runUsersList(ctx context.Context, args []string, std streams) int {
	c, code, ok := parseUsers("list", "", 0, args, std, nil)
	if !ok {
		return code
	}
	svc, st, err := c.open(false)
	if err != nil {
		return c.fail(err)
	}
	defer c.close(st)
	users, err := svc.Users(ctx)
	if err != nil {
		return c.fail(err)
	}
	if len(users) == 0 {
		fmt.Fprintln(std.err, "No users. Create one with: xmlpipe users add NAME")
		return exitOK
	}
	tw := tabwriter.NewWriter(std.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tPROFILE\tTOTP\tCREATED\tLAST LOGIN")
	for _, u := range users {
		totp, profile := "no", u.Profile
		if u.HasTOTP {
			totp = "yes"
		}
		if profile == "" {
			profile = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.Name, u.Role, profile, totp, listTime(u.Created), listTime(u.LastLogin))
	}
	if err := tw.Flush(); err != nil {
		return c.fail(err)
	}
	return exitOK
}

// listTime formats a listed time; the zero time is "never".
func listTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// runUsersRemove is `xmlpipe users remove NAME`.
func runUsersRemove(ctx context.Context, args []string, std streams) int {
	c, code, ok := parseUsers("remove", "NAME", 1, args, std, nil)
	if !ok {
		return code
	}
	svc, st, err := c.open(false)
	if err != nil {
		return c.fail(err)
	}
	defer c.close(st)
	if err := svc.RemoveUser(ctx, c.pos[0]); err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(std.out, "User %s removed, with their sessions.\n", c.pos[0])
	return exitOK
}

// runUsersPasswd is `xmlpipe users passwd NAME [--password-stdin]`.
func runUsersPasswd(ctx context.Context, args []string, std streams) int {
	var fromStdin *bool
	c, code, ok := parseUsers("passwd", "NAME [--password-stdin]", 1, args, std, func(fs *flag.FlagSet) {
		fromStdin = fs.Bool("password-stdin", false, "read the password from the first line of stdin instead of a prompt")
	})
	if !ok {
		return code
	}
	name := c.pos[0]
	svc, st, err := c.open(false)
	if err != nil {
		return c.fail(err)
	}
	defer c.close(st)
	if err := mustExist(ctx, st, name); err != nil {
		return c.fail(err)
	}
	password, err := readNewPassword(std, name, *fromStdin)
	if err != nil {
		return c.fail(err)
	}
	if err := svc.SetPassword(ctx, name, password); err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(std.out, "Password of %s changed; their sessions are revoked.\n", name)
	return exitOK
}

// runUsersRole is `xmlpipe users role NAME ROLE`.
func runUsersRole(ctx context.Context, args []string, std streams) int {
	c, code, ok := parseUsers("role", "NAME viewer|operator|admin", 2, args, std, nil)
	if !ok {
		return code
	}
	role, err := auth.ParseRole(c.pos[1])
	if err != nil {
		return c.usage(err)
	}
	svc, st, err := c.open(false)
	if err != nil {
		return c.fail(err)
	}
	defer c.close(st)
	if err := svc.SetRole(ctx, c.pos[0], role); err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(std.out, "User %s is now %s.\n", c.pos[0], role)
	return exitOK
}

// runUsersProfile is `xmlpipe users profile NAME PROFILE`.
func runUsersProfile(ctx context.Context, args []string, std streams) int {
	c, code, ok := parseUsers("profile", `NAME PROFILE|""`, 2, args, std, nil)
	if !ok {
		return code
	}
	name, profile := c.pos[0], c.pos[1]
	if err := c.checkProfile(profile); err != nil {
		return c.usage(err)
	}
	svc, st, err := c.open(false)
	if err != nil {
		return c.fail(err)
	}
	defer c.close(st)
	if err := svc.SetProfile(ctx, name, profile); err != nil {
		return c.fail(err)
	}
	if profile == "" {
		fmt.Fprintf(std.out, "User %s has no profile now: their new conversations reach every listener.\n", name)
		return exitOK
	}
	fmt.Fprintf(std.out, "User %s now has profile %s: their new conversations reach what it allows.\n", name, profile)
	return exitOK
}

// checkProfile fails unless profile is "" or defined by the profiles:
// section of the organism.yaml the command names (or finds).
func (c usersCmd) checkProfile(profile string) error {
	if profile == "" {
		return nil
	}
	var pos []string
	if *c.store.config != "" {
		pos = []string{*c.store.config}
	}
	cfg, err := resolveConfig(pos).load()
	if err != nil {
		return fmt.Errorf("profile %q: the organism.yaml defining it does not load: %w", profile, err)
	}
	if _, ok := cfg.Profiles[profile]; !ok {
		if len(cfg.Profiles) == 0 {
			return fmt.Errorf("no profile %q: %s has no profiles: section", profile, cfg.File())
		}
		return fmt.Errorf("no profile %q%s (profiles: %s)", profile, cfg.ProfileHint(profile), strings.Join(cfg.ProfileNames(), ", "))
	}
	return nil
}

// readNewPassword reads user's new password: the first line of stdin with
// fromStdin, else twice from a no-echo prompt on the terminal.
func readNewPassword(std streams, user string, fromStdin bool) (string, error) {
	if fromStdin {
		line, err := bufio.NewReader(std.in).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read password: %w", err)
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			return "", errors.New("no password on stdin")
		}
		return line, auth.ValidPassword(line)
	}
	in, ok := std.in.(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return "", errors.New("stdin is not a terminal: give --password-stdin and write the password on stdin")
	}
	ask := func(prompt string) (string, error) {
		fmt.Fprint(std.err, prompt)
		b, err := term.ReadPassword(int(in.Fd()))
		fmt.Fprintln(std.err)
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		return string(b), nil
	}
	first, err := ask(fmt.Sprintf("New password for %s (at least %d characters): ", user, auth.MinPasswordLen))
	if err != nil {
		return "", err
	}
	if err := auth.ValidPassword(first); err != nil {
		return "", err
	}
	second, err := ask("Repeat it: ")
	if err != nil {
		return "", err
	}
	if first != second {
		return "", errors.New("the passwords differ")
	}
	return first, nil
}

// QR drawing: light modules are the foreground colour (bright white) and
// dark modules the background (black), set explicitly so the code scans on
// light and dark terminal themes alike.
const (
	qrQuiet   = 2
	qrColours = "\x1b[97;40m"
	qrReset   = "\x1b[0m"
)

// qrText draws content as a QR code (error correction M) with Unicode half
// blocks, two modules per character cell vertically, with a quiet zone of
// qrQuiet modules.
func qrText(content string) (string, error) {
	code, err := qr.Encode(content, qr.M, qr.Auto)
	if err != nil {
		return "", fmt.Errorf("QR code: %w", err)
	}
	b := code.Bounds()
	n := b.Dx()
	light := func(x, y int) bool {
		if x < 0 || y < 0 || x >= n || y >= n {
			return y < n+qrQuiet // the quiet zone; below it nothing is drawn
		}
		r, _, _, _ := code.At(b.Min.X+x, b.Min.Y+y).RGBA()
		return r >= 0x8000
	}
	var sb strings.Builder
	for y := -qrQuiet; y < n+qrQuiet; y += 2 {
		sb.WriteString(qrColours)
		for x := -qrQuiet; x < n+qrQuiet; x++ {
			switch top, bottom := light(x, y), light(x, y+1); {
			case top && bottom:
				sb.WriteString("█")
			case top:
				sb.WriteString("▀")
			case bottom:
				sb.WriteString("▄")
			default:
				sb.WriteByte(' ')
			}
		}
		sb.WriteString(qrReset + "\n")
	}
	return sb.String(), nil
}

// groupsOf4 splits a base32 secret into groups of four for reading aloud.
func groupsOf4(s string) string {
	var parts []string
	for len(s) > 4 {
		parts, s = append(parts, s[:4]), s[4:]
	}
	return strings.Join(append(parts, s), " ")
}
