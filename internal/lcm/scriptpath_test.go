package lcm

import (
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/params"
)

// TestPrecheckScriptPath: precheck (run and plan, before the topology is
// read) refuses a script_path nothing would run for the operations that
// build the cluster, without --tags (--role sets them too), with exit code
// 2 and the field path; other operations, --tags, and requests whose
// cluster kubespray installs pass.
func TestPrecheckScriptPath(t *testing.T) {
	bare := &params.Request{Cluster: params.Cluster{ScriptPath: "Scripts/install_k8s_cluster.sh"}}
	noScript := &params.Request{}
	kubespray := &params.Request{Cluster: params.Cluster{ScriptPath: "Scripts/install_k8s_cluster.sh",
		Ansible: &params.Ansible{KubesprayRootPath: "/home/ansible/kubespray", TransferringInventoryPath: "inventory/mycluster/hosts.yaml"}}}
	ansibleOnly := &params.Request{Cluster: params.Cluster{ScriptPath: "Scripts/install_k8s_cluster.sh", Ansible: &params.Ansible{IPAddress: "10.10.0.5"}}}
	storageTags := []string{"cinder_volume", "nfs_server", "nfs_client", "pv_register"}
	tests := []struct {
		name    string
		op      Op
		req     *params.Request
		refused bool
	}{
		{"instantiate-end", Op{Name: OpInstantiateEnd}, bare, true},
		{"instantiate-end, ansible without kubespray", Op{Name: OpInstantiateEnd}, ansibleOnly, true},
		// heatsible's clean-up only; the kubeadm variant runs it without --tags
		{"heal-start --cluster", Op{Name: OpHealStart, Target: TargetCluster}, bare, false},
		{"heal-end --cluster", Op{Name: OpHealEnd, Target: TargetCluster}, bare, true},
		{"instantiate-end --tags (the kubeadm variant)", Op{Name: OpInstantiateEnd, Tags: storageTags}, bare, false},
		{"heal-end --cluster --tags", Op{Name: OpHealEnd, Target: TargetCluster, Tags: storageTags}, bare, false},
		{"instantiate-end --role k8s_vim", Op{Name: OpInstantiateEnd, Tags: []string{"k8s_vim"}}, bare, false},
		{"heal-start --storage-server", Op{Name: OpHealStart, Target: TargetStorageServer}, bare, false},
		{"heal-end --storage-server", Op{Name: OpHealEnd, Target: TargetStorageServer}, bare, false},
		{"heal-end --node", Op{Name: OpHealEnd, Target: TargetNode, Nodes: []string{"worker-0"}}, bare, false},
		{"scale-end", Op{Name: OpScaleEnd, Nodes: []string{"worker-2"}}, bare, false},
		{"scale-start", Op{Name: OpScaleStart, Nodes: []string{"worker-2"}}, bare, false},
		{"terminate-end", Op{Name: OpTerminateEnd}, bare, false},
		{"instantiate-end, kubespray installs", Op{Name: OpInstantiateEnd}, kubespray, false},
		{"heal-end --cluster, kubespray installs", Op{Name: OpHealEnd, Target: TargetCluster}, kubespray, false},
		{"instantiate-end, no script_path", Op{Name: OpInstantiateEnd}, noScript, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := precheck(tt.op, tt.req, "")
			if !tt.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("not refused")
			}
			if code := fail.Code(err); code != fail.Invalid {
				t.Errorf("exit code %d, want %d (invalid input)", code, fail.Invalid)
			}
			if !params.IsInvalid(err) {
				t.Errorf("not a problem list (no path for -o json's problems): %T", err)
			}
			if want := params.Prefix + `.script_path: "Scripts/install_k8s_cluster.sh" is Tacker's Kubernetes installation script, which heatsible does not run`; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q, want it to start %q", err, want)
			}
		})
	}
}
