package roles

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeKubectl answers what pv_register's absent.yml asks kubectl: the API
// server's readiness, the PersistentVolumes (from $PVS), deletions (logged
// to $LOG, one line of arguments per call) and the wait until they are gone
// (at once). It ignores --kubeconfig FILE.
const fakeKubectl = `#!/bin/sh
if [ "$1" = --kubeconfig ]; then shift 2; fi
case "$*" in
*"get --raw /readyz"*) exit 0 ;;
*"get persistentvolumes -o json"*) cat "$PVS" ;;
*"delete persistentvolumes"*)
  echo "$*" >> "$LOG"
  for a in "$@"; do case "$a" in -*|delete|persistentvolumes) ;; *) echo "persistentvolume \"$a\" deleted" ;; esac; done ;;
*"get persistentvolumes --ignore-not-found -o name"*) ;;
*) echo "fake kubectl: unexpected: $*" >&2; exit 3 ;;
esac
`

// pvObject is a PersistentVolume as kubectl get -o json shows it.
func pvObject(name, phase, claim string, labelled bool, source map[string]any) map[string]any {
	meta := map[string]any{"name": name}
	if labelled {
		meta["labels"] = map[string]any{"app.kubernetes.io/managed-by": "heatsible"}
	}
	spec := map[string]any{"capacity": map[string]any{"storage": "1Gi"}}
	for k, v := range source {
		spec[k] = v
	}
	if claim != "" {
		ns, n, _ := strings.Cut(claim, "/")
		spec["claimRef"] = map[string]any{"namespace": ns, "name": n}
	}
	return map[string]any{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec, "status": map[string]any{"phase": phase}}
}

func nfsSource(server string) map[string]any {
	return map[string]any{"nfs": map[string]any{"server": server, "path": "/volume/nfs/x"}}
}

var csiSource = map[string]any{"csi": map[string]any{"driver": "nfs.manila.csi.openstack.org", "volumeHandle": "0fa1a6ae"}}

// TestPVRegisterHealGuard runs pv_register with pv_state=absent (heal-start
// of the storage server) on this machine against a fake kubectl: only the
// NFS PVs of this storage server (10.10.0.45) count. A Bound Manila CSI PV
// named in pv_manifests and a Bound NFS PV of another server (heatsible's
// label on it) neither block the heal nor are deleted; a Bound PV of this
// server still refuses it, naming that PV only, with nothing deleted.
func TestPVRegisterHealGuard(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook is not on PATH (CI installs Debian's ansible)")
	}
	roles, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	others := []map[string]any{
		pvObject("manila-share-pv", "Bound", "default/share-claim", true, csiSource),
		pvObject("other-server-pv", "Bound", "default/other-claim", true, nfsSource("10.20.0.9")),
		pvObject("not-ours", "Bound", "default/theirs", false, nfsSource("10.10.0.45")),
	}
	tests := []struct {
		name    string
		pvs     []map[string]any
		servers string
		deleted string // the delete call's arguments ("" none)
		refusal string // the refusal's PVs ("" none)
	}{
		{"only this server's PVs are unregistered", append([]map[string]any{
			pvObject("nfs-pv1", "Available", "", true, nfsSource("10.10.0.45")),
			pvObject("nfs-pv2", "Available", "", false, nfsSource("10.10.0.45")),
		}, others...), `["10.10.0.45"]`, "nfs-pv1 nfs-pv2", ""},
		{"a Bound PV of this server refuses", append([]map[string]any{
			pvObject("nfs-pv1", "Bound", "default/data", true, nfsSource("10.10.0.45")),
			pvObject("nfs-pv2", "Available", "", false, nfsSource("10.10.0.45")),
		}, others...), `["10.10.0.45"]`, "", "nfs-pv1 is Bound to claim default/data."},
		{"without server addresses, any NFS server counts (CSI still not)", append([]map[string]any{
			pvObject("nfs-pv1", "Available", "", true, nfsSource("10.10.0.45")),
		}, others[0]), `[]`, "nfs-pv1", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			kubectl := filepath.Join(dir, "kubectl")
			// The kubeconfig role wants a file to point kubectl at; the fake
			// kubectl never reads it.
			kubeconfig := filepath.Join(dir, "admin.conf")
			pvs := filepath.Join(dir, "pvs.json")
			log := filepath.Join(dir, "deletes.log")
			list, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": tc.pvs})
			if err != nil {
				t.Fatal(err)
			}
			for name, content := range map[string]string{
				kubectl: fakeKubectl, pvs: string(list), kubeconfig: "apiVersion: v1\nkind: Config\n",
				filepath.Join(dir, "site.yml"): "- hosts: localhost\n  gather_facts: false\n  roles:\n    - role: pv_register\n",
			} {
				if err := os.WriteFile(name, []byte(content), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			vars := `{"pv_state": "absent", "pv_manifests": [{"name": "nfs-pv1"}, {"name": "nfs-pv2"}, {"name": "manila-share-pv"}],
				"kubectl_bin": "` + kubectl + `", "kubectl_kubeconfig": "` + kubeconfig + `", "pv_register_nfs_servers": ` + tc.servers + `, "pv_wait_timeout": 4, "pv_wait_delay": 1}`
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "ansible-playbook", "-i", "localhost,", "-c", "local", "-e", vars, "site.yml")
			cmd.Dir = dir
			cmd.Env = append(ansibleEnv(t), "ANSIBLE_ROLES_PATH="+roles, "ANSIBLE_LOCALHOST_WARNING=false", "PVS="+pvs, "LOG="+log)
			out, err := cmd.CombinedOutput()
			deleted, _ := os.ReadFile(log)
			var got []string
			for _, a := range strings.Fields(string(deleted)) {
				if !strings.HasPrefix(a, "-") && a != "delete" && a != "persistentvolumes" {
					got = append(got, a)
				}
			}
			if tc.refusal != "" {
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "Refuse while a PersistentVolume is Bound or Released") {
					t.Fatalf("ansible-playbook: %v, want the refusal task to fail (exit 2)\n%s", err, out)
				}
				if !strings.Contains(strings.Join(strings.Fields(string(out)), " "), "nothing was deleted: "+tc.refusal) {
					t.Errorf("the refusal does not name exactly %q:\n%s", tc.refusal, out)
				}
			} else if err != nil {
				t.Fatalf("ansible-playbook: %v\n%s", err, out)
			}
			if strings.Join(got, " ") != tc.deleted {
				t.Errorf("deleted %q, want %q\n%s", got, tc.deleted, out)
			}
		})
	}
}
