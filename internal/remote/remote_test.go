package remote_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
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
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/remote"
	"github.com/heatsible/heatsible/internal/remote/remotetest"
)

func dial(t *testing.T, srv *remotetest.Server) *remote.Client {
	t.Helper()
	c, err := remote.Dial(context.Background(), remote.Config{
		Address:        srv.Addr,
		User:           "root",
		KeyFiles:       []string{srv.RootKeyFile},
		KnownHostsFile: srv.KnownHostsFile,
		Timeout:        10 * time.Second,
	})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// serveAgent serves an in-memory keyring holding key on a unix socket and
// points SSH_AUTH_SOCK at it.
func serveAgent(t *testing.T, key any) {
	t.Helper()
	kr := agent.NewKeyring()
	if err := kr.Add(agent.AddedKey{PrivateKey: key}); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "hsagent")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(); _ = os.RemoveAll(dir) })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() { _ = agent.ServeAgent(kr, conn); _ = conn.Close() }()
		}
	}()
	t.Setenv("SSH_AUTH_SOCK", sock)
}

func TestDialAuth(t *testing.T) {
	srv := remotetest.Start(t)
	const password = "S3cret pass'word"
	user := srv.AddUser(t, password)

	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	tests := []struct {
		name      string
		cfg       remote.Config
		agentKey  any
		wantUser  string
		wantErrIs error // nil: success expected
		wantErr   string
	}{
		{name: "key file", cfg: remote.Config{User: "root", KeyFiles: []string{srv.RootKeyFile}}, wantUser: "root"},
		{name: "agent", cfg: remote.Config{User: "root", UseAgent: true}, agentKey: srv.RootKey, wantUser: "root"},
		{name: "agent key refused then key file", cfg: remote.Config{User: "root", UseAgent: true, KeyFiles: []string{srv.RootKeyFile}}, agentKey: otherKey, wantUser: "root"},
		{name: "password", cfg: remote.Config{User: user, Password: password}, wantUser: user},
		{name: "wrong password", cfg: remote.Config{User: user, Password: "nope"}, wantErrIs: remote.ErrUnreachable, wantErr: "authenticating as " + user},
		{name: "no auth method", cfg: remote.Config{User: "root"}, wantErr: "no ssh authentication method"},
		{name: "agent without socket", cfg: remote.Config{User: "root", UseAgent: true}, wantErr: "SSH_AUTH_SOCK is not set"},
		{name: "missing key file", cfg: remote.Config{User: "root", KeyFiles: []string{"/nonexistent/key"}}, wantErr: "reading ssh key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.agentKey != nil {
				serveAgent(t, tt.agentKey)
			} else {
				t.Setenv("SSH_AUTH_SOCK", "")
			}
			cfg := tt.cfg
			cfg.Address = srv.Addr
			cfg.KnownHostsFile = srv.KnownHostsFile
			cfg.Timeout = 10 * time.Second
			c, err := remote.Dial(context.Background(), cfg)
			if tt.wantErr != "" {
				if err == nil {
					c.Close()
					t.Fatalf("Dial succeeded, want error %q", tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q does not contain %q", err, tt.wantErr)
				}
				if tt.wantErrIs != nil && !errors.Is(err, tt.wantErrIs) {
					t.Errorf("error %v is not %v", err, tt.wantErrIs)
				}
				if tt.wantErrIs == nil && errors.Is(err, remote.ErrUnreachable) {
					t.Errorf("configuration error %v must not be ErrUnreachable", err)
				}
				if code := fail.Code(err); code != fail.Unreachable {
					t.Errorf("exit code %d, want %d: every Dial error is the host not reached as configured", code, fail.Unreachable)
				}
				return
			}
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer c.Close()
			got, err := c.Output(context.Background(), "id -un")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.wantUser {
				t.Errorf("logged in as %q, want %q", got, tt.wantUser)
			}
		})
	}
}

func TestDialUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now

	// A listener that accepts but never speaks SSH: the handshake must time out.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()

	for _, tt := range []struct{ name, addr string }{
		{"connection refused", addr},
		{"handshake timeout", silent.Addr().String()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := remote.Dial(context.Background(), remote.Config{
				Address: tt.addr, User: "root", Password: "x",
				KnownHostsFile: filepath.Join(t.TempDir(), "known_hosts"),
				Timeout:        time.Second,
			})
			if !errors.Is(err, remote.ErrUnreachable) {
				t.Fatalf("err = %v, want ErrUnreachable", err)
			}
			if code := fail.Code(err); code != fail.Unreachable {
				t.Errorf("exit code %d, want %d", code, fail.Unreachable)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Dial took %v with a 1s timeout", d)
			}
		})
	}
}

func TestHostKeyErrors(t *testing.T) {
	t.Parallel()
	srv := remotetest.Start(t)
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	otherSigner, _ := ssh.NewSignerFromKey(otherPriv)
	edFP := ssh.FingerprintSHA256(srv.HostKeys[0])
	port := strconv.Itoa(srv.Port)

	tests := []struct {
		name        string
		knownHosts  *string // nil: file missing
		wantChanged bool
		wantOK      bool
		wantMsg     []string
	}{
		{
			name:       "unknown host",
			knownHosts: ptr("# empty\n"),
			wantMsg:    []string{"is not in", "ssh-keyscan -p " + port + " -t ed25519 127.0.0.1 >>", "after verifying the fingerprint " + edFP},
		},
		{
			name:    "missing known_hosts file",
			wantMsg: []string{"is not in", "ssh-keyscan -p " + port},
		},
		{
			name:        "changed key",
			knownHosts:  ptr("# comment\n" + srv.KnownHostsLine(otherSigner.PublicKey()) + "\n"),
			wantChanged: true,
			wantMsg:     []string{"the host key of " + srv.Addr + " changed: possible man-in-the-middle or a rebuilt VM", "verify " + edFP, "fix line 2 of "},
		},
		{
			// The same stale key under three lines (name, address,
			// [host]:port in real files): every line is named, the key once.
			name: "changed key on several lines",
			knownHosts: ptr("# comment\n" + srv.KnownHostsLine(otherSigner.PublicKey()) + "\n" +
				srv.KnownHostsLine(otherSigner.PublicKey()) + "\n" + srv.KnownHostsLine(otherSigner.PublicKey()) + "\n"),
			wantChanged: true,
			wantMsg:     []string{"changed: possible man-in-the-middle", "fix lines 2, 3 and 4 of ", "(known: ssh-ed25519 " + ssh.FingerprintSHA256(otherSigner.PublicKey()) + ")"},
		},
		{
			// The client would prefer the server's RSA key; known_hosts
			// only has ed25519, which must be negotiated instead of
			// reporting a changed key.
			name:       "known ed25519 key among several",
			knownHosts: ptr(srv.KnownHostsLine(srv.HostKeys[0]) + "\n"),
			wantOK:     true,
		},
		{
			name:       "known rsa key only",
			knownHosts: ptr(srv.KnownHostsLine(srv.HostKeys[1]) + "\n"),
			wantOK:     true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kh := filepath.Join(t.TempDir(), "known_hosts")
			if tt.knownHosts != nil {
				if err := os.WriteFile(kh, []byte(*tt.knownHosts), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c, err := remote.Dial(context.Background(), remote.Config{
				Address: srv.Addr, User: "root", KeyFiles: []string{srv.RootKeyFile},
				KnownHostsFile: kh, Timeout: 10 * time.Second,
			})
			if tt.wantOK {
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				c.Close()
				return
			}
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded with an untrusted host key")
			}
			var hke *remote.HostKeyError
			if !errors.As(err, &hke) {
				t.Fatalf("err = %T %v, want *HostKeyError", err, err)
			}
			if errors.Is(err, remote.ErrUnreachable) {
				t.Errorf("host key error must not be ErrUnreachable")
			}
			if code := fail.Code(err); code != fail.Unreachable {
				t.Errorf("exit code %d, want %d: a host key refused is a host not reached", code, fail.Unreachable)
			}
			if hke.Changed != tt.wantChanged {
				t.Errorf("Changed = %v, want %v", hke.Changed, tt.wantChanged)
			}
			msg := err.Error()
			for _, want := range append(tt.wantMsg, kh) {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q\ndoes not contain %q", msg, want)
				}
			}
		})
	}
}

func TestInsecureIgnoreHostKeyWarnsAtEveryDial(t *testing.T) {
	t.Parallel()
	srv := remotetest.Start(t)
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	for i := 0; i < 2; i++ {
		c, err := remote.Dial(context.Background(), remote.Config{
			Address: srv.Addr, User: "root", KeyFiles: []string{srv.RootKeyFile},
			KnownHostsFile:        filepath.Join(t.TempDir(), "empty"),
			InsecureIgnoreHostKey: true, Logger: log,
		})
		if err != nil {
			t.Fatalf("Dial %d: %v", i, err)
		}
		c.Close()
	}
	if n := strings.Count(buf.String(), "level=WARN msg=\"SSH HOST KEY CHECKING IS DISABLED"); n != 2 {
		t.Errorf("got %d warnings for 2 dials:\n%s", n, buf.String())
	}
}

func TestUpload(t *testing.T) {
	t.Parallel()
	srv := remotetest.Start(t)
	c := dial(t, srv)
	ctx := context.Background()

	local := t.TempDir()
	write := func(rel, content string, mode os.FileMode) {
		p := filepath.Join(local, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write("secrets.yml", "ansible_password: x\n", 0o600)
	write("playbook.yml", "- hosts: all\n", 0o644)
	write("roles/r/tasks/main.yml", "[]\n", 0o640)
	write("bin/run.sh", "#!/bin/sh\n", 0o755)
	if err := os.Chmod(filepath.Join(local, "roles"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../playbook.yml", filepath.Join(local, "bin", "pb.yml")); err != nil {
		t.Fatal(err)
	}

	dst, err := c.MkTemp(ctx, "heatsible-test-upload-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.RemoveAll(context.Background(), dst) })
	if err := os.Chmod(dst, 0o755); err != nil { // Upload must narrow it again
		t.Fatal(err)
	}
	if err := c.Upload(ctx, local, dst); err != nil {
		t.Fatalf("Upload: %v", err)
	}

	// The "remote" is this machine: check the result directly.
	for rel, want := range map[string]os.FileMode{
		".":                      os.ModeDir | 0o700,
		"secrets.yml":            0o600,
		"playbook.yml":           0o644,
		"roles":                  os.ModeDir | 0o750,
		"roles/r/tasks/main.yml": 0o640,
		"bin/run.sh":             0o755,
	} {
		st, err := os.Stat(filepath.Join(dst, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if st.Mode() != want {
			t.Errorf("%s: mode %v, want %v", rel, st.Mode(), want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dst, "secrets.yml")); err != nil || string(b) != "ansible_password: x\n" {
		t.Errorf("secrets.yml content %q, %v", b, err)
	}
	if target, err := os.Readlink(filepath.Join(dst, "bin", "pb.yml")); err != nil || target != "../playbook.yml" {
		t.Errorf("symlink target %q, %v", target, err)
	}

	t.Run("symlink escaping the directory is rejected", func(t *testing.T) {
		if err := os.Symlink("/etc/passwd", filepath.Join(local, "roles", "evil")); err != nil {
			t.Fatal(err)
		}
		dst2, err := c.MkTemp(ctx, "heatsible-test-upload-")
		if err != nil {
			t.Fatal(err)
		}
		defer c.RemoveAll(context.Background(), dst2)
		err = c.Upload(ctx, local, dst2)
		if err == nil || !strings.Contains(err.Error(), "points outside the upload directory") {
			t.Fatalf("Upload = %v, want symlink rejection", err)
		}
		if entries, _ := os.ReadDir(dst2); len(entries) != 0 {
			t.Errorf("rejected upload still wrote %d entries", len(entries))
		}
	})
}

func TestRunExitCodesAndOutput(t *testing.T) {
	t.Parallel()
	srv := remotetest.Start(t)
	c := dial(t, srv)
	tests := []struct {
		name       string
		cmd        string
		stdin      string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "success", cmd: "echo hello", wantStdout: "hello\n"},
		{name: "exit code", cmd: "echo out; echo err >&2; exit 3", wantCode: 3, wantStdout: "out\n", wantStderr: "err\n"},
		{name: "ansible host failed code", cmd: "exit 2", wantCode: 2},
		{name: "command not found", cmd: "no-such-command-heatsible", wantCode: 127},
		{name: "stdin passes secrets", cmd: "read -r pw; echo \"got ${#pw} chars\"", stdin: "s3cret\n", wantStdout: "got 6 chars\n"},
		{name: "quotes survive", cmd: `printf '%s\n' "a'b" 'c"d'`, wantStdout: "a'b\nc\"d\n"},
		{name: "no tty", cmd: "if [ -t 0 ] || [ -t 1 ]; then echo tty; else echo notty; fi", wantStdout: "notty\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			var stdin io.Reader
			if tt.stdin != "" {
				stdin = strings.NewReader(tt.stdin)
			}
			code, err := c.RunStdin(context.Background(), tt.cmd, stdin, &out, &errb)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.wantCode, errb.String())
			}
			if out.String() != tt.wantStdout {
				t.Errorf("stdout %q, want %q", out.String(), tt.wantStdout)
			}
			if tt.wantStderr != "" && errb.String() != tt.wantStderr {
				t.Errorf("stderr %q, want %q", errb.String(), tt.wantStderr)
			}
		})
	}
}

func TestRunStreamsLive(t *testing.T) {
	t.Parallel()
	srv := remotetest.Start(t)
	c := dial(t, srv)
	first := make(chan time.Time, 1)
	w := writerFunc(func(p []byte) (int, error) {
		select {
		case first <- time.Now():
		default:
		}
		return len(p), nil
	})
	start := time.Now()
	code, err := c.Run(context.Background(), "echo first; sleep 2; echo second", w, nil)
	end := time.Now()
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	got := <-first
	if end.Sub(got) < time.Second {
		t.Errorf("first line arrived %v after start, %v before the end: output was buffered", got.Sub(start), end.Sub(got))
	}
}

func TestRunCancel(t *testing.T) {
	t.Parallel()
	srv := remotetest.Start(t)
	c := dial(t, srv)
	for _, tt := range []struct {
		name string
		// waitRunning cancels once the command runs; otherwise at once,
		// most likely before sshd has started it.
		waitRunning bool
	}{
		{"while running", true},
		{"before start", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pid")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cancelled := make(chan time.Time, 1)
			go func() {
				for tt.waitRunning {
					if _, err := os.Stat(pidFile); err == nil {
						time.Sleep(200 * time.Millisecond)
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				cancelled <- time.Now()
				cancel()
			}()
			code, err := c.Run(ctx, fmt.Sprintf("sleep 60 & echo $! > %s.tmp && mv %s.tmp %s; wait", pidFile, pidFile, pidFile), nil, nil)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %d, %v; want context.Canceled", code, err)
			}
			// Run waits at most 2 x cancelGrace (10 s) for the stop, then
			// returns and leaves it to the background; on a loaded machine
			// it takes all of that (seen: 10.0 s). What must not happen is
			// Run waiting for the command (sleep 60).
			cancelledAt := <-cancelled
			if d := time.Since(cancelledAt); d > 15*time.Second {
				t.Errorf("cancel took %v, want Run back within runStopWait (10 s)", d)
			}
			b, err := os.ReadFile(pidFile)
			if os.IsNotExist(err) && !tt.waitRunning {
				return // never started
			}
			if err != nil {
				t.Fatal(err)
			}
			pid := strings.TrimSpace(string(b))
			// SIGTERM, then SIGKILL cancelGrace (5 s) later, each through a
			// session of its own: gone well before the sleep's 60 s.
			deadline := cancelledAt.Add(30 * time.Second)
			for {
				if _, err := os.Stat("/proc/" + pid); os.IsNotExist(err) {
					break
				}
				if st, _ := os.ReadFile("/proc/" + pid + "/stat"); strings.Contains(string(st), ") Z ") {
					break // zombie: dead, waiting to be reaped
				}
				if time.Now().After(deadline) {
					t.Fatalf("remote sleep (pid %s) still running after cancel", pid)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	t.Cleanup(func() { // after the parallel subtests
		if _, err := c.Output(context.Background(), "true"); err != nil {
			t.Errorf("connection unusable after cancel: %v", err)
		}
	})
}

// TestRunCancelLateStart: sshd starts the command only 7 s after the cancel
// (the test's sshd delays it, and only it, with a ForceCommand)
// (a loaded host; CI saw it), longer than the cancel grace. The command is
// still stopped once its shell reports its process group, and Run neither
// hangs nor writes to the caller's writers after it returned. Before the
// fix Run gave up on the process group after 5 s and returned after 15 s
// with the remote sleep running.
func TestRunCancelLateStart(t *testing.T) {
	t.Parallel()
	srv := remotetest.StartConfig(t, `ForceCommand case "$SSH_ORIGINAL_COMMAND" in *"sleep 60"*) sleep 7;; esac; exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"`)
	c := dial(t, srv)
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	returned := false
	late := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		if returned {
			t.Errorf("written to after Run returned: %q", p)
		}
		return len(p), nil
	})
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	start := time.Now()
	code, err := c.Run(ctx, fmt.Sprintf("sleep 60 & echo $! > %s.tmp && mv %s.tmp %s; echo started >&2; wait", pidFile, pidFile, pidFile), late, late)
	mu.Lock()
	returned = true
	mu.Unlock()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %d, %v; want context.Canceled", code, err)
	}
	if d := time.Since(start); d > 12*time.Second { // runStopWait (10 s) and some
		t.Errorf("Run took %v after a cancel", d)
	}
	// The command may start after Run returned: wait for it, then for its
	// end.
	deadline := time.Now().Add(20 * time.Second)
	var pid string
	for pid == "" {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid = strings.TrimSpace(string(b))
		} else if time.Now().After(deadline) {
			t.Fatalf("the command never started (no %s); the ForceCommand stand-in for a slow start is broken", pidFile)
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	for {
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("remote sleep (pid %s) still running %v after the cancel", pid, time.Since(start))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestMkTempRemoveAll(t *testing.T) {
	t.Parallel()
	srv := remotetest.Start(t)
	c := dial(t, srv)
	ctx := context.Background()
	home, _ := os.UserHomeDir()
	base := fmt.Sprintf(".heatsible-test-%d", time.Now().UnixNano())
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Join(home, base)) })

	for _, tt := range []struct {
		name, prefix, wantParent string
	}{
		{"tmp", "heatsible-c1-heal-", os.TempDir()},
		{"home", "~/" + base + "/runs/heatsible-c1-heal-", filepath.Join(home, base, "runs")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := c.MkTemp(ctx, tt.prefix)
			if err != nil {
				t.Fatal(err)
			}
			b, err := c.MkTemp(ctx, tt.prefix)
			if err != nil {
				t.Fatal(err)
			}
			if a == b {
				t.Errorf("MkTemp returned %s twice", a)
			}
			if filepath.Dir(a) != tt.wantParent || !strings.HasPrefix(filepath.Base(a), filepath.Base(tt.prefix)) {
				t.Errorf("MkTemp = %s, want %s/%s*", a, tt.wantParent, filepath.Base(tt.prefix))
			}
			st, err := os.Stat(a)
			if err != nil || st.Mode() != os.ModeDir|0o700 {
				t.Errorf("stat %s = %v, %v; want drwx------", a, st.Mode(), err)
			}
			if err := os.WriteFile(filepath.Join(a, "f"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{a, b} {
				if err := c.RemoveAll(ctx, d); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(d); !os.IsNotExist(err) {
					t.Errorf("%s still exists: %v", d, err)
				}
			}
			if err := c.RemoveAll(ctx, a); err != nil {
				t.Errorf("RemoveAll of a missing dir: %v", err)
			}
		})
	}

	for _, bad := range []string{"", "/", "/tmp", "relative/dir", "/tmp/../etc", "~/x"} {
		if err := c.RemoveAll(ctx, bad); err == nil {
			t.Errorf("RemoveAll(%q) succeeded", bad)
		}
	}
}

func TestSplitAddress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		host     string
		port     int
		wantFail bool
	}{
		{in: "10.0.0.5", host: "10.0.0.5", port: 22},
		{in: "10.0.0.5:2222", host: "10.0.0.5", port: 2222},
		{in: "ansible.example.org", host: "ansible.example.org", port: 22},
		{in: "fd00::5", host: "fd00::5", port: 22},
		{in: "[fd00::5]", host: "fd00::5", port: 22},
		{in: "[fd00::5]:2222", host: "fd00::5", port: 2222},
		{in: " host:22 ", host: "host", port: 22},
		{in: "", wantFail: true},
		{in: "host:", wantFail: true},
		{in: "host:99999", wantFail: true},
		{in: ":22", wantFail: true},
		{in: "not:an:ip:addr:zz", wantFail: true},
	}
	for _, tt := range tests {
		host, port, err := remote.SplitAddress(tt.in)
		if tt.wantFail {
			if err == nil {
				t.Errorf("SplitAddress(%q) = %s, %d; want error", tt.in, host, port)
			}
			continue
		}
		if err != nil || host != tt.host || port != tt.port {
			t.Errorf("SplitAddress(%q) = %q, %d, %v; want %q, %d", tt.in, host, port, err, tt.host, tt.port)
		}
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":            "''",
		"simple/path": "simple/path",
		"a b":         "'a b'",
		"it's":        `'it'\''s'`,
		"$HOME":       "'$HOME'",
	} {
		if got := remote.ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func ptr(s string) *string { return &s }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
