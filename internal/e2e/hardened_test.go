package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHardenedClient: a node whose rpc-statd and rpcbind are masked (a
// CIS-hardened image) cannot mount an NFSv3 PersistentVolume that keeps
// remote locks: mount.nfs needs rpc.statd, which needs rpcbind. heatsible's
// nfs_client reported such a node ready and the kubelet's mounts failed
// later. Now, with a PV whose mountOptions ask for NFSv3, the run fails
// (exit 4) on that node before anything is installed, in check mode too,
// naming the units, the PV and the fix; with NFSv4.1 the same node passes
// (and gets nfs-common) with its units left masked (issue 28).
//
// The bed stands for the hardened image by masking (and stopping) the three
// units on a worker, as CIS's remediation does for rpcbind; a control step
// shows that mount.nfs then refuses an NFSv3 mount there with the message
// the kubelet would get, with and without local_lock=all.
func TestHardenedClient(t *testing.T) {
	b := needBed(t)
	const host = "worker-1"
	const units = "rpc-statd.service rpcbind.service rpcbind.socket"
	ip := strings.Fields(b.exec(t, host, "hostname", "-I"))[0]
	node := b.nodeAt(t, ip)
	active := strings.Fields(b.exec(t, host, "sh", "-c", "for u in "+units+"; do systemctl is-active -q $u && echo $u; done; true"))
	// Registered before anything changes: the units unmasked and, those
	// that ran, running again; no rpc.statd left from the control step;
	// nfs-common installed, as the bed made the worker.
	t.Cleanup(func() {
		script := `systemctl unmask ` + units + ` >/dev/null 2>&1
systemctl daemon-reload
if [ -s /run/rpc.statd.pid ] && ! systemctl is-active -q rpc-statd.service; then kill "$(cat /run/rpc.statd.pid)" 2>/dev/null; rm -f /run/rpc.statd.pid; fi
rmdir /mnt/hs-e2e-nfs3 2>/dev/null
dpkg-query -W -f='${Status}' nfs-common 2>/dev/null | grep -q 'install ok installed' || DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 apt-get install -y -q --no-install-recommends nfs-common >/dev/null
`
		if len(active) > 0 {
			script += "systemctl start " + strings.Join(active, " ") + "\n"
		}
		if out, err := b.try(host, "sh", "-c", script); err != nil {
			t.Errorf("putting %s back: %v\n%s", host, err, out)
		}
	})
	b.exec(t, host, "sh", "-c", "systemctl stop "+units+" && systemctl mask "+units+" >/dev/null")

	// The bed shows it: mount.nfs refuses NFSv3 with locks there, before
	// it contacts the server (so the address needs no answer), also with
	// local_lock=all.
	export := b.request(t).AdditionalParams.K.Storage.Exports[0].Dir
	for _, o := range []string{"nfsvers=3", "nfsvers=3,local_lock=all"} {
		out, err := b.try(host, "sh", "-c", "mkdir -p /mnt/hs-e2e-nfs3 && timeout 60 mount -t nfs -o "+o+",retry=0 10.231.0.11:"+export+" /mnt/hs-e2e-nfs3 2>&1")
		if err == nil || !strings.Contains(out, "rpc.statd is not running but is required for remote locking") {
			b.try(host, "umount", "/mnt/hs-e2e-nfs3")
			t.Fatalf("the bed cannot show it: mount -o %s on %s with %s masked: %v\n%s", o, host, units, err, out)
		}
	}

	// A node that lacks nfs-common, so that an install would show.
	b.removeNFSClient(t, host)
	state := func() string {
		return b.exec(t, host, "sh", "-c", "systemctl show -p Id -p LoadState -p UnitFileState -p ActiveState -- "+units+
			"; dpkg-query -W -f='${Status}\\n' nfs-common 2>&1; stat -c '%n %Y' /var/lib/dpkg/status /etc/systemd/system")
	}
	before := state()

	req := b.requestDoc(t)
	k := req["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)
	first := k["pv_registration_params"].([]any)[0].(map[string]any)["pv_manifest_file_path"].(string)
	pv := strings.TrimSuffix(filepath.Base(first), filepath.Ext(first))
	withOptions := func(opt string) string {
		t.Helper()
		pkg := b.copyPackage(t)
		path := filepath.Join(pkg, first)
		m, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.Replace(string(m), "\nspec:\n", "\nspec:\n  mountOptions:\n    - "+opt+"\n", 1)
		if edited == string(m) {
			t.Fatalf("%s has no \"spec:\" line:\n%s", first, m)
		}
		if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
			t.Fatal(err)
		}
		return pkg
	}
	want := node + ": rpc-statd.service, rpcbind.service and rpcbind.socket are masked (systemd), but PersistentVolume " + pv +
		" (spec.mountOptions: nfsvers=3) mounts with NFSv3 and remote locks, which need rpc.statd and rpcbind running on every node that mounts it: " +
		"the kubelet's mounts would fail there (mount.nfs: rpc.statd is not running but is required for remote locking). Nothing was changed by nfs_client. " +
		"Either unmask them on the node, if your hardening allows it (systemctl unmask rpc-statd.service rpcbind.service rpcbind.socket), " +
		"or mount that PersistentVolume with NFSv4 (nfsvers=4.1) or without remote locks (nolock) in its manifest; then re-run."

	nfs3 := withOptions("nfsvers=3")
	for _, check := range []bool{false, true} {
		args := setFlag(b.runArgs("--tags", "nfs_client"), "--package", nfs3)
		what := "nfsvers=3"
		if check {
			args, what = append(args, "--check"), "nfsvers=3 --check"
		}
		code, _, errs, took := b.heatsible(t, args...)
		t.Logf("%s on a hardened %s: exit %d in %s\n%s", what, host, code, took.Round(time.Millisecond), lineWith(errs, "are masked"))
		if code != 4 {
			t.Fatalf("%s: exit %d, want 4\n%s", what, code, tail(errs, 30))
		}
		if flat := strings.Join(strings.Fields(errs), " "); !strings.Contains(flat, want) {
			t.Errorf("%s: the failure does not say\n%s\n%s", what, want, tail(errs, 30))
		}
		if after := state(); after != before {
			t.Errorf("%s changed %s:\nbefore:\n%s\nafter:\n%s", what, host, before, after)
		}
	}

	// NFSv4.1: no statd needed; the node gets nfs-common, its units stay
	// masked.
	code, _, errs, took := b.heatsible(t, setFlag(b.runArgs("--tags", "nfs_client"), "--package", withOptions("nfsvers=4.1"))...)
	t.Logf("nfsvers=4.1 on a hardened %s: exit %d in %s", host, code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("nfsvers=4.1: exit %d, want 0\n%s", code, tail(errs, 30))
	}
	if !b.nfsClient(host) {
		t.Errorf("%s has no NFS client after the nfsvers=4.1 run", host)
	}
	if got := b.exec(t, host, "sh", "-c", "systemctl show -p LoadState --value -- "+units+" | sort -u"); strings.TrimSpace(got) != "masked" {
		t.Errorf("the units of %s after the run: %q, want still masked", host, got)
	}
}
