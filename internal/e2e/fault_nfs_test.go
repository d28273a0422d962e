package e2e

import (
	"strings"
	"testing"
	"time"
)

// ganeshaKiller is the transient unit on the storage host that keeps
// nfs-ganesha dead once the run under test has started it.
const ganeshaKiller = "hs-ganesha-killer"

// TestNFSServerDownDuringVerify: nfs-ganesha dies (SIGKILL) right after
// nfs_server started it and before the role verified the exports. The run
// fails (exit 4) with a message naming the storage host, the exports and
// what to check, and stops there: no PV is touched. The next run starts
// ganesha again, verifies and completes.
//
// Deterministic: ganesha is stopped before the run, so the role's start task
// starts it; a watcher on the storage host (polling every 50 ms, far below
// the round trip of the next Ansible task) kills it as soon as systemd calls
// it active and keeps killing it until the test stops the watcher.
func TestNFSServerDownDuringVerify(t *testing.T) {
	b := needBed(t)
	storage := b.nodeAt(t, "10.231.0.11")
	exports := b.request(t).AdditionalParams.K.Storage.Exports
	t.Cleanup(func() {
		b.try("storage", "systemctl", "stop", ganeshaKiller)
		b.try("storage", "systemctl", "reset-failed", ganeshaKiller)
		b.try("storage", "systemctl", "reset-failed", "nfs-ganesha")
		b.try("storage", "systemctl", "start", "nfs-ganesha")
	})
	args := b.runArgs()
	pvs := func() string {
		return b.kubectl(t, "get", "pv", "-o", "jsonpath={range .items[*]}{.metadata.name} {.metadata.resourceVersion}{\"\\n\"}{end}")
	}
	before := pvs()

	b.try("storage", "systemctl", "reset-failed", ganeshaKiller)
	b.exec(t, "storage", "systemctl", "stop", "nfs-ganesha")
	b.exec(t, "storage", "systemd-run", "--unit="+ganeshaKiller, "--quiet", "/bin/sh", "-c",
		`until systemctl is-active -q nfs-ganesha; do sleep 0.05; done
		 while :; do systemctl kill --signal=KILL nfs-ganesha 2>/dev/null; sleep 0.2; done`)

	code, _, errs, took := b.heatsible(t, args...)
	t.Logf("ganesha killed once started: exit %d in %s\n%s", code, took.Round(time.Millisecond), errorOf(errs))
	if out, err := b.try("storage", "systemctl", "is-active", ganeshaKiller); err != nil {
		t.Fatalf("the watcher that kills ganesha is not running (%s): the test proves nothing", strings.TrimSpace(out))
	}
	if code != 4 {
		t.Fatalf("exit %d, want 4 (a task failed)\n%s", code, tail(errs, 30))
	}
	for _, want := range []string{"the NFS server (ganesha) on " + storage, "does not answer on", "systemctl status nfs-ganesha", "journalctl -u nfs-ganesha"} {
		if !strings.Contains(errs, want) {
			t.Errorf("the error does not say %q:\n%s", want, tail(errs, 20))
		}
	}
	for _, e := range exports {
		if !strings.Contains(errs, e.Dir) {
			t.Errorf("the error does not name the export %s:\n%s", e.Dir, tail(errs, 20))
		}
	}
	// The storage play is any_errors_fatal: nothing after it ran, and no PV
	// was (re-)registered against the server that failed its checks.
	if l := lineWith(errs, "pv_register :"); l != "" {
		t.Errorf("pv_register ran after the storage server failed: %s", l)
	}
	if after := pvs(); after != before {
		t.Errorf("the PVs changed although the storage server failed:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	b.exec(t, "storage", "systemctl", "stop", ganeshaKiller)
	code, _, errs, took = b.heatsible(t, args...)
	t.Logf("next run: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("the run after ganesha died: exit %d\n%s", code, tail(errs, 30))
	}
	for _, e := range exports {
		b.exec(t, "worker-0", "nfs-ls", "nfs://10.231.0.11"+e.Dir)
	}
}
