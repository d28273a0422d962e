package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// opArgs is "heatsible -o json -v run OP" on the bed's request, package,
// stack and known_hosts, plus extra.
func (b *bed) opArgs(op string, extra ...string) []string {
	args := []string{"-o", "json", "-v", "run", op,
		"--request", filepath.Join(b.dir, "request.json"),
		"--package", filepath.Join(b.dir, "package"),
		"--stack", b.env["HEATSIBLE_STACK"],
		"--known-hosts", filepath.Join(b.dir, "known_hosts")}
	return append(args, extra...)
}

// TestHealStorageServer: heal-start refuses while a claim is Bound to a PV
// (naming it, deleting nothing), refuses a Released PV until acknowledged,
// then unregisters the PVs; heal-end sets the server up again without
// formatting its volume and registers the PVs with the server's address.
func TestHealStorageServer(t *testing.T) {
	b := needBed(t)
	k := b.request(t).AdditionalParams.K
	want := len(k.PVs)
	if code, _, errs, _ := b.heatsible(t, b.runArgs()...); code != 0 {
		t.Fatalf("instantiate-end before the heal failed (exit %d):\n%s", code, tail(errs, 40))
	}
	checkPVs(t, b, want, "Available")
	// Data written before the heal must be there after it.
	nonce := fmt.Sprintf("heal-%d", time.Now().UnixNano())
	dir := k.Storage.Exports[0].Dir
	b.exec(t, "storage", "sh", "-c", fmt.Sprintf("printf %s > %s/%s.txt", nonce, dir, nonce))

	// A claim bound to the first PV.
	pv := strings.TrimSuffix(filepath.Base(k.PVs[0].Path), ".yaml")
	claim := fmt.Sprintf("heal-e2e-%d", time.Now().Unix())
	pvc := fmt.Sprintf(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":%q,"namespace":"default"},
"spec":{"accessModes":["ReadWriteMany"],"storageClassName":"","volumeName":%q,"resources":{"requests":{"storage":"1Gi"}}}}`, claim, pv)
	tmp := "/tmp/" + claim + ".json"
	t.Cleanup(func() {
		b.try("master-0", "rm", "-f", tmp)
		b.try("master-0", kubectlArgv("delete", "pvc", "-n", "default", claim, "--ignore-not-found")...)
	})
	b.exec(t, "master-0", "sh", "-c", fmt.Sprintf("cat > %s <<'EOF'\n%s\nEOF\nchmod 644 %s", tmp, pvc, tmp))
	b.kubectl(t, "apply", "-f", tmp)
	waitPhase(t, b, pv, "Bound")

	code, _, errs, took := b.heatsible(t, b.opArgs("heal-start", "--storage-server")...)
	t.Logf("heal-start with a Bound PV: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 6 {
		t.Fatalf("heal-start with a Bound PV: exit %d, want 6 (refused)\n%s", code, tail(errs, 40))
	}
	if !strings.Contains(errs, pv+" is Bound to claim default/"+claim) {
		t.Errorf("the refusal does not name %s and its claim default/%s:\n%s", pv, claim, tail(errs, 40))
	}
	checkPVs(t, b, want, "") // nothing deleted

	// The claim goes; its PV is Released and still refused.
	b.kubectl(t, "delete", "pvc", "-n", "default", claim, "--wait=true")
	waitPhase(t, b, pv, "Released")
	code, _, errs, _ = b.heatsible(t, b.opArgs("heal-start", "--storage-server")...)
	if code != 6 || !strings.Contains(errs, pv+" is Released from claim default/"+claim) || !strings.Contains(errs, "--delete-released") {
		t.Fatalf("heal-start with a Released PV: exit %d, want 6 naming it and --delete-released\n%s", code, tail(errs, 40))
	}
	checkPVs(t, b, want, "")

	// Acknowledged: the PVs are unregistered.
	code, _, errs, took = b.heatsible(t, b.opArgs("heal-start", "--storage-server", "--delete-released")...)
	t.Logf("heal-start --delete-released: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("heal-start --delete-released: exit %d\n%s", code, tail(errs, 40))
	}
	checkPVs(t, b, 0, "")

	// The "new" server: heal-end sets it up and registers the PVs again.
	code, out, errs, took := b.heatsible(t, b.opArgs("heal-end", "--storage-server")...)
	t.Logf("heal-end --storage-server: exit %d in %s\n%s", code, took.Round(time.Millisecond), out)
	if code != 0 {
		t.Fatalf("heal-end: exit %d\n%s", code, tail(errs, 40))
	}
	checkPVs(t, b, want, "Available")
	if got := b.exec(t, "storage", "cat", fmt.Sprintf("%s/%s.txt", dir, nonce)); got != nonce {
		t.Errorf("data written before the heal: %q, want %q", got, nonce)
	}
}

func waitPhase(t *testing.T, b *bed, pv, phase string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := strings.TrimSpace(b.kubectl(t, "get", "pv", pv, "-o", "jsonpath={.status.phase}"))
		if got == phase {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("PV %s is %s after 60 s, want %s", pv, got, phase)
		}
		time.Sleep(time.Second)
	}
}
