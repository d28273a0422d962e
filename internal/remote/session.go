package remote

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/heatsible/heatsible/internal/fail"
)

// ErrSessionEnded is wrapped by Session.ReadLine and Session.Send once the
// remote command has ended: it ended by itself, or the connection did. Its
// exit code is Unreachable.
var ErrSessionEnded = fail.Sentinel(fail.Unreachable, "remote session ended")

// Session is a remote command that runs until this side ends it, talked to
// in lines: its stdin and stdout. It is how heatsible holds something on the
// remote host (an flock) for exactly as long as it wants: the command holds
// it while it waits on its stdin, and when the connection drops, sshd ends
// the session, the command sees its stdin end, and the kernel frees what it
// held.
type Session struct {
	c     *Client
	sess  *ssh.Session
	stdin io.WriteCloser
	lines chan string
	done  chan struct{}

	code   int
	err    error
	stderr strings.Builder // first 4 KiB
	mu     sync.Mutex      // stderr
}

// Start runs cmd under /bin/sh on the remote host and returns at once.
// Nothing of the command is ever signalled or killed by this side: it ends
// when it decides to, normally on a line or on the end of its stdin.
func (c *Client) Start(ctx context.Context, cmd string) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("starting remote command: %w", err)
	}
	sess, err := c.conn.NewSession()
	if err != nil {
		return nil, c.sessionErr("opening ssh session", err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		_ = sess.Close()
		return nil, c.sessionErr("opening ssh session", err)
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		_ = sess.Close()
		return nil, c.sessionErr("opening ssh session", err)
	}
	s := &Session{c: c, sess: sess, stdin: stdin, lines: make(chan string, 16), done: make(chan struct{})}
	sess.Stderr = stderrSink{s}
	if err := sess.Start("exec /bin/sh -c " + ShellQuote(cmd)); err != nil {
		_ = sess.Close()
		return nil, c.sessionErr("starting remote command", err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(s.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 4096), 64<<10)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		werr := sess.Wait()
		<-read
		s.code, s.err = c.exitCode(werr)
		_ = sess.Close()
		close(s.done)
	}()
	return s, nil
}

type stderrSink struct{ s *Session }

func (w stderrSink) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if room := 4096 - w.s.stderr.Len(); room > 0 {
		w.s.stderr.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// ReadLine returns the command's next stdout line. Once the command has
// ended and every line was read, it returns an error wrapping
// ErrSessionEnded that says how it ended.
func (s *Session) ReadLine(ctx context.Context) (string, error) {
	select {
	case l, ok := <-s.lines:
		if ok {
			return l, nil
		}
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return "", s.endErr()
}

func (s *Session) endErr() error {
	if s.err != nil {
		return fmt.Errorf("%w: %w", ErrSessionEnded, s.err)
	}
	msg := fmt.Sprintf("exit %d", s.code)
	if e := strings.TrimSpace(s.Stderr()); e != "" {
		msg += ": " + e
	}
	return fmt.Errorf("%w (%s)", ErrSessionEnded, msg)
}

// Send writes line and a newline to the command's stdin.
func (s *Session) Send(line string) error {
	select {
	case <-s.done:
		return s.endErr()
	default:
	}
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		return fmt.Errorf("%w: writing to it: %w", ErrSessionEnded, err)
	}
	return nil
}

// Done is closed when the command has ended, however it ended.
func (s *Session) Done() <-chan struct{} { return s.done }

// Stderr returns the start of what the command wrote to stderr.
func (s *Session) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// Close ends the command's stdin and waits, until ctx ends, for the
// command to end. It returns the command's exit code; err wraps
// ErrUnreachable when the connection went first.
func (s *Session) Close(ctx context.Context) (int, error) {
	_ = s.stdin.Close()
	select {
	case <-s.done:
		return s.code, s.err
	case <-ctx.Done():
		_ = s.sess.Close()
		return -1, fmt.Errorf("waiting for a remote command on %s to end: %w", s.c.addr, ctx.Err())
	}
}

// Wait waits, until ctx ends, for the command to end by itself, and returns
// its exit code as Close does.
func (s *Session) Wait(ctx context.Context) (int, error) {
	select {
	case <-s.done:
		return s.code, s.err
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}
