package lcm

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/hostpattern"
)

// limitInventory is shaped like the inventory heatsible writes.
const limitInventory = `all:
  hosts:
    master-0: {ansible_host: 10.0.0.10}
    worker-1: {ansible_host: 10.0.0.21}
    worker-2: {ansible_host: 10.0.0.22}
    storage-server: {ansible_host: 10.0.0.45}
  children:
    kube_control_plane: {hosts: {master-0: {}}}
    etcd: {hosts: {master-0: {}}}
    kube_node: {hosts: {worker-1: {}, worker-2: {}}}
    calico_rr: {}
    k8s_cluster: {children: {kube_control_plane: {}, kube_node: {}, calico_rr: {}}}
    nfs_server: {hosts: {storage-server: {}}}
    nfs_client: {children: {kube_control_plane: {}, kube_node: {}}}
`

const limitPlaybook = "- name: everything\n  hosts: all\n  gather_facts: false\n  tasks:\n    - name: nothing\n      ansible.builtin.meta: noop\n"

// ansibleHosts is what the real ansible-playbook --list-hosts makes of
// limit: the hosts of a play on all, sorted (nil when it leaves none).
func ansibleHosts(t *testing.T, dir, limit string) []string {
	t.Helper()
	cmd := exec.Command("ansible-playbook", "-i", filepath.Join(dir, "inv.yml"), "--list-hosts", "--limit", limit, filepath.Join(dir, "pb.yml"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ANSIBLE_NOCOLOR=1")
	out, _ := cmd.CombinedOutput()
	var hosts []string
	in := false
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "hosts ("):
			in = true
		case in && l != "":
			hosts = append(hosts, l)
		}
	}
	if !in && !strings.Contains(string(out), "no hosts") {
		t.Fatalf("ansible-playbook --list-hosts --limit %q:\n%s", limit, out)
	}
	slices.Sort(hosts)
	return hosts
}

// TestPlanLimitAgreesWithAnsible: the hosts plan says a --limit leaves are
// the hosts the real ansible-playbook runs on, for every form of the
// pattern, @FILE (one pattern per line, blank lines, spaces, a file of
// exclusions only, an empty file) included. On b6df54c plan read
// "@FILE" as a host name (no host) and a pattern of exclusions only as
// nothing, where Ansible starts from all hosts.
func TestPlanLimitAgreesWithAnsible(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook is not on PATH (CI installs Debian's ansible)")
	}
	dir := t.TempDir()
	files := map[string]string{
		"inv.yml":     limitInventory,
		"pb.yml":      limitPlaybook,
		"retry":       "worker-1\n\n  master-0  \n",
		"crlf":        "worker-2\r\nstorage-server\r\n",
		"exclude":     "!worker-1\n!storage-server\n",
		"and":         "kube_node\n&worker-*\n!worker-2\n",
		"empty":       "",
		"groups":      "nfs_server\nkube_control_plane\n",
		"glob":        "work*\n~^stor\n",
		"nothing":     "no-such-host\n",
		"colon":       "nfs_server:kube_control_plane\n",
		"with-ending": "worker-2",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	at := func(name string) string { return "@" + filepath.Join(dir, name) }
	for _, limit := range []string{
		"worker-1", "kube_node", "kube_node:!worker-1", "all,!storage-server", "!worker-1", "!worker-1,!master-0",
		"&kube_node", "work*", "~worker-[12]", "nfs_server:kube_control_plane", "kube_node,&worker-2",
		at("retry"), at("crlf"), at("exclude"), at("and"), at("empty"), at("groups"), at("glob"), at("nothing"),
		at("colon"), at("with-ending"), at("retry") + ",storage-server", at("retry") + ",!master-0", "storage-server," + at("exclude"),
	} {
		t.Run(strings.ReplaceAll(limit, dir+"/", ""), func(t *testing.T) {
			want := ansibleHosts(t, dir, limit)
			p, err := PlanFiles([]byte(limitPlaybook), []byte(limitInventory), limit, nil)
			if err != nil {
				t.Fatalf("plan: %v (ansible-playbook: %v)", err, want)
			}
			got := slices.Clone(p.Hosts)
			slices.Sort(got)
			if len(got) == 0 {
				got = nil
			}
			if !slices.Equal(got, want) {
				t.Errorf("plan: %v, ansible-playbook: %v", got, want)
			}
			// run hands ansible-playbook the file's patterns, not the
			// file (the Ansible host has none): the same hosts.
			arg, err := hostpattern.LimitArg(limit)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(arg, "@") {
				t.Errorf("LimitArg(%q) = %q still names a file", limit, arg)
			}
			// A pattern without a file is handed on as it is: the same
			// ansible-playbook call as above, not asked twice.
			if arg == limit {
				return
			}
			if viaArg := ansibleHosts(t, dir, arg); !slices.Equal(viaArg, want) {
				t.Errorf("ansible-playbook --limit %q (run's): %v, with the file: %v", arg, viaArg, want)
			}
		})
	}

	// What ansible-playbook would read as one pattern naming nothing, and
	// what it cannot read at all, is refused before anything runs.
	for name, content := range map[string]string{"comma": "worker-1,worker-2\n", "nested": "@other\n", "binary": "worker-1\xff\n"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := hostpattern.LimitArg("@" + p); err == nil {
			t.Errorf("limit file %s accepted", name)
		}
	}
	for _, bad := range []string{"@" + filepath.Join(dir, "missing"), "@" + dir} {
		if _, err := PlanFiles([]byte(limitPlaybook), []byte(limitInventory), bad, nil); err == nil {
			t.Errorf("--limit %s accepted", bad)
		}
	}
}
