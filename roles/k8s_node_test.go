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

// fakeNodeKubectl answers what k8s_node asks kubectl: the Nodes (from
// $NODES), drains and deletes (each logged to $LOG as one line of
// arguments, answered as kubectl answers). It ignores --kubeconfig FILE.
const fakeNodeKubectl = `#!/bin/sh
if [ "$1" = --kubeconfig ]; then shift 2; fi
case "$1 $2" in
"get nodes") cat "$NODES" ;;
"drain "*) echo "$*" >> "$LOG"; echo "node/$2 cordoned"; echo "node/$2 drained" ;;
"delete node") echo "$*" >> "$LOG"; echo "node \"$3\" deleted" ;;
*) echo "fake kubectl: unexpected: $*" >&2; exit 3 ;;
esac
`

// node is a Node as kubectl get -o json shows it; ip "" has no addresses
// (the kubespray stand-in's Nodes).
func node(name, ip string) map[string]any {
	n := map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": name}, "spec": map[string]any{}}
	if ip != "" {
		n["status"] = map[string]any{"addresses": []any{
			map[string]any{"type": "InternalIP", "address": ip},
			map[string]any{"type": "Hostname", "address": name},
		}}
	}
	return n
}

// TestK8sNodeMatchesInternalIP runs k8s_node on this machine against a fake
// kubectl. A cluster built by Tacker's kubeadm scripts names its Nodes
// worker<last octet>, not after heatsible's inventory: the node is found by
// its InternalIP and drained or deleted under the Node's own name (before,
// the role reported "not in the cluster" and succeeded without draining).
// A node that two Node objects stand for (one by name, one by address) is
// refused with nothing drained; a node with neither is reported and
// skipped.
func TestK8sNodeMatchesInternalIP(t *testing.T) {
	roles := needRootAnsible(t)
	tacker := []map[string]any{node("master12", "10.10.0.12"), node("worker20", "10.10.0.20"), node("worker21", "10.10.0.21")}
	tests := []struct {
		name    string
		nodes   []map[string]any
		state   string
		calls   string // the kubectl calls that change something, one per line
		refusal string
		report  string
	}{
		{"drain by InternalIP under a Tacker-style name", tacker, "drained",
			"drain worker20 --ignore-daemonsets --delete-emptydir-data --timeout=300s", "",
			"node workernode-a1 is Node worker20 (by its InternalIP 10.10.0.20)"},
		{"delete by InternalIP under a Tacker-style name", tacker, "absent",
			"delete node worker20 --ignore-not-found --wait=true", "", "node workernode-a1 is Node worker20"},
		{"by name, as kubespray registers them", []map[string]any{node("workernode-a1", ""), node("worker21", "10.10.0.21")}, "drained",
			"drain workernode-a1 --ignore-daemonsets --delete-emptydir-data --timeout=300s", "", "node workernode-a1 is Node workernode-a1 (by name)"},
		{"two Node objects for one host: refused", []map[string]any{node("workernode-a1", "10.10.0.99"), node("worker20", "10.10.0.20")}, "drained",
			"", "workernode-a1 matches Node workernode-a1 by name and Node worker20 by its InternalIP 10.10.0.20", ""},
		{"neither name nor address: nothing to do", []map[string]any{node("worker21", "10.10.0.21")}, "absent",
			"", "", "node workernode-a1 is not in the cluster (no Node has its name or InternalIP 10.10.0.20"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			kubectl := filepath.Join(dir, "kubectl")
			kubeconfig := filepath.Join(dir, "admin.conf")
			nodesFile := filepath.Join(dir, "nodes.json")
			log := filepath.Join(dir, "calls.log")
			list, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": tc.nodes})
			if err != nil {
				t.Fatal(err)
			}
			for name, content := range map[string]string{
				kubectl: fakeNodeKubectl, nodesFile: string(list), kubeconfig: "apiVersion: v1\nkind: Config\n",
				filepath.Join(dir, "site.yml"): "- hosts: localhost\n  gather_facts: false\n  roles:\n    - role: k8s_node\n",
			} {
				if err := os.WriteFile(name, []byte(content), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			vars := `{"k8s_node_names": ["workernode-a1"], "k8s_node_addresses": {"workernode-a1": "10.10.0.20"},
				"k8s_node_state": "` + tc.state + `", "kubectl_bin": "` + kubectl + `", "kubectl_kubeconfig": "` + kubeconfig + `"}`
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "ansible-playbook", "-i", "localhost,", "-c", "local", "-e", vars, "site.yml")
			cmd.Dir = dir
			cmd.Env = append(ansibleEnv(t), "ANSIBLE_ROLES_PATH="+roles, "ANSIBLE_LOCALHOST_WARNING=false", "NODES="+nodesFile, "LOG="+log)
			out, err := cmd.CombinedOutput()
			calls, _ := os.ReadFile(log)
			flat := strings.Join(strings.Fields(string(out)), " ")
			if tc.refusal != "" {
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(flat, "Refuse when a node matches more than one Node object") {
					t.Fatalf("ansible-playbook: %v, want the refusal task to fail (exit 2)\n%s", err, out)
				}
				if !strings.Contains(flat, tc.refusal) {
					t.Errorf("the refusal does not say %q:\n%s", tc.refusal, out)
				}
			} else if err != nil {
				t.Fatalf("ansible-playbook: %v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(calls)); got != tc.calls {
				t.Errorf("kubectl calls:\n got %q\nwant %q\n%s", got, tc.calls, out)
			}
			if tc.report != "" && !strings.Contains(flat, tc.report) {
				t.Errorf("the output does not say %q:\n%s", tc.report, out)
			}
		})
	}
}
