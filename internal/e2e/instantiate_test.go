package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// request is the part of the bed's request.json the assertions need.
type request struct {
	AdditionalParams struct {
		K struct {
			Storage struct {
				Volumes []struct {
					Resource string `json:"volume_resource_id"`
					MountTo  string `json:"mount_to"`
				} `json:"cinder_volume_setup_params"`
				Exports []struct {
					Dir string `json:"export_dir"`
				} `json:"nfs_server_setup_params"`
			} `json:"storage_server"`
			PVs []struct {
				Path string `json:"pv_manifest_file_path"`
			} `json:"pv_registration_params"`
		} `json:"k8s_cluster_installation_param"`
	} `json:"additionalParams"`
}

func (b *bed) request(t *testing.T) request {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.dir, "request.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r request
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (b *bed) runArgs(extra ...string) []string {
	return b.opArgs("instantiate-end", extra...)
}

// TestInstantiateEnd runs instantiate-end from Heat discovery to Available
// PVs through the bed's Ansible host, checks every effect on the hosts, then
// re-runs it (remote, then local) and checks nothing changed and no data was
// lost.
func TestInstantiateEnd(t *testing.T) {
	b := needBed(t)
	req := b.request(t)
	k := req.AdditionalParams.K
	workers := strings.Fields(b.exec(t, "master-0", "sh", "-c", "getent hosts | awk '$2 ~ /^worker-/ {print $2}'"))
	if len(workers) == 0 {
		t.Fatal("no workers in master-0's /etc/hosts")
	}
	// The base image has the NFS client; take it off one worker so the
	// nfs_client role has real work to do.
	victim := workers[len(workers)-1]
	b.exec(t, victim, "apt-get", "purge", "-y", "-q", "nfs-common")

	code, out, errs, took := b.heatsible(t, b.runArgs()...)
	t.Logf("first run (remote): exit %d in %s\n%s", code, took.Round(time.Millisecond), out)
	if code != 0 {
		t.Fatalf("first run failed (exit %d):\n%s", code, tail(errs, 60))
	}
	first := parseRun(t, out)
	if !strings.HasPrefix(first.Where, "ansible host 10.231.0.10") {
		t.Errorf("ran %q, want on the bed's Ansible host", first.Where)
	}

	// The volume: ext4, mounted at mount_to, in fstab.
	for _, v := range k.Storage.Volumes {
		fstype := strings.TrimSpace(b.exec(t, "storage", "findmnt", "-n", "-o", "FSTYPE", "--mountpoint", v.MountTo))
		if fstype != "ext4" {
			t.Errorf("%s: mounted file system %q, want ext4", v.MountTo, fstype)
		}
		fstab := b.exec(t, "storage", "cat", "/etc/fstab")
		if !fstabHas(fstab, v.MountTo) {
			t.Errorf("%s is not in /etc/fstab:\n%s", v.MountTo, fstab)
		}
	}

	// Every export is served: a real NFS client on a worker writes a file
	// that the storage host reads from its disk.
	nonce := fmt.Sprintf("e2e-%d", time.Now().UnixNano())
	for _, e := range k.Storage.Exports {
		name := nonce + ".txt"
		b.exec(t, workers[0], "sh", "-c", fmt.Sprintf("printf '%%s' %s > /tmp/%s && nfs-cp /tmp/%s nfs://10.231.0.11%s/%s", nonce, name, name, e.Dir, name))
		got := b.exec(t, "storage", "cat", e.Dir+"/"+name)
		if got != nonce {
			t.Errorf("%s: read %q on the storage host, want %q", e.Dir, got, nonce)
		}
	}

	// The NFS client on the master and on every worker.
	for _, h := range append([]string{"master-0"}, workers...) {
		st := b.exec(t, h, "dpkg-query", "-W", "-f=${Status}", "nfs-common")
		if st != "install ok installed" {
			t.Errorf("%s: nfs-common %q", h, st)
		}
	}

	// Every PV Available, pointing at the storage server.
	checkPVs(t, b, len(k.PVs), "Available")

	// Second run: converged, nothing changes, the data is still there.
	code, out, errs, took = b.heatsible(t, b.runArgs()...)
	t.Logf("second run (remote): exit %d in %s\n%s", code, took.Round(time.Millisecond), out)
	if code != 0 {
		t.Fatalf("second run failed (exit %d):\n%s", code, tail(errs, 60))
	}
	checkNoChange(t, parseRun(t, out))
	checkData(t, b, k.Storage.Exports, nonce)

	// The local runner: ansible-playbook on this machine.
	code, out, errs, took = b.heatsible(t, b.runArgs("--local")...)
	t.Logf("third run (local): exit %d in %s\n%s", code, took.Round(time.Millisecond), out)
	if code != 0 {
		t.Fatalf("local run failed (exit %d):\n%s", code, tail(errs, 60))
	}
	r := parseRun(t, out)
	if r.Where != "local" {
		t.Errorf("ran %q, want local", r.Where)
	}
	checkNoChange(t, r)
	checkData(t, b, k.Storage.Exports, nonce)
	checkPVs(t, b, len(k.PVs), "Available")
}

func fstabHas(fstab, mountpoint string) bool {
	for _, line := range strings.Split(fstab, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && !strings.HasPrefix(f[0], "#") && f[1] == mountpoint && f[2] == "ext4" {
			return true
		}
	}
	return false
}

func checkNoChange(t *testing.T, r runResult) {
	t.Helper()
	if len(r.Recap) == 0 {
		t.Fatal("no recap")
	}
	for h, rc := range r.Recap {
		if rc.Changed != 0 || rc.Failed != 0 || rc.Unreachable != 0 {
			t.Errorf("%s: changed=%d failed=%d unreachable=%d, want all 0 on a re-run", h, rc.Changed, rc.Failed, rc.Unreachable)
		}
	}
}

func checkData(t *testing.T, b *bed, exports []struct {
	Dir string `json:"export_dir"`
}, nonce string) {
	t.Helper()
	for _, e := range exports {
		if got, err := b.try("storage", "cat", e.Dir+"/"+nonce+".txt"); err != nil || got != nonce {
			t.Errorf("%s/%s.txt after a re-run: %q, %v (data lost?)", e.Dir, nonce, got, err)
		}
	}
}

// checkPVs checks the PVs heatsible registered: how many, their phase
// (any, if phase is ""), and their NFS server.
func checkPVs(t *testing.T, b *bed, want int, phase string) {
	t.Helper()
	var list struct {
		Items []struct {
			Metadata struct{ Name string }
			Spec     struct {
				NFS *struct{ Server, Path string }
			}
			Status struct{ Phase string }
		}
	}
	out := b.kubectl(t, "get", "pv", "-l", "app.kubernetes.io/managed-by=heatsible", "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("kubectl get pv: %v\n%s", err, out)
	}
	if len(list.Items) != want {
		t.Errorf("%d PVs labelled managed-by=heatsible, want %d", len(list.Items), want)
	}
	for _, pv := range list.Items {
		if phase != "" && pv.Status.Phase != phase {
			t.Errorf("PV %s is %s, want %s", pv.Metadata.Name, pv.Status.Phase, phase)
		}
		if pv.Spec.NFS == nil || pv.Spec.NFS.Server != "10.231.0.11" {
			t.Errorf("PV %s: spec.nfs = %+v, want server 10.231.0.11 (the storage server's CP)", pv.Metadata.Name, pv.Spec.NFS)
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
