package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFirstBootDpkgLock: a worker without the NFS client is in a fresh
// VM's first minutes when the run starts: cloud-init still running (15 s)
// and the dpkg frontend lock held by a process named apt-get (an fcntl
// lock, as apt takes it) for 30 s, so that apt-get exits 100 at once. The
// run waits, saying which host waits for what while it does, installs the
// client and succeeds. A host that has the client is never probed: with the
// lock held on it, the re-run does not wait (converged runs pay nothing).
//
// The lock is held 15 s past cloud-init's end (30 s; 120 s until
// 2026-11-28, 60 s until 2026-12-02: CI time): the run reaches its probe a
// few seconds after the lock is taken (3 s in the e2e run of 2026-11-28),
// while cloud-init still runs, then waits for cloud-init and, after it, for
// the lock; what the test proves does not depend on how long the lock
// outlasts cloud-init. The test fails, rather than passes for the wrong
// reason, if the probe comes after cloud-init's end (the progress line
// names cloud-init).
func TestFirstBootDpkgLock(t *testing.T) {
	const cloudInit, lockHeld = 15 * time.Second, 30 * time.Second
	b := needBed(t)
	hosts := strings.Fields(b.exec(t, "master-0", "sh", "-c", "getent hosts | awk '$2 ~ /^worker-/ {print $2, $1}'"))
	if len(hosts) < 2 {
		t.Fatal("no workers in master-0's /etc/hosts")
	}
	victim, ip := hosts[len(hosts)-2], hosts[len(hosts)-1]
	node := b.nodeAt(t, ip)
	args := b.runArgs("--role", "nfs_client")

	b.removeNFSClient(t, victim)
	t.Cleanup(func() { b.bedScript(t, "first-boot", victim, "off") })
	b.bedScript(t, "first-boot", victim, strconv.Itoa(int(cloudInit/time.Second)), strconv.Itoa(int(lockHeld/time.Second)))
	held := time.Now()
	holder := strings.TrimSpace(b.exec(t, victim, "systemctl", "show", "-p", "MainPID", "--value", "bed-first-boot.service"))

	// As apt sees it: exit 100 at once.
	out, err := b.try(victim, "apt-get", "install", "-y", "-q", "nfs-common")
	if err == nil || !strings.Contains(out, "Could not get lock /var/lib/dpkg/lock-frontend. It is held by process "+holder+" (apt-get)") {
		t.Fatalf("apt-get install did not fail on the held lock (pid %s): %v\n%s", holder, err, out)
	}
	t.Logf("apt-get on %s: %s", victim, lineWith(out, "Could not get lock"))

	r := b.start(t, "", args...)
	waiting := node + ": waiting for cloud-init to finish (cloud-init status: running), then the dpkg lock " +
		"/var/lib/dpkg/lock-frontend (held by pid " + holder + ", apt-get), at most 600 s"
	r.waitFor(t, waiting, 3*time.Minute)
	t.Logf("progress while it waits (%s after the lock was taken):\n%s", time.Since(held).Round(time.Second), lineWith(r.stderr(), waiting))
	code, _, errs, took := r.wait(t, 12*time.Minute)
	end := time.Since(held)
	waited := lineWith(errs, node+": waited ")
	t.Logf("exit %d in %s, %s after the lock was taken (released at %s)\n%s", code, took.Round(time.Millisecond), end.Round(time.Second), lockHeld, waited)
	if code != 0 {
		t.Fatalf("exit %d, want 0: the run should have waited for the lock\n%s", code, tail(errs, 40))
	}
	if end < lockHeld-5*time.Second {
		t.Errorf("the run ended %s after the lock was taken, before it was released (%s)", end.Round(time.Second), lockHeld)
	}
	for _, w := range []string{"for cloud-init (", "the dpkg lock /var/lib/dpkg/lock-frontend (pid " + holder + ", apt-get); apt can run"} {
		if !strings.Contains(waited, w) {
			t.Errorf("the wait's report does not say %q: %q", w, waited)
		}
	}
	if !b.nfsClient(victim) {
		t.Errorf("%s has no NFS client after the run", victim)
	}
	if calls := b.exec(t, victim, "cat", "/var/log/bed-cloud-init.log"); !strings.Contains(calls, "status --wait") {
		t.Errorf("cloud-init status --wait was never asked:\n%s", calls)
	}

	// Converged: the lock held again on the same host, which has the client
	// now: nothing asks about the lock, nothing waits.
	b.bedScript(t, "first-boot", victim, "0", "120")
	code, _, errs, took = b.heatsible(t, args...)
	t.Logf("converged re-run with the lock held: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("converged re-run: exit %d\n%s", code, tail(errs, 40))
	}
	if strings.Contains(errs, "waiting for") || strings.Contains(errs, "apt_wait") {
		t.Errorf("the converged re-run looked at the lock:\n%s", tail(errs, 40))
	}
}
