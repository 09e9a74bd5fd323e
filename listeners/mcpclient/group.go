package mcpclient

import (
	"context"
	"os/exec"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// terminateWait is how long closing a command server's connection waits,
// after closing its stdin, before SIGTERM (and as long again before
// SIGKILL).
const terminateWait = time.Second

// groupTransport starts a command server in a process group of its own,
// and when its connection closes — the mount closing, or the server
// breaking the connection, after which the SDK closes it — the whole group
// is killed once the server has been stopped as the SDK stops it; so is
// it as soon as the server exits (watchExit). Whatever the server started
// (npx's node, a shell's background jobs) dies with it instead of
// outliving it, one more at every restart.
type groupTransport struct {
	sdk.CommandTransport
}

func newGroupTransport(cmd *exec.Cmd) *groupTransport {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return &groupTransport{sdk.CommandTransport{Command: cmd, TerminateDuration: terminateWait}}
}

// Connect implements sdk.Transport.
func (t *groupTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.CommandTransport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	pgid := t.Command.Process.Pid
	go watchExit(pgid)
	return &groupConn{Connection: c, pgid: pgid}, nil
}

// groupConn is a command server's connection that kills the server's
// process group when it closes.
type groupConn struct {
	sdk.Connection
	pgid int
	once sync.Once
}

// Close implements sdk.Connection: the server is stopped (stdin closed,
// then SIGTERM, then SIGKILL), then what is left of its group is killed.
func (c *groupConn) Close() error {
	err := c.Connection.Close()
	c.once.Do(func() { _ = syscall.Kill(-c.pgid, syscall.SIGKILL) })
	return err
}
