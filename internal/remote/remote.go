// Package remote is heatsible's SSH client for the Ansible host: it dials with
// verified host keys, uploads run bundles over SFTP and runs commands with
// their output streamed live.
//
// Nothing here allocates a PTY: a PTY merges stderr into stdout, echoes stdin
// (which is how secrets reach this package) and invites interactive prompts.
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/heatsible/heatsible/internal/fail"
)

// ErrUnreachable is wrapped by every error that means the host could not be
// reached or would not let us in: DNS, TCP, timeouts, SSH handshake,
// authentication and lost connections. Its exit code is Unreachable.
var ErrUnreachable = fail.Sentinel(fail.Unreachable, "ssh host unreachable")

// DefaultTimeout bounds the TCP connect plus the SSH handshake when
// Config.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// DefaultKeepAlive is how often an idle connection is probed when
// Config.KeepAlive is zero; a cut connection whose FIN or RST never arrives
// is detected after three missed probes (30 to 40 s) instead of hanging a
// long ansible-playbook run. (It was 30 s: up to two minutes.)
const DefaultKeepAlive = 10 * time.Second

// Config says where and how to connect.
type Config struct {
	// Address is "host" or "host:port"; IPv6 literals may be bare ("fd00::5")
	// or bracketed ("[fd00::5]:2222"). The port defaults to 22.
	Address string
	// User is the login name.
	User string
	// Password, when set, is offered for the "password" and
	// "keyboard-interactive" methods (after agent and key files).
	Password string
	// KeyFiles are unencrypted private key files (OpenSSH or PEM). Encrypted
	// keys belong in an ssh-agent.
	KeyFiles []string
	// UseAgent offers the keys of the agent at $SSH_AUTH_SOCK first.
	UseAgent bool
	// KnownHostsFile verifies the host key; it defaults to
	// ~/.ssh/known_hosts. A missing file is treated as empty, so the error
	// says which key to add.
	KnownHostsFile string
	// InsecureIgnoreHostKey accepts any host key. It exists for lab set-ups
	// and logs a warning at every dial.
	InsecureIgnoreHostKey bool
	// Timeout bounds connecting plus the handshake (DefaultTimeout if zero).
	Timeout time.Duration
	// KeepAlive is the probe interval of an established connection
	// (DefaultKeepAlive if zero, disabled if negative).
	KeepAlive time.Duration
	// Logger receives warnings and debug messages (slog.Default() if nil).
	Logger *slog.Logger
}

// Client is an authenticated SSH connection. It is safe for concurrent use.
type Client struct {
	conn   *ssh.Client
	addr   string
	user   string
	log    *slog.Logger
	agentC io.Closer

	closeOnce sync.Once
	stop      chan struct{}
}

// SplitAddress splits Address into host and port, accepting bare IPv6
// literals and defaulting the port to 22.
func SplitAddress(address string) (host string, port int, err error) {
	address = strings.TrimSpace(address)
	if address == "" {
		return "", 0, errors.New("empty ssh address")
	}
	if h, p, err := net.SplitHostPort(address); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", 0, fmt.Errorf("invalid port %q in ssh address %q", p, address)
		}
		if h == "" {
			return "", 0, fmt.Errorf("no host in ssh address %q", address)
		}
		return h, n, nil
	}
	host = strings.TrimSuffix(strings.TrimPrefix(address, "["), "]")
	if strings.Count(host, ":") == 1 {
		// "host:" or "host:abc": SplitHostPort rejected the port.
		return "", 0, fmt.Errorf("invalid ssh address %q: want host or host:port", address)
	}
	if strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return "", 0, fmt.Errorf("invalid ssh address %q: want host, host:port or [ipv6]:port", address)
	}
	return host, 22, nil
}

// Dial connects, verifies the host key and authenticates.
//
// Errors wrap ErrUnreachable (network, timeout, handshake, authentication)
// or a *HostKeyError (unknown, changed or revoked host key); anything else
// is a configuration error (unreadable key file, no auth method). Every one
// has exit code Unreachable: the host could not be reached, or not as
// configured.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	c, err := dial(ctx, cfg)
	if err != nil {
		return nil, fail.With(fail.Unreachable, err)
	}
	return c, nil
}

func dial(ctx context.Context, cfg Config) (*Client, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	host, port, err := SplitAddress(cfg.Address)
	if err != nil {
		return nil, err
	}
	hostport := net.JoinHostPort(host, strconv.Itoa(port))
	if cfg.User == "" {
		return nil, fmt.Errorf("connecting to %s: no ssh user given", hostport)
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}

	auth, agentConn, err := authMethods(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s@%s: %w", cfg.User, hostport, err)
	}
	closeAgent := func() {
		if agentConn != nil {
			_ = agentConn.Close()
		}
	}

	var hk *hostKeyChecker
	if cfg.InsecureIgnoreHostKey {
		log.Warn("SSH HOST KEY CHECKING IS DISABLED: the identity of the host is NOT verified and a man-in-the-middle can read every password and secret sent to it; remove the insecure option and add the host to known_hosts",
			"host", hostport, "user", cfg.User)
	} else {
		hk, err = newHostKeyChecker(cfg.KnownHostsFile, host, port)
		if err != nil {
			closeAgent()
			return nil, err
		}
	}

	dialCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := net.Dialer{KeepAlive: 15 * time.Second}
	tcp, err := d.DialContext(dialCtx, "tcp", hostport)
	if err != nil {
		closeAgent()
		return nil, fmt.Errorf("connecting to %s: %w: %w", hostport, ErrUnreachable, err)
	}

	sshCfg := &ssh.ClientConfig{
		User:    cfg.User,
		Auth:    auth,
		Timeout: timeout,
	}
	if hk != nil {
		sshCfg.HostKeyCallback = hk.callback
		sshCfg.HostKeyAlgorithms = hk.algorithms(tcp.RemoteAddr())
	} else {
		sshCfg.HostKeyCallback = ssh.InsecureIgnoreHostKey() //nolint:gosec // explicit, logged opt-out
	}

	// The handshake has no context: bound it with a deadline and abort it
	// by closing the socket when ctx ends.
	deadline, _ := dialCtx.Deadline()
	_ = tcp.SetDeadline(deadline)
	handshakeDone := make(chan struct{})
	go func() {
		select {
		case <-dialCtx.Done():
			_ = tcp.Close()
		case <-handshakeDone:
		}
	}()
	c, chans, reqs, err := ssh.NewClientConn(tcp, hostport, sshCfg)
	close(handshakeDone)
	if err != nil {
		_ = tcp.Close()
		closeAgent()
		if hk != nil && hk.err != nil {
			return nil, hk.err
		}
		if ctxErr := dialCtx.Err(); ctxErr != nil {
			err = fmt.Errorf("%w (%w)", err, ctxErr)
		}
		if strings.Contains(err.Error(), "unable to authenticate") {
			return nil, fmt.Errorf("authenticating as %s on %s (check the user name, password or key): %w: %w", cfg.User, hostport, ErrUnreachable, err)
		}
		return nil, fmt.Errorf("ssh handshake with %s: %w: %w", hostport, ErrUnreachable, err)
	}
	_ = tcp.SetDeadline(time.Time{})

	cl := &Client{
		conn:   ssh.NewClient(c, chans, reqs),
		addr:   hostport,
		user:   cfg.User,
		log:    log,
		agentC: agentConn,
		stop:   make(chan struct{}),
	}
	ka := cfg.KeepAlive
	if ka == 0 {
		ka = DefaultKeepAlive
	}
	if ka > 0 {
		go cl.keepAlive(ka)
	}
	log.Debug("ssh connected", "host", hostport, "user", cfg.User, "server_version", string(c.ServerVersion()))
	return cl, nil
}

// authMethods returns agent and key signers as ONE publickey method (the
// client would skip a second "publickey" method after the first failed),
// then password and keyboard-interactive.
func authMethods(cfg Config) ([]ssh.AuthMethod, io.Closer, error) {
	var (
		signers   []ssh.Signer
		agentConn net.Conn
		agentCl   agent.ExtendedAgent
	)
	if cfg.UseAgent {
		sock := os.Getenv("SSH_AUTH_SOCK")
		if sock == "" {
			return nil, nil, errors.New("ssh agent requested but SSH_AUTH_SOCK is not set")
		}
		var err error
		agentConn, err = net.Dial("unix", sock)
		if err != nil {
			return nil, nil, fmt.Errorf("connecting to ssh agent at %s: %w", sock, err)
		}
		agentCl = agent.NewClient(agentConn)
	}
	for _, f := range cfg.KeyFiles {
		s, err := loadSigner(f)
		if err != nil {
			if agentConn != nil {
				_ = agentConn.Close()
			}
			return nil, nil, err
		}
		signers = append(signers, s)
	}

	var methods []ssh.AuthMethod
	if agentCl != nil || len(signers) > 0 {
		methods = append(methods, ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
			var all []ssh.Signer
			if agentCl != nil {
				as, err := agentCl.Signers()
				if err != nil {
					return nil, fmt.Errorf("listing ssh agent keys: %w", err)
				}
				all = append(all, as...)
			}
			return append(all, signers...), nil
		}))
	}
	if cfg.Password != "" {
		pw := cfg.Password
		methods = append(methods,
			ssh.Password(pw),
			ssh.KeyboardInteractive(func(_, _ string, questions []string, _ []bool) ([]string, error) {
				// Every prompt of a password-only PAM stack is the
				// password; anything else fails authentication, which is
				// what we want.
				answers := make([]string, len(questions))
				for i := range answers {
					answers[i] = pw
				}
				return answers, nil
			}),
		)
	}
	if len(methods) == 0 {
		if agentConn != nil {
			_ = agentConn.Close()
		}
		return nil, nil, errors.New("no ssh authentication method: give a password, a key file or use the ssh agent")
	}
	var closer io.Closer
	if agentConn != nil {
		closer = agentConn
	}
	return methods, closer, nil
}

func loadSigner(path string) (ssh.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading ssh key: %w", err)
	}
	s, err := ssh.ParsePrivateKey(b)
	if err != nil {
		var pm *ssh.PassphraseMissingError
		if errors.As(err, &pm) {
			return nil, fmt.Errorf("ssh key %s is passphrase-protected: load it into ssh-agent and use agent authentication", path)
		}
		return nil, fmt.Errorf("parsing ssh key %s: %w", path, err)
	}
	return s, nil
}

// keepAlive probes the server; after three unanswered probes it closes the
// connection so blocked sessions return instead of hanging.
func (c *Client) keepAlive(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		reply := make(chan error, 1)
		go func() {
			_, _, err := c.conn.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		select {
		case <-c.stop:
			return
		case err := <-reply:
			if err != nil {
				return // connection already gone; Wait()ers see it
			}
		case <-time.After(3 * every):
			c.log.Warn("ssh connection stopped answering keepalives; closing it", "host", c.addr)
			_ = c.conn.Close()
			return
		}
	}
}

// Address returns the "host:port" the client is connected to.
func (c *Client) Address() string { return c.addr }

// User returns the login name.
func (c *Client) User() string { return c.user }

// SSH returns the underlying connection for callers that need more than
// this package offers.
func (c *Client) SSH() *ssh.Client { return c.conn }

// Close closes the connection; sessions still running are cut.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.stop)
		err = c.conn.Close()
		if c.agentC != nil {
			_ = c.agentC.Close()
		}
	})
	return err
}

// sessionErr turns a failure to open a channel into an ErrUnreachable.
func (c *Client) sessionErr(what string, err error) error {
	return fmt.Errorf("%s on %s: %w: %w", what, c.addr, ErrUnreachable, err)
}

// sftpClient opens a fresh SFTP session; uploads are rare enough that
// caching one is not worth the lifetime questions.
func (c *Client) sftpClient() (*sftp.Client, error) {
	s, err := sftp.NewClient(c.conn)
	if err != nil {
		return nil, c.sessionErr("starting sftp", err)
	}
	return s, nil
}

// ShellQuote quotes s for a POSIX shell so that it is passed as one word.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellPath quotes a remote path, expanding a leading "~/" to "$HOME/"
// (quoting would otherwise stop the shell from expanding it).
func shellPath(p string) string {
	if p == "~" {
		return `"$HOME"`
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return `"$HOME"/` + ShellQuote(rest)
	}
	return ShellQuote(p)
}

// validRemoveTarget refuses paths whose removal could only be a bug.
func validRemoveTarget(dir string) error {
	clean := filepath.Clean(dir)
	if !filepath.IsAbs(clean) || clean != strings.TrimSuffix(dir, "/") {
		return fmt.Errorf("refusing to remove %q: want a clean absolute path", dir)
	}
	if strings.Count(clean, "/") < 2 {
		return fmt.Errorf("refusing to remove top-level directory %q", dir)
	}
	return nil
}
