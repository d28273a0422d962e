package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMDuringRun: a hook's SIGTERM while ansible-playbook runs on the
// Ansible host makes heatsible stop it, remove the staging directory there
// (with its 0600 secrets file) and the local bundle, release the lock and
// exit 130; nothing of the run is left on the Ansible host or here, and the
// next run works without --break-lock.
func TestSIGTERMDuringRun(t *testing.T) {
	b := needBed(t)
	if p := os.Getenv("HEATSIBLE_TEST_BINARY"); p != "" {
		b.bin = p // another build, e.g. an older one, to see this test fail on it
	}
	left := b.staging(t) // left by other tests' killed runs: not this one's business
	state, tmp := t.TempDir(), t.TempDir()
	cmd := b.command(t, state, b.runArgs()...)
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp) // the local bundle goes there
	r := startCmd(t, cmd)
	r.waitFor(t, "nfs_server : ", 3*time.Minute) // mid-run
	var staged []string
	for _, d := range b.staging(t) {
		if !slices.Contains(left, d) {
			staged = append(staged, d)
		}
	}
	bundles, _ := filepath.Glob(filepath.Join(tmp, "heatsible-*"))
	if len(staged) != 1 || len(bundles) != 1 {
		t.Fatalf("during the run: staging directories %v on the Ansible host, local bundles %v; want one of each", staged, bundles)
	}

	r.signal(t, syscall.SIGTERM)
	sent := time.Now()
	code, out, errs, _ := r.wait(t, 2*time.Minute)
	t.Logf("SIGTERM: exit %d %s after the signal\n%s", code, time.Since(sent).Round(time.Millisecond), errorOf(errs))
	if code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, tail(errs, 30))
	}
	if !strings.Contains(errs, "heatsible: SIGTERM: stopping:") || !strings.HasPrefix(errorOf(errs), "interrupted by SIGTERM: running ansible-playbook on ") {
		t.Errorf("stderr does not say the run was interrupted by SIGTERM:\n%s", tail(errs, 20))
	}
	if res := parseRun(t, out); res.ExitCode != 130 || res.OK {
		t.Errorf("run document: ok %v, exit_code %d; want false, 130", res.OK, res.ExitCode)
	}

	// Gone as heatsible exits: no waiting for the Ansible host's watchdog.
	dir := strings.Split(staged[0], "|")[0]
	if out, _ := b.try("ansible", "sh", "-c", "ls -d "+dir+" 2>/dev/null; pgrep -a -f '[a]nsible-playbook'"); strings.TrimSpace(out) != "" {
		t.Errorf("still on the Ansible host after heatsible exited: %s", out)
	}
	// Nor any process naming it (ssh names the known_hosts there), also
	// outside the session's group: under ansible-core 2.19 the workers,
	// and the ssh of a password login (SSH_ASKPASS), have sessions of
	// their own. "[/]..." does not match this pgrep's own shell. Not
	// fatal: the next run below is what puts the bed back after the
	// interrupted one.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, _ := b.try("ansible", "pgrep", "-a", "-f", "[/]"+strings.TrimPrefix(dir, "/"))
		if strings.TrimSpace(out) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("after 10s: processes of the run still on the Ansible host: %s", out)
			break
		}
	}
	if now, _ := filepath.Glob(filepath.Join(tmp, "heatsible-*")); len(now) > 0 {
		t.Errorf("local bundles left: %v", now)
	}
	locks, _ := filepath.Glob(filepath.Join(state, "*.lock"))
	if len(locks) != 1 {
		t.Errorf("lock files: %v, want the cluster's", locks)
	}
	for _, l := range locks {
		if b, err := os.ReadFile(l); err != nil || strings.TrimSpace(string(b)) != "" {
			t.Errorf("the cluster lock %s after the run: %q (%v), want released (empty)", l, b, err)
		}
	}

	code, out, errs, took := b.start(t, state, b.runArgs()...).wait(t, 5*time.Minute)
	t.Logf("next run: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("the run after the SIGTERM failed (exit %d):\n%s", code, tail(errs, 40))
	}
	parseRun(t, out)
	checkPVs(t, b, len(b.request(t).AdditionalParams.K.PVs), "Available")
}
