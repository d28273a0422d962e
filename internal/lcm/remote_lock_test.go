package lcm

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/remote"
	"github.com/heatsible/heatsible/internal/remote/remotetest"
)

// TestWatchRemoteLock: a run is stopped (ErrLockLost) when the session
// holding the cluster's lock on the Ansible host ends while the connection
// lives (someone killed it there), and left alone when the connection
// itself went (the runner reports that).
func TestWatchRemoteLock(t *testing.T) {
	srv := remotetest.Start(t)
	base := filepath.Join(t.TempDir(), "runs")
	lockFile := filepath.Join(filepath.Dir(base), "locks", "k8s-a.lock")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tt := range []struct {
		name string
		end  func(t *testing.T, c *remote.Client)
		stop bool
	}{
		{name: "lock session killed", stop: true, end: func(t *testing.T, _ *remote.Client) {
			pids := holders(lockFile)
			if len(pids) == 0 {
				t.Fatal("no process holds the lock file open")
			}
			// The session's shell and a child it forked may both hold the
			// file; one may be gone before its kill (ESRCH is no error),
			// but one of them must have been there.
			killed := 0
			for _, pid := range pids {
				switch err := syscall.Kill(pid, syscall.SIGKILL); {
				case err == nil:
					killed++
				case !errors.Is(err, syscall.ESRCH):
					t.Fatal(err)
				}
			}
			if killed == 0 {
				t.Fatalf("every process that held the lock file (%v) had exited before its kill", pids)
			}
		}},
		{name: "connection closed", end: func(_ *testing.T, c *remote.Client) { _ = c.Close() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := remote.Dial(context.Background(), remote.Config{Address: srv.Addr, User: "root", KeyFiles: []string{srv.RootKeyFile},
				KnownHostsFile: srv.KnownHostsFile, Timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rr := &ansible.RemoteRunner{Client: c, BaseDir: base, Logger: log}
			l, err := rr.Lock(context.Background(), "k8s-a", ansible.Holder{Operation: "heal-end", PID: 1, Host: "m", Started: time.Now()}, true)
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancelCause(context.Background())
			defer stop(nil)
			done := make(chan struct{})
			go func() { watchRemoteLock(ctx, stop, l, c, log); close(done) }()
			tt.end(t, c)
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the watcher did not end 20 s after the lock's session did")
			}
			cause := context.Cause(ctx)
			if got := errors.Is(cause, ansible.ErrLockLost); got != tt.stop {
				t.Errorf("run stopped with %v; want stopped: %v", cause, tt.stop)
			}
			_ = l.Release(context.Background())
		})
	}
}

// holders lists the processes that have p open.
func holders(p string) []int {
	var pids []int
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == p {
			if pid, err := strconv.Atoi(strings.Split(fd, "/")[2]); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
