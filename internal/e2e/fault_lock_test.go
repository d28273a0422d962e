package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/topology"
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
	first.signal(t, syscall.SIGKILL)
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

var remoteBusyRE = regexp.MustCompile(`cluster (\S+) is busy: (\S+) \(pid (\d+) on (\S+), started (\S+)\) holds its lock on the Ansible host (\S+) \(([^)]+)\)`)

// TestClusterLockAcrossMachines: two heatsibles with their own state
// directories (two machines, two Tacker conductors) on one cluster through
// one Ansible host. While the first runs, the second is refused with exit 6
// naming the holder (operation, pid, machine, start time) and the lock on
// the Ansible host; the first goes on to the end, and then the second
// machine's run works.
func TestClusterLockAcrossMachines(t *testing.T) {
	b := needBed(t)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	first := b.start(t, t.TempDir(), b.runArgs()...)
	first.waitFor(t, "cinder_volume : ", 3*time.Minute)

	// A check run: harmless should it not be refused (as before the lock
	// on the Ansible host).
	other := t.TempDir()
	code, _, errs, took := b.start(t, other, b.opArgs("heal-end", "--storage-server", "--check")...).wait(t, 2*time.Minute)
	t.Logf("the second machine while the first runs: exit %d in %s\n%s", code, took.Round(time.Millisecond), errorOf(errs))
	if code != 6 {
		t.Fatalf("heal-end --storage-server --check from another machine while instantiate-end runs: exit %d, want 6 (refused)\n%s", code, tail(errs, 20))
	}
	m := remoteBusyRE.FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("the refusal does not name the holder and the lock on the Ansible host:\n%s", tail(errs, 10))
	}
	started, err := time.Parse(time.RFC3339, m[5])
	if m[1] != "bed" || m[2] != "instantiate-end" || m[3] != strconv.Itoa(first.cmd.Process.Pid) || m[4] != host || err != nil ||
		started.Before(first.start.Add(-time.Second)) || started.After(time.Now()) ||
		m[6] != "10.231.0.10:22" || !strings.HasSuffix(m[7], "/.heatsible/locks/bed.lock") {
		t.Errorf("refusal %q: want cluster bed, instantiate-end, pid %d, host %s, started after %s, the Ansible host 10.231.0.10:22 and its .heatsible/locks/bed.lock",
			m[0], first.cmd.Process.Pid, host, first.start.UTC().Format(time.RFC3339))
	}
	select {
	case <-first.done:
		t.Fatalf("the first run ended while the second was refused (exit %d):\n%s", first.code, tail(first.stderr(), 20))
	default:
	}
	code, out, errs, _ := first.wait(t, 5*time.Minute)
	if code != 0 {
		t.Fatalf("the first run: exit %d\n%s", code, tail(errs, 30))
	}
	parseRun(t, out)

	// Released, record emptied: the other machine's next run works.
	code, _, errs, _ = b.start(t, other, b.runArgs("--tags", "nfs_client")...).wait(t, 5*time.Minute)
	if code != 0 {
		t.Fatalf("the second machine after the first ended: exit %d\n%s", code, tail(errs, 30))
	}

	// A run killed on the first machine: the Ansible host frees the lock
	// (its connection is gone) but keeps the record, and the other machine
	// is refused until --break-lock, pointed at the killed run's record.
	killed := b.start(t, t.TempDir(), b.runArgs()...)
	killed.waitFor(t, "nfs_server : ", 3*time.Minute)
	killed.signal(t, syscall.SIGKILL)
	killed.wait(t, time.Minute)
	eventually(t, 45*time.Second, func() string {
		if left := b.staging(t); len(left) > 0 {
			return fmt.Sprintf("staging directories of the killed run on the Ansible host: %v", left)
		}
		return ""
	})
	var stale string
	eventually(t, 30*time.Second, func() string {
		code, _, errs, _ = b.start(t, other, b.runArgs()...).wait(t, 2*time.Minute)
		stale = errorOf(errs)
		if code == 6 && strings.Contains(stale, "is busy:") {
			return "the Ansible host still holds the killed run's lock: " + stale
		}
		return ""
	})
	t.Logf("the other machine after a run was killed on the first: exit %d\n%s", code, stale)
	want := fmt.Sprintf("the lock on the Ansible host 10.231.0.10:22 (%s) was left by a run that did not finish: instantiate-end (pid %d on %s, started ", m[7], killed.cmd.Process.Pid, host)
	if code != 6 || !strings.Contains(stale, want) || !strings.Contains(stale, "then re-run with --break-lock") || !strings.Contains(stale, "-instantiate-end on "+host+")") {
		t.Fatalf("after a killed run: exit %d, want 6 saying %q, naming its record and --break-lock\n%s", code, want, tail(errs, 20))
	}
	code, _, errs, _ = b.start(t, other, b.runArgs("--break-lock")...).wait(t, 5*time.Minute)
	if code != 0 || lineWith(errs, "breaking the lock of a run that did not finish") == "" {
		t.Fatalf("--break-lock from the other machine: exit %d (and it must say it broke the lock)\n%s", code, tail(errs, 30))
	}
}

// TestTwoClustersOneAnsibleHost: clusters bed and bed-b (the bed's
// topology under another name, whose staging names begin with bed's) run
// on one Ansible host at the same time, and neither loses its staging
// directory. bed-b's run is stopped while its bundle uploads (its marker
// is there, its ansible-playbook has not started, so no marker lock), and
// bed's run, which cleans bed's leftovers first, runs to the end meanwhile.
func TestTwoClustersOneAnsibleHost(t *testing.T) {
	b := needBed(t)
	topo, err := topology.Load(filepath.Join(b.dir, "topology.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	topo.Cluster = "bed-b"
	topoFile := filepath.Join(t.TempDir(), "topology.yaml")
	if err := topo.Save(topoFile); err != nil {
		t.Fatal(err)
	}
	argsB := setFlag(dropFlag(b.runArgs("--check"), "--stack"), "--topology", topoFile)
	t.Cleanup(func() {
		// bed-b's lock file on the Ansible host (bed's stays, as every
		// run leaves it).
		b.try("ansible", "rm", "-f", "/home/"+b.env["BED_USER"]+"/.heatsible/locks/bed-b.lock")
	})
	// The Ansible host is a container of this machine: its files are
	// here, and polling them is fast enough to catch an upload.
	runs := filepath.Join(b.dir, "bed", "hosts", "ansible", "root", "home", b.env["BED_USER"], ".heatsible", "runs")
	if _, err := os.Stat(filepath.Dir(runs)); err != nil {
		t.Skipf("the Ansible host's files are not under %s: %v", runs, err)
	}

	second := b.start(t, "", argsB...)
	var stage string
	deadline := time.Now().Add(3 * time.Minute)
	for stage == "" {
		if m, _ := filepath.Glob(filepath.Join(runs, "heatsible-bed-b-instantiate-end-*", ansible.MarkerFile)); len(m) > 0 {
			stage = filepath.Dir(m[0])
			break
		}
		select {
		case <-second.done:
			t.Fatalf("bed-b's run ended (exit %d) before its upload was seen:\n%s", second.code, tail(second.stderr(), 20))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no upload of bed-b seen on the Ansible host")
		}
		time.Sleep(time.Millisecond)
	}
	second.signal(t, syscall.SIGSTOP)
	stopped := true
	defer func() {
		if stopped {
			second.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	entries, _ := os.ReadDir(stage)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	t.Logf("bed-b stopped with its staging directory %s holding %v", filepath.Base(stage), names)

	code, out, errs, took := b.heatsible(t, b.runArgs("--tags", "nfs_client")...)
	t.Logf("bed's run while bed-b's is in its upload: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("bed's run: exit %d\n%s", code, tail(errs, 30))
	}
	parseRun(t, out)
	if _, err := os.Stat(stage); err != nil {
		t.Errorf("bed-b's staging directory after bed's run: %v", err)
	}
	second.cmd.Process.Signal(syscall.SIGCONT)
	stopped = false
	code, _, errs, _ = second.wait(t, 5*time.Minute)
	if code != 0 {
		t.Fatalf("bed-b's --check run: exit %d\n%s", code, tail(errs, 30))
	}
	if left := b.staging(t); len(left) > 0 {
		t.Errorf("staging directories left on the Ansible host: %v", left)
	}
}
