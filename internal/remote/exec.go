package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// cancelGrace is how long a cancelled command gets between SIGTERM and
// SIGKILL.
const cancelGrace = 5 * time.Second

// pgidMarker prefixes the first stderr line of every wrapped command: the
// process group id the command runs in, which Run strips from stderr and
// uses to kill the whole group on cancel.
const pgidMarker = "heatsible-pgid-"

// wrapCommand runs cmd under /bin/sh so that the whole remote process tree
// can be stopped on cancel. sshd puts each non-PTY session into its own
// process group (setsid) whose id is the shell's pid. The shell reports that
// id on stderr, and:
//   - a "signal" request (honoured by sshd for non-root logins only) hits
//     the shell, whose trap forwards it to the group ("kill 0"): a bare
//     shell would die and leave ansible-playbook running;
//   - for root logins, Run kills the group from a second session.
//
// Stdin is passed on explicitly because POSIX shells give background jobs
// /dev/null.
func wrapCommand(cmd, token string) string {
	script := "printf '" + pgidMarker + token + ":%s\\n' $$ >&2\n" +
		"exec 3<&0\n" +
		"trap 'trap - TERM INT HUP; kill -TERM 0 2>/dev/null' TERM INT HUP\n" +
		"( " + cmd + "\n) 0<&3 3<&- &\n" +
		"wait $!\n"
	return "exec /bin/sh -c " + ShellQuote(script)
}

// Run runs cmd with the user's shell on the remote host and streams its
// stdout and stderr live to the writers (nil discards). Stdin is empty.
//
// The exit code is the command's; err is non-nil only when the command could
// not run to completion (connection lost: wraps ErrUnreachable; ctx done:
// wraps ctx.Err() after the remote process group got SIGTERM, then SIGKILL).
func (c *Client) Run(ctx context.Context, cmd string, stdout, stderr io.Writer) (int, error) {
	return c.RunStdin(ctx, cmd, nil, stdout, stderr)
}

// RunStdin is Run with stdin fed from r: the way to hand a secret to a
// remote command without putting it in argv or the environment.
func (c *Client) RunStdin(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if err := ctx.Err(); err != nil {
		return -1, fmt.Errorf("running remote command: %w", err)
	}
	sess, err := c.conn.NewSession()
	if err != nil {
		return -1, c.sessionErr("opening ssh session", err)
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	// The writers are the caller's: nothing is written to them after Run
	// returns, even while stopCancelled still waits for a late command.
	gate := &writeGate{}
	token := randomToken()
	pg := &pgidFilter{w: gate.wrap(stderr), prefix: pgidMarker + token + ":", pgid: make(chan int, 1)}
	sess.Stdin = stdin
	sess.Stdout = gate.wrap(stdout)
	sess.Stderr = pg
	if err := sess.Start(wrapCommand(cmd, token)); err != nil {
		_ = sess.Close()
		return -1, c.sessionErr("starting remote command", err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()

	select {
	case err = <-done:
		_ = sess.Close()
		return c.exitCode(err)
	case <-ctx.Done():
	}
	defer gate.shut()

	c.log.Info("cancelling remote command", "host", c.addr, "reason", ctx.Err())
	// From here the session belongs to stopCancelled, which may outlive Run: on a
	// loaded host sshd can start the command seconds after the cancel, and
	// until its shell reports its process group there is nothing to kill.
	// stopCancelled keeps listening for that report and kills the group when it
	// comes, so a late start does not leave the command running.
	stopped := make(chan struct{})
	go c.stopCancelled(sess, pg.pgid, done, stopped)
	select {
	case <-stopped:
	case <-time.After(runStopWait):
		c.log.Warn("remote command not stopped yet; still waiting for it in the background", "host", c.addr)
	}
	return -1, fmt.Errorf("remote command on %s cancelled: %w", c.addr, ctx.Err())
}

// runStopWait bounds how long a cancelled Run waits for stopCancelled.
const runStopWait = 2 * cancelGrace

// lateStartWait bounds how long stopCancelled waits for a cancelled command's shell
// to report its process group (sshd may not have started it yet).
const lateStartWait = 2 * time.Minute

// stopCancelled ends a cancelled command's session: SIGTERM to its process group,
// SIGKILL after cancelGrace, then the session is closed. It closes stopped
// when done.
func (c *Client) stopCancelled(sess *ssh.Session, pgids <-chan int, done <-chan error, stopped chan<- struct{}) {
	defer close(stopped)
	defer sess.Close()
	// Honoured by sshd for non-root logins once the command runs.
	_ = sess.Signal(ssh.SIGTERM)
	pgid := 0
	select {
	case pgid = <-pgids:
	case <-done:
		return
	case <-time.After(lateStartWait):
		c.log.Warn("cancelled remote command never reported its process group; closing its session", "host", c.addr)
		return
	}
	c.log.Debug("stopping remote process group", "host", c.addr, "pgid", pgid)
	c.killGroup(sess, pgid, ssh.SIGTERM)
	select {
	case <-done:
	case <-time.After(cancelGrace):
		c.killGroup(sess, pgid, ssh.SIGKILL)
		_ = sess.Close()
		select {
		case <-done:
		case <-time.After(cancelGrace):
		}
	}
}

// killGroup signals the session and, when its process group is known, the
// group from a separate session (sshd refuses signal requests for root).
func (c *Client) killGroup(sess *ssh.Session, pgid int, sig ssh.Signal) {
	_ = sess.Signal(sig)
	if pgid <= 1 {
		return
	}
	ks, err := c.conn.NewSession()
	if err != nil {
		return
	}
	defer ks.Close()
	// Bounded: a wedged connection must not block the cancel path.
	done := make(chan struct{})
	go func() {
		// "kill -s SIG -- -PGID": the POSIX form; dash (a login shell
		// useradd gives by default) refuses "kill -SIG -- -PGID".
		_ = ks.Run(fmt.Sprintf("kill -s %s -- -%d 2>/dev/null; true", sig, pgid))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(cancelGrace):
	}
}

func randomToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeGate stops writes to the caller's writers once Run has returned.
type writeGate struct {
	mu     sync.Mutex
	closed bool
}

func (g *writeGate) wrap(w io.Writer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.closed {
			return len(p), nil
		}
		return w.Write(p)
	})
}

func (g *writeGate) shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// pgidFilter passes stderr through, minus the wrapper's first line carrying
// the process group id.
type pgidFilter struct {
	w      io.Writer
	prefix string
	pgid   chan int
	buf    []byte
	done   bool
}

func (f *pgidFilter) Write(p []byte) (int, error) {
	if f.done {
		return f.w.Write(p)
	}
	n := len(p)
	f.buf = append(f.buf, p...)
	i := bytes.IndexByte(f.buf, '\n')
	if i < 0 && len(f.buf) < 256 {
		return n, nil
	}
	f.done = true
	rest := f.buf
	if i >= 0 {
		if id, ok := strings.CutPrefix(string(f.buf[:i]), f.prefix); ok {
			if pgid, err := strconv.Atoi(id); err == nil {
				f.pgid <- pgid
			}
			rest = f.buf[i+1:]
		}
	}
	f.buf = nil
	if len(rest) > 0 {
		if _, err := f.w.Write(rest); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (c *Client) exitCode(err error) (int, error) {
	if err == nil {
		return 0, nil
	}
	var ee *ssh.ExitError
	if errors.As(err, &ee) {
		if ee.Signal() != "" {
			return 128 + signalNumber(ee.Signal()), nil
		}
		return ee.ExitStatus(), nil
	}
	var em *ssh.ExitMissingError
	if errors.As(err, &em) {
		return -1, fmt.Errorf("remote command on %s ended without an exit status (connection lost?): %w: %w", c.addr, ErrUnreachable, err)
	}
	return -1, fmt.Errorf("remote command on %s: %w: %w", c.addr, ErrUnreachable, err)
}

func signalNumber(sig string) int {
	switch sig {
	case "HUP":
		return 1
	case "INT":
		return 2
	case "QUIT":
		return 3
	case "KILL":
		return 9
	case "PIPE":
		return 13
	case "TERM":
		return 15
	}
	return 0
}

// Output runs cmd and returns its trimmed stdout; a non-zero exit becomes an
// error carrying stderr.
func (c *Client) Output(ctx context.Context, cmd string) (string, error) {
	var out, errb bytes.Buffer
	code, err := c.Run(ctx, cmd, &out, &errb)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", fmt.Errorf("remote command %q on %s exited with %d: %s", cmd, c.addr, code, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// MkTemp creates a unique directory with mode 0700 on the remote host with
// mktemp -d and returns its absolute path. prefix is the name prefix; if it
// contains a slash, its directory part is the parent (created 0700 if
// missing, "~/" meaning the login's home), otherwise the parent is $TMPDIR
// or /tmp.
func (c *Client) MkTemp(ctx context.Context, prefix string) (string, error) {
	parent, base := path.Split(prefix)
	if base == "" || strings.ContainsAny(base, "/\x00\n") {
		return "", fmt.Errorf("invalid temporary directory prefix %q", prefix)
	}
	var cmd string
	if parent == "" {
		cmd = `mktemp -d "${TMPDIR:-/tmp}"/` + ShellQuote(base+"XXXXXXXX")
	} else {
		parentDir := strings.TrimSuffix(parent, "/")
		if parentDir == "" {
			parentDir = "/"
		}
		q := shellPath(parentDir)
		cmd = "umask 077 && mkdir -p " + q + " && mktemp -d " + q + "/" + ShellQuote(base+"XXXXXXXX")
	}
	dir, err := c.Output(ctx, cmd)
	if err != nil {
		return "", fmt.Errorf("creating staging directory %s on %s: %w", prefix, c.addr, err)
	}
	if !path.IsAbs(dir) || strings.Contains(dir, "\n") {
		return "", fmt.Errorf("creating staging directory on %s: mktemp printed %q", c.addr, dir)
	}
	return dir, nil
}

// RemoveAll removes dir and everything below it on the remote host. It
// refuses relative, unclean and top-level paths. A missing dir is no error.
func (c *Client) RemoveAll(ctx context.Context, dir string) error {
	if err := validRemoveTarget(dir); err != nil {
		return err
	}
	if _, err := c.Output(ctx, "rm -rf -- "+ShellQuote(dir)); err != nil {
		return fmt.Errorf("removing %s on %s: %w", dir, c.addr, err)
	}
	return nil
}
