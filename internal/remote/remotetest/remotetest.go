// Package remotetest starts a real OpenSSH sshd on loopback for tests of
// heatsible's SSH code and of the remote Ansible runner.
//
// The server runs as root (sshd needs it to switch users), listens on
// 127.0.0.1 on a free port and trusts only keys and users the test gives it.
// Tests are skipped, with the reason, when /usr/sbin/sshd is missing or the
// test does not run as root.
package remotetest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHD is the path of the OpenSSH server binary the harness runs.
const SSHD = "/usr/sbin/sshd"

// Server is a running sshd.
type Server struct {
	// Addr is "127.0.0.1:<port>".
	Addr string
	// Port is the listening port.
	Port int
	// Dir is the server's private directory (keys, config, logs).
	Dir string
	// HostKeys are the server's public host keys: ed25519 first, then RSA.
	HostKeys []ssh.PublicKey
	// KnownHostsFile lists the ed25519 host key for Addr.
	KnownHostsFile string
	// RootKeyFile is an unencrypted OpenSSH private key authorized for root.
	RootKeyFile string
	// RootKey is the same private key, e.g. to load into an agent keyring.
	RootKey ed25519.PrivateKey
	// RootSigner is the same key as a signer.
	RootSigner ssh.Signer

	authorizedKeys string
	mu             sync.Mutex
	log            *bytes.Buffer
}

// Skip skips t unless sshd can be started here.
func Skip(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(SSHD); err != nil {
		t.Skipf("%s not found (install Debian's openssh-server to run the SSH tests): %v", SSHD, err)
	}
	if os.Geteuid() != 0 {
		t.Skip("the sshd test harness must run as root (sshd switches users and needs /run/sshd)")
	}
}

// Start runs sshd until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartConfig(t, "")
}

// StartConfig is Start with extra sshd_config lines, e.g.
// "SetEnv PATH=/some/dir" for a host whose commands are not all there.
func StartConfig(t testing.TB, extra string) *Server {
	t.Helper()
	Skip(t)
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // privilege separation dir
		t.Fatalf("creating /run/sshd: %v", err)
	}
	dir := t.TempDir()
	s := &Server{Dir: dir, authorizedKeys: filepath.Join(dir, "authorized_keys"), log: &bytes.Buffer{}}

	edPub, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaPriv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	edFile := filepath.Join(dir, "ssh_host_ed25519_key")
	rsaFile := filepath.Join(dir, "ssh_host_rsa_key")
	writeKey(t, edFile, edPriv)
	writeKey(t, rsaFile, rsaPriv)
	edSSH, _ := ssh.NewPublicKey(edPub)
	rsaSSH, _ := ssh.NewPublicKey(&rsaPriv.PublicKey)
	s.HostKeys = []ssh.PublicKey{edSSH, rsaSSH}

	_, userPriv, _ := ed25519.GenerateKey(rand.Reader)
	s.RootKeyFile = filepath.Join(dir, "root_ed25519")
	writeKey(t, s.RootKeyFile, userPriv)
	s.RootKey = userPriv
	s.RootSigner, err = ssh.NewSignerFromKey(userPriv)
	if err != nil {
		t.Fatal(err)
	}
	s.Authorize(t, s.RootSigner.PublicKey())

	s.Port = freePort(t)
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
	s.KnownHostsFile = filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(s.KnownHostsFile, []byte(s.KnownHostsLine(edSSH)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	cfg := filepath.Join(dir, "sshd_config")
	conf := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
HostKey %s
PidFile none
AuthorizedKeysFile %s
StrictModes no
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication yes
KbdInteractiveAuthentication no
UsePAM no
PermitUserEnvironment no
AllowAgentForwarding no
AllowTcpForwarding no
X11Forwarding no
MaxStartups 100:30:200
MaxSessions 100
LogLevel VERBOSE
Subsystem sftp internal-sftp
%s
`, s.Port, edFile, rsaFile, s.authorizedKeys, extra)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, SSHD, "-D", "-e", "-f", cfg)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting sshd: %v", err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if strings.Contains(line, "Server listening on") {
				once.Do(func() { close(ready) })
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("sshd log:\n%s", s.Log())
		}
	})
	select {
	case <-ready:
	case err := <-exited:
		exited <- err
		t.Fatalf("sshd exited before listening: %v\n%s", err, s.Log())
	case <-time.After(15 * time.Second):
		t.Fatalf("sshd did not start listening within 15s:\n%s", s.Log())
	}
	return s
}

// Log returns what sshd logged so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// KnownHostsLine returns a known_hosts line for key at s.Addr.
func (s *Server) KnownHostsLine(key ssh.PublicKey) string {
	return knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, key)
}

// Authorize lets key log in as any user of the server.
func (s *Server) Authorize(t testing.TB, key ssh.PublicKey) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(s.authorizedKeys, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(ssh.MarshalAuthorizedKey(key)); err != nil {
		t.Fatal(err)
	}
}

// AddUser creates a throw-away local user with a password (deleted, with
// its home, when the test ends) and returns its name.
func (s *Server) AddUser(t testing.TB, password string) string {
	t.Helper()
	for _, b := range []string{"useradd", "chpasswd", "userdel"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s not found: cannot create a test user for password authentication", b)
		}
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("hstest%x", rnd)
	if out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/sh", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("userdel", "--remove", "--force", name).CombinedOutput(); err != nil {
			t.Logf("userdel %s: %v: %s", name, err, out)
		}
	})
	cmd := exec.Command("chpasswd")
	cmd.Stdin = strings.NewReader(name + ":" + password + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chpasswd %s: %v: %s", name, err, out)
	}
	return name
}

func writeKey(t testing.TB, path string, key any) {
	t.Helper()
	block, err := ssh.MarshalPrivateKey(key, "heatsible-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
