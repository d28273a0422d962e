package lcm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestNFSClientNLMPVs: the NFS PVs whose mounts need rpc.statd (NFSv3 with
// remote locks) reach nfs_client as nfs_client_nlm_pvs, with their mount
// options and where they came from; with none (the NFSv4 default) the
// variable is not set at all, so the role asks systemd nothing (issue 28,
// hardened nodes).
func TestNFSClientNLMPVs(t *testing.T) {
	pv := func(name, extra string) string {
		return "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: " + name + "\n" + extra +
			"spec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteMany]\n  nfs: {server: 0.0.0.0, path: /volume/nfs/x}\n"
	}
	tests := []struct {
		name, pv1, pv2 string
		want           string // the group var, as YAML; "" for none
	}{
		{"no mount options", pv("nfs-pv1", ""), pv("nfs-pv2", ""), ""},
		{"NFSv4.1 and NFSv3 without locks", pv("nfs-pv1", "") + "  mountOptions: [nfsvers=4.1]\n", pv("nfs-pv2", "") + "  mountOptions: [nfsvers=3, nolock]\n", ""},
		{"NFSv3 with locks", pv("nfs-pv1", "") + "  mountOptions: [nfsvers=3, hard]\n", pv("nfs-pv2", "") + "  mountOptions: [nfsvers=4.1]\n",
			"- name: nfs-pv1\n  mount_options: [nfsvers=3, hard]\n  field: spec.mountOptions\n"},
		{"both, one by its annotation", pv("nfs-pv1", "") + "  mountOptions: [vers=3]\n", pv("nfs-pv2", "  annotations: {volume.beta.kubernetes.io/mount-options: \"v3,local_lock=all\"}\n"),
			"- name: nfs-pv1\n  mount_options: [vers=3]\n  field: spec.mountOptions\n" +
				"- name: nfs-pv2\n  mount_options: [v3, local_lock=all]\n  field: metadata.annotations[volume.beta.kubernetes.io/mount-options]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkg := t.TempDir()
			if out, err := exec.Command("cp", "-a", "../../testdata/package/.", pkg).CombinedOutput(); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			// The fixture's CSI PV is not the kubelet's NFS mount: never listed.
			for f, doc := range map[string]string{"nfs-pv1.yaml": tt.pv1, "nfs-pv2.yaml": tt.pv2} {
				if err := os.WriteFile(filepath.Join(pkg, "Files", "kubernetes", f), []byte(doc), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			req, topo := fixture(t, "valid")
			f, err := RenderOp(req, topo, pkg, Op{Name: OpInstantiateEnd}, "test")
			if err != nil {
				t.Fatal(err)
			}
			var all map[string]any
			if err := yaml.Unmarshal(f.GroupVars["all"], &all); err != nil {
				t.Fatal(err)
			}
			got, ok := all["nfs_client_nlm_pvs"]
			if tt.want == "" {
				if ok {
					t.Fatalf("nfs_client_nlm_pvs = %v, want it unset", got)
				}
				return
			}
			var want any
			if err := yaml.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			gy, _ := yaml.Marshal(got)
			wy, _ := yaml.Marshal(want)
			if string(gy) != string(wy) {
				t.Errorf("nfs_client_nlm_pvs =\n%s\nwant\n%s\ngroup_vars/all:\n%s", gy, wy, f.GroupVars["all"])
			}
			if !strings.Contains(string(f.GroupVars["all"]), "nfs_client_nlm_pvs:") {
				t.Errorf("group_vars/all has no nfs_client_nlm_pvs:\n%s", f.GroupVars["all"])
			}
		})
	}
}
