package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestNoStorageServerNoNFSClient: a request without storage_server (and
// without pv_registration_params) installs no NFS client, as Tacker's
// driver: instantiate-end exits 0 and leaves a worker without nfs-common as
// it was, and plan says so in its note (issue 28).
func TestNoStorageServerNoNFSClient(t *testing.T) {
	b := needBed(t)
	const host = "worker-1"
	// Registered before anything changes: the worker with nfs-common, as
	// the bed made it.
	t.Cleanup(func() {
		if out, err := b.try(host, "sh", "-c", `dpkg-query -W -f='${Status}' nfs-common 2>/dev/null | grep -q 'install ok installed' || DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 apt-get install -y -q --no-install-recommends nfs-common >/dev/null`); err != nil {
			t.Errorf("putting nfs-common back on %s: %v\n%s", host, err, out)
		}
	})
	req := b.requestDoc(t)
	k := req["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)
	delete(k, "storage_server")
	delete(k, "pv_registration_params")
	reqFile := writeRequest(t, req)
	const note = "there is no storage_server and no pv_registration_params, so heatsible runs none of its storage roles"

	plan := setFlag(b.runArgs(), "--request", reqFile)
	for i, a := range plan {
		if a == "run" {
			plan[i] = "plan"
		}
	}
	plan = dropFlag(plan, "--known-hosts")
	code, out, errs, _ := b.heatsible(t, plan...)
	if code != 0 || !strings.Contains(out+errs, note) || strings.Contains(out, `"nfs_client"`) {
		t.Fatalf("plan: exit %d, want 0 with the note and no nfs_client step\nstdout:\n%s\nstderr:\n%s", code, tail(out, 40), tail(errs, 20))
	}

	b.exec(t, host, "sh", "-c", "DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 apt-get purge -y -q nfs-common >/dev/null 2>&1")
	code, out, errs, took := b.heatsible(t, setFlag(b.runArgs(), "--request", reqFile)...)
	t.Logf("instantiate-end without storage_server: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, tail(errs, 30))
	}
	if strings.Contains(out, "nfs_client") {
		t.Errorf("the run played nfs_client:\n%s", tail(out, 40))
	}
	if st, _ := b.try(host, "dpkg-query", "-W", "-f=${Status}", "nfs-common"); strings.Contains(st, "install ok installed") {
		t.Errorf("nfs-common on %s: %q, want left uninstalled", host, st)
	}
}
