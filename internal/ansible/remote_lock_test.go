package ansible

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/remote"
	"github.com/heatsible/heatsible/internal/remote/remotetest"
)

// lockRunners are two connections to one Ansible host (a real sshd on
// loopback): two machines running heatsible against the same cluster.
func lockRunners(t *testing.T) (a, b *RemoteRunner, base string) {
	t.Helper()
	srv := remotetest.Start(t)
	base = filepath.Join(t.TempDir(), "runs")
	return &RemoteRunner{Client: dialAgain(t, srv), BaseDir: base}, &RemoteRunner{Client: dialAgain(t, srv), BaseDir: base}, base
}

func holder(op string, pid int, host string) Holder {
	return Holder{Operation: op, PID: pid, Host: host, Started: time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC),
		Record: "/var/lib/heatsible/runs/k8s-a/20261123T090000Z-" + op}
}

func lockFile(t *testing.T, base, cluster string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(base), "locks", LockName(cluster)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// eventuallyLock retries Lock until it stops answering busy: the Ansible
// host sees a dropped connection a moment after this side dropped it.
func eventuallyLock(t *testing.T, rr *RemoteRunner, cluster string, h Holder, brk bool) (*RemoteLock, error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		l, err := rr.Lock(context.Background(), cluster, h, brk)
		if !errors.Is(err, ErrLockBusy) || time.Now().After(deadline) {
			return l, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestRemoteLock(t *testing.T) {
	one, two, base := lockRunners(t)
	ctx := context.Background()
	h1, h2 := holder("instantiate-end", 4242, "conductor-1"), holder("heal-end", 777, "conductor-2")

	l1, err := one.Lock(ctx, "k8s-a", h1, false)
	if err != nil {
		t.Fatalf("first lock: %v", err)
	}
	rec, _ := json.Marshal(h1)
	if got := lockFile(t, base, "k8s-a"); got != string(rec)+"\n" {
		t.Errorf("lock file %q, want the holder record %s", got, rec)
	}
	wantPath := filepath.Join(filepath.Dir(base), "locks", "k8s-a.lock")
	if l1.Path != wantPath {
		t.Errorf("lock path %q, want %q", l1.Path, wantPath)
	}
	// Another machine: refused, naming the holder; --break-lock does not
	// take a live lock.
	for _, brk := range []bool{false, true} {
		_, err := two.Lock(ctx, "k8s-a", h2, brk)
		var le *LockError
		if !errors.Is(err, ErrLockBusy) || !errors.As(err, &le) {
			t.Fatalf("second lock (break %v) = %v, want ErrLockBusy", brk, err)
		}
		for _, want := range []string{"cluster k8s-a is busy: instantiate-end (pid 4242 on conductor-1, started 2026-11-23T09:00:00Z) holds its lock on the Ansible host " + two.Client.Address(), wantPath, "wait for it to finish"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q does not say %q", err, want)
			}
		}
	}
	// Another cluster, even one whose name begins the same: its own lock.
	lb, err := two.Lock(ctx, "k8s-a-b", h2, false)
	if err != nil {
		t.Fatalf("lock of another cluster: %v", err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Released on close: the record is emptied, the next one gets it.
	if err := l1.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if got := lockFile(t, base, "k8s-a"); got != "" {
		t.Errorf("lock file after release %q, want empty", got)
	}
	l2, err := two.Lock(ctx, "k8s-a", h2, false)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A dropped connection frees the lock (the second machine is no longer
	// told "busy"), but the record stays: that run did not finish.
	if _, err := one.Lock(ctx, "k8s-a", h1, false); err != nil {
		t.Fatal(err)
	}
	_ = one.Client.Close()
	_, err = eventuallyLock(t, two, "k8s-a", h2, false)
	if !errors.Is(err, ErrLockStale) {
		t.Fatalf("lock after the holder's connection dropped = %v, want ErrLockStale", err)
	}
	for _, want := range []string{"the lock on the Ansible host", "was left by a run that did not finish: instantiate-end (pid 4242 on conductor-1, started 2026-11-23T09:00:00Z)",
		"Read its run record (/var/lib/heatsible/runs/k8s-a/20261123T090000Z-instantiate-end on conductor-1), then re-run with --break-lock"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	l3, err := two.Lock(ctx, "k8s-a", h2, true)
	if err != nil {
		t.Fatalf("--break-lock: %v", err)
	}
	if err := l3.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l4, err := two.Lock(ctx, "k8s-a", h2, false)
	if err != nil {
		t.Fatalf("after a clean release: %v", err)
	}
	if err := l4.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wantPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file after Remove: %v", err)
	}
}

// TestRemoteLockOutlivesItsRun: when heatsible's connection drops, the
// lock stays held until the run's ansible-playbook (which holds its staging
// marker) has stopped; then the staging directory goes and the lock is
// free, with the record of a run that did not finish. The run's own
// heatsible, still alive, clears that record over a new connection.
func TestRemoteLockOutlivesItsRun(t *testing.T) {
	one, two, base := lockRunners(t)
	ctx := context.Background()
	h1 := holder("scale-end", 4242, "conductor-1")
	l1, err := one.Lock(ctx, "k8s-a", h1, false)
	if err != nil {
		t.Fatal(err)
	}
	stage, err := l1.mkstage(ctx, StagingPrefix("k8s-a", "scale-end"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stage, base+"/heatsible-k8s-a-scale-end-") {
		t.Fatalf("stage %q", stage)
	}
	if st, err := os.Stat(stage); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("stage: %v %v, want a 0700 directory", st, err)
	}
	writeMarker(t, stage, "k8s-a")
	// The orphaned ansible-playbook, still stopping.
	orphan := time.Now()
	holdLockFor(t, filepath.Join(stage, MarkerFile), 3*time.Second)

	_ = one.Client.Close()
	time.Sleep(time.Second)
	if _, err := two.Lock(ctx, "k8s-a", holder("heal-end", 1, "conductor-2"), true); !errors.Is(err, ErrLockBusy) {
		t.Fatalf("lock while the cut run's ansible-playbook stops = %v, want ErrLockBusy", err)
	}
	_, err = eventuallyLock(t, two, "k8s-a", holder("heal-end", 1, "conductor-2"), false)
	if !errors.Is(err, ErrLockStale) {
		t.Fatalf("lock after the cut run stopped = %v, want ErrLockStale", err)
	}
	if took := time.Since(orphan); took < 3*time.Second {
		t.Errorf("the lock went after %s, before the run's ansible-playbook (3 s)", took)
	}
	if _, err := os.Stat(stage); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cut run's staging directory: %v, want it removed", err)
	}

	// Its heatsible clears its own record (not someone else's).
	if ok, err := two.ClearRecord(ctx, "k8s-a", holder("scale-end", 1, "conductor-2")); ok || err != nil {
		t.Errorf("ClearRecord of another holder = %v, %v; want false, nil", ok, err)
	}
	if ok, err := two.ClearRecord(ctx, "k8s-a", h1); !ok || err != nil {
		t.Fatalf("ClearRecord = %v, %v", ok, err)
	}
	l, err := two.Lock(ctx, "k8s-a", holder("heal-end", 1, "conductor-2"), false)
	if err != nil {
		t.Fatalf("lock after ClearRecord: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// holdLockFor holds an flock on p for d, in the background.
func holdLockFor(t *testing.T, p string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	hold := execFlock(ctx, p, d)
	out, err := hold.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = hold.Wait() }()
	if _, err := out.Read(make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
}

// TestRemoteLockWithoutFlock: a host without flock(1) cannot hold the lock;
// the run is refused, saying so.
func TestRemoteLockWithoutFlock(t *testing.T) {
	srv := remotetest.StartConfig(t, "SetEnv PATH="+pathWithout(t, "flock"))
	rr := &RemoteRunner{Client: dialAgain(t, srv), BaseDir: filepath.Join(t.TempDir(), "runs")}
	_, err := rr.Lock(context.Background(), "k8s-a", holder("instantiate-end", 1, "c"), false)
	if !errors.Is(err, ErrNoFlock) || !strings.Contains(err.Error(), "has no flock (util-linux)") || !strings.Contains(err.Error(), "--local") {
		t.Fatalf("Lock without flock = %v, want ErrNoFlock saying what to do", err)
	}
}

// execFlock is flock(1) holding p for d, saying "held" once it does. Its
// command inherits the lock; ctx's end kills them both (their process
// group).
func execFlock(ctx context.Context, p string, d time.Duration) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "flock", p, "sh", "-c", fmt.Sprintf("echo held; exec sleep %g", d.Seconds()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}

// TestLockScriptsShellcheck: the scripts the lock and the cleanup run on
// the Ansible host are POSIX sh that shellcheck finds nothing in.
func TestLockScriptsShellcheck(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Skip("shellcheck not found")
	}
	rr := &RemoteRunner{BaseDir: "~/.heatsible/runs"}
	rec := `{"operation":"it's","pid":1}`
	scripts := map[string]string{
		"lock":         rr.lockScript("k8s-a", rec, false),
		"lock --break": rr.lockScript("k8s-a", rec, true),
		"clear":        rr.clearScript("k8s-a", rec),
		"list":         staleListScript("~/.heatsible/runs", "heatsible-k8s-a-", `[ -n "$(find "$m" -maxdepth 0 -mmin +59)" ] || continue`),
		"remove":       staleRemoveScript([]string{"/home/u/.heatsible/runs/heatsible-k8s-a-x-1", "'/home/u/a b'"}),
	}
	for name, s := range scripts {
		cmd := exec.Command("shellcheck", "-s", "sh", "-")
		cmd.Stdin = strings.NewReader(s)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: shellcheck: %v\n%s\n%s", name, err, out, s)
		}
	}
}

// TestLockSessionEndIsUnreachable: the lock's session ending is exit code
// 3 wherever the run meets it: while the lock is taken (here its shell
// exits on its own, the locks directory being a file), and once it is
// held (its shell killed on the Ansible host, the connection alive) at
// the next staging exchange and at the release.
func TestLockSessionEndIsUnreachable(t *testing.T) {
	srv := remotetest.Start(t)
	ctx := context.Background()

	blocked := filepath.Join(t.TempDir(), "runs")
	if err := os.WriteFile(filepath.Join(filepath.Dir(blocked), "locks"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rr := &RemoteRunner{Client: dialAgain(t, srv), BaseDir: blocked}
	_, err := rr.Lock(ctx, "k8s-a", holder("heal-end", 1, "c"), false)
	if !errors.Is(err, remote.ErrSessionEnded) || fail.Code(err) != fail.Unreachable {
		t.Errorf("Lock whose shell exited: %v (exit code %d), want ErrSessionEnded, %d", err, fail.Code(err), fail.Unreachable)
	}

	base := filepath.Join(t.TempDir(), "runs")
	rr = &RemoteRunner{Client: dialAgain(t, srv), BaseDir: base}
	l, err := rr.Lock(ctx, "k8s-a", holder("heal-end", 1, "c"), false)
	if err != nil {
		t.Fatal(err)
	}
	lockPath := filepath.Join(filepath.Dir(base), "locks", LockName("k8s-a"))
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	killed := 0
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == lockPath {
			if pid, err := strconv.Atoi(strings.Split(fd, "/")[2]); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
	}
	if killed == 0 {
		t.Fatal("no process held the lock file open")
	}
	select {
	case <-l.Lost():
	case <-time.After(20 * time.Second):
		t.Fatal("the lock's session did not end 20 s after its shell was killed")
	}
	_, err = l.mkstage(ctx, StagingPrefix("k8s-a", "heal-end"))
	if !errors.Is(err, ErrLockLost) || !errors.Is(err, remote.ErrSessionEnded) || fail.Code(err) != fail.Unreachable {
		t.Errorf("mkstage after the session ended: %v (exit code %d), want ErrLockLost, %d", err, fail.Code(err), fail.Unreachable)
	}
	err = l.Release(ctx)
	if !errors.Is(err, ErrLockLost) || fail.Code(err) != fail.Unreachable {
		t.Errorf("Release after the session ended: %v (exit code %d), want ErrLockLost, %d", err, fail.Code(err), fail.Unreachable)
	}
}
