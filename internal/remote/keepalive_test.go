package remote_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/heatsible/heatsible/internal/remote"
	"github.com/heatsible/heatsible/internal/remote/remotetest"
)

// silentProxy forwards one TCP connection to target until freeze is
// called; after that it forwards nothing more, in either direction, and
// closes nothing: the connection is half-open, as when the peer's FIN or
// RST never arrives (a dropped packet, a firewall, a host that vanished).
type silentProxy struct {
	addr   string
	frozen atomic.Bool
}

func startSilentProxy(t *testing.T, target string) *silentProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &silentProxy{addr: l.Addr().String()}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	go func() {
		in, err := l.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", target)
		if err != nil {
			_ = in.Close()
			return
		}
		mu.Lock()
		conns = append(conns, in, out)
		mu.Unlock()
		pipe := func(dst, src net.Conn) {
			buf := make([]byte, 32<<10)
			for {
				n, err := src.Read(buf)
				if err != nil {
					return
				}
				if p.frozen.Load() {
					continue // swallowed: nothing goes through, nothing is closed
				}
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
		}
		go pipe(out, in)
		pipe(in, out)
	}()
	return p
}

func (p *silentProxy) freeze() { p.frozen.Store(true) }

// TestKeepAliveEndsAHalfOpenConnection: a running remote command whose
// connection goes silent (no FIN, no RST) ends with the connection-lost
// error after the missed keepalives, instead of waiting forever (without
// keepalives this Run would wait the full 60 s of the remote sleep, or
// for ever).
func TestKeepAliveEndsAHalfOpenConnection(t *testing.T) {
	t.Parallel()
	srv := remotetest.Start(t)
	p := startSilentProxy(t, srv.Addr)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(p.addr)}, srv.HostKeys[0])
	if err := os.WriteFile(kh, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const every = 200 * time.Millisecond
	c, err := remote.Dial(context.Background(), remote.Config{
		Address: p.addr, User: "root", KeyFiles: []string{srv.RootKeyFile},
		KnownHostsFile: kh, Timeout: 10 * time.Second, KeepAlive: every,
	})
	if err != nil {
		t.Fatalf("Dial through the proxy: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })

	done := make(chan error, 1)
	go func() {
		_, err := c.Run(context.Background(), "sleep 60", io.Discard, io.Discard)
		done <- err
	}()
	time.Sleep(5 * every) // keepalives answered while the proxy forwards
	p.freeze()
	frozen := time.Now()
	select {
	case err := <-done:
		t.Logf("Run ended %s after the connection went silent: %v", time.Since(frozen).Round(time.Millisecond), err)
		if !errors.Is(err, remote.ErrUnreachable) {
			t.Errorf("Run error %v, want one wrapping remote.ErrUnreachable (connection lost)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run still waits 30 s after the connection went silent: the keepalives did not end it")
	}
}

// The default probe interval bounds how long heatsible waits on an Ansible
// host that vanished: three missed probes.
func TestDefaultKeepAlive(t *testing.T) {
	if got := 3 * remote.DefaultKeepAlive; got > 45*time.Second {
		t.Errorf("a vanished Ansible host is detected after up to %s (+ one interval); want at most 45 s", got)
	}
}
