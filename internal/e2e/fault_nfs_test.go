package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestNFSServerDownDuringVerify: nfs-ganesha dies (SIGKILL) right after
// nfs_server started it and before the role verified the exports. The run
// fails (exit 4) with a message naming the storage host, the exports and
// what to check; the next run starts ganesha again and verifies.
func TestNFSServerDownDuringVerify(t *testing.T) {
	b := needBed(t)
	storage := b.nodeAt(t, "10.231.0.11")
	exports := b.request(t).AdditionalParams.K.Storage.Exports
	t.Cleanup(func() {
		b.try("storage", "systemctl", "reset-failed", "nfs-ganesha")
		b.try("storage", "systemctl", "start", "nfs-ganesha")
	})
	args := b.runArgs("--tags", "cinder_volume,nfs_server")

	r := b.start(t, "", args...)
	r.waitFor(t, "nfs_server : Enable and start the NFS server", 3*time.Minute)
	b.exec(t, "storage", "systemctl", "kill", "--signal=KILL", "nfs-ganesha")
	killed := time.Now()
	code, _, errs, took := r.wait(t, 3*time.Minute)
	t.Logf("ganesha killed before the verification: exit %d in %s (%s after the kill)\n%s", code, took.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond), errorOf(errs))
	if code == 0 {
		t.Fatal("the run passed: the verification finished before ganesha was killed (the kill came too late)")
	}
	if code != 4 {
		t.Fatalf("exit %d, want 4 (a task failed)\n%s", code, tail(errs, 30))
	}
	for _, want := range []string{"the NFS server (ganesha) on " + storage, "systemctl status nfs-ganesha", "journalctl -u nfs-ganesha"} {
		if !strings.Contains(errs, want) {
			t.Errorf("the error does not say %q:\n%s", want, tail(errs, 20))
		}
	}
	for _, e := range exports {
		if !strings.Contains(errs, e.Dir) {
			t.Errorf("the error does not name the export %s:\n%s", e.Dir, tail(errs, 20))
		}
	}

	code, _, errs, took = b.heatsible(t, args...)
	t.Logf("next run: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("the run after ganesha died: exit %d\n%s", code, tail(errs, 30))
	}
	for _, e := range exports {
		b.exec(t, "worker-0", "nfs-ls", "nfs://10.231.0.11"+e.Dir)
	}
}
