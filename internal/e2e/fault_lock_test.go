package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var busyRE = regexp.MustCompile(`cluster (\S+) is busy: (\S+) \(pid (\d+) on (\S+), started (\S+)\) holds its lock`)

// TestClusterLock: while a run works on the cluster, a second operation on
// it (from the same state directory, as on one operator machine) is refused
// with exit 6 naming the holder's operation, pid, host and start time. A
// run killed with SIGKILL leaves its lock refused until --break-lock, and
// the run that breaks it converges.
func TestClusterLock(t *testing.T) {
	b := needBed(t)
	state := t.TempDir()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	first := b.start(t, state, b.runArgs()...)
	first.waitFor(t, "cinder_volume : ", 3*time.Minute) // it holds the lock and works

	code, _, errs, took := b.start(t, state, b.opArgs("heal-end", "--cluster")...).wait(t, 2*time.Minute)
	t.Logf("second operation while the first runs: exit %d in %s\n%s", code, took.Round(time.Millisecond), errorOf(errs))
	if code != 6 {
		t.Fatalf("heal-end --cluster while instantiate-end runs: exit %d, want 6 (refused)\n%s", code, tail(errs, 20))
	}
	m := busyRE.FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("the refusal does not name the holder (operation, pid, host, start time):\n%s", tail(errs, 10))
	}
	started, err := time.Parse(time.RFC3339, m[5])
	if m[2] != "instantiate-end" || m[3] != strconv.Itoa(first.cmd.Process.Pid) || m[4] != host || err != nil ||
		started.Before(first.start.Add(-time.Second)) || started.After(time.Now()) {
		t.Errorf("holder %q, want instantiate-end, pid %d, host %s, started after %s", m[0], first.cmd.Process.Pid, host, first.start.UTC().Format(time.RFC3339))
	}
	select {
	case <-first.done:
		t.Fatalf("the first run ended while the second was refused (exit %d):\n%s", first.code, tail(first.stderr(), 20))
	default:
	}

	// SIGKILL: no deferred release, the holder record stays in the lock file.
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.wait(t, time.Minute)
	code, _, errs, _ = b.start(t, state, b.runArgs()...).wait(t, 2*time.Minute)
	t.Logf("run after a SIGKILLed run: exit %d\n%s", code, errorOf(errs))
	stale := fmt.Sprintf("was left by a run that did not finish: instantiate-end (pid %d on %s, started %s)", first.cmd.Process.Pid, host, m[5])
	if code != 6 || !strings.Contains(errs, stale) || !strings.Contains(errs, "--break-lock") {
		t.Fatalf("after a SIGKILLed run: exit %d, want 6 saying %q and naming --break-lock\n%s", code, stale, tail(errs, 20))
	}
	// The killed run's connection is gone: the Ansible host cleaned up.
	eventually(t, 45*time.Second, func() string {
		if left := b.staging(t); len(left) > 0 {
			return fmt.Sprintf("staging directories of the killed run on the Ansible host: %v", left)
		}
		return ""
	})

	code, out, errs, took := b.start(t, state, b.runArgs("--break-lock")...).wait(t, 5*time.Minute)
	t.Logf("--break-lock: exit %d in %s\n%s", code, took.Round(time.Millisecond), lineWith(errs, "breaking the lock"))
	if code != 0 {
		t.Fatalf("run with --break-lock: exit %d\n%s", code, tail(errs, 40))
	}
	if lineWith(errs, "breaking the lock of a run that did not finish") == "" {
		t.Errorf("--break-lock took over without saying so:\n%s", tail(errs, 40))
	}
	parseRun(t, out)
	checkPVs(t, b, len(b.request(t).AdditionalParams.K.PVs), "Available")
}
