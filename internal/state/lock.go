package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/topology"
)

// Holder says who holds a cluster lock. Its JSON is the lock file's; the
// cluster's lock on the Ansible host names the same holder
// (ansible.Holder, which has the same fields: lcm converts one into the
// other).
type Holder struct {
	Operation string    `json:"operation"`
	PID       int       `json:"pid"`
	Host      string    `json:"host"`
	Started   time.Time `json:"started"`
	// Record is the holder's run record on its machine (Host), when known.
	Record string `json:"record,omitempty"`
}

func (h Holder) String() string {
	return fmt.Sprintf("%s (pid %d on %s, started %s)", h.Operation, h.PID, h.Host, h.Started.Format(time.RFC3339))
}

// LockName is the file name of cluster's lock under Dir().
func LockName(cluster string) string {
	if n := topology.SanitizeName(cluster); n != "" {
		return n + ".lock"
	}
	return "cluster.lock"
}

// Lock is a held per-cluster lock on this machine.
type Lock struct {
	f      *os.File
	path   string
	holder Holder
}

// Acquire takes the lock of cluster for operation, without waiting: a second
// operation on the same cluster is refused (exit code Refused) with the
// holder's operation, pid, host and start time. The lock is an flock, so the
// kernel releases it when the holder dies, however it dies. It serialises
// runs on this machine (with this state directory) only: a remote run also
// holds the cluster's lock on the Ansible host (ansible.RemoteRunner.Lock),
// which serialises machines.
//
// A run that ends, well or badly, empties the lock file when it releases it.
// A free lock whose file still names a holder was left by a run that was
// killed (SIGKILL, OOM, power loss): its hosts may be half-configured, so
// the next operation is refused until the operator has looked and says so
// with breakStale (--break-lock). breakStale never takes the lock from a
// live holder.
func Acquire(cluster, operation string, breakStale bool) (*Lock, error) {
	dir := Dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the state directory: %w", err)
	}
	p := filepath.Join(dir, LockName(cluster))
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the cluster lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			var h Holder
			data, _ := os.ReadFile(p)
			if json.Unmarshal(data, &h) == nil && h.PID != 0 {
				return nil, fail.With(fail.Refused, fmt.Errorf("cluster %s is busy: %s holds its lock (%s); wait for it to finish", cluster, h, p))
			}
			return nil, fail.With(fail.Refused, fmt.Errorf("cluster %s is busy: another heatsible holds its lock %s", cluster, p))
		}
		return nil, fmt.Errorf("locking %s: %w", p, err)
	}
	if data, _ := io.ReadAll(f); len(bytes.TrimSpace(data)) > 0 {
		var h Holder
		who := "an unreadable holder record"
		if json.Unmarshal(data, &h) == nil && h.PID != 0 {
			who = h.String()
		}
		if !breakStale {
			f.Close()
			return nil, fail.With(fail.Refused, fmt.Errorf("cluster %s: the lock %s was left by a run that did not finish: %s; it was killed or crashed, so its hosts may be half-configured. Read its run record (%s), then re-run with --break-lock", cluster, p, who, filepath.Join(dir, RunsDir, topology.SanitizeName(cluster))))
		}
		slog.Warn("breaking the lock of a run that did not finish (--break-lock)", "cluster", cluster, "holder", who)
	}
	host, _ := os.Hostname()
	h := Holder{Operation: operation, PID: os.Getpid(), Host: host, Started: time.Now().UTC()}
	data, _ := json.Marshal(h)
	if err := f.Truncate(0); err == nil {
		f.WriteAt(append(data, '\n'), 0)
	}
	return &Lock{f: f, path: p, holder: h}, nil
}

// Holder is the record the lock holds.
func (l *Lock) Holder() Holder { return l.holder }

// Release gives the lock up.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	l.f.Truncate(0)
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
	l.f = nil
}

// Path is the lock file's path.
func (l *Lock) Path() string { return l.path }

// Remove deletes the lock file, then releases the lock: terminate-end, when
// the cluster is gone. Its run records stay (the audit trail).
func (l *Lock) Remove() {
	if l == nil || l.f == nil {
		return
	}
	os.Remove(l.path)
	l.Release()
}
