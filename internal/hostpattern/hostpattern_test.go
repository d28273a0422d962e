package hostpattern

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// inventory is shaped like the inventories heatsible writes (inventory/
// testdata/k8s-a.yaml): hosts under all, groups as children, a group made
// of other groups, an empty group, an IPv6 ansible_host.
const inventory = `all:
  hosts:
    master-0: {ansible_host: 192.0.2.10}
    master-1: {ansible_host: 192.0.2.11}
    workernode-a1: {ansible_host: 192.0.2.21}
    workernode-b2: {ansible_host: 192.0.2.22}
    worker-9: {ansible_host: "2001:db8::23"}
    storage-server: {ansible_host: 10.10.0.45}
    lb: {ansible_host: 10.10.0.50}
  children:
    kube_control_plane:
      hosts:
        master-0: {}
        master-1: {}
    etcd:
      hosts:
        master-0: {}
    kube_node:
      hosts:
        workernode-a1: {}
        workernode-b2: {}
        worker-9: {}
    calico_rr: {}
    k8s_cluster:
      children:
        kube_control_plane: {}
        kube_node: {}
        calico_rr: {}
    nfs_server:
      hosts:
        storage-server: {}
    nfs_client:
      children:
        kube_control_plane: {}
        kube_node: {}
    external_lb:
      hosts:
        lb: {}
`

// patterns are host patterns and the hosts Ansible resolves them to (as
// sets; TestResolveAgreesWithAnsible checks each against the real thing).
var patterns = []struct {
	pattern string
	want    []string
}{
	{"all", []string{"master-0", "master-1", "workernode-a1", "workernode-b2", "worker-9", "storage-server", "lb"}},
	{"*", []string{"master-0", "master-1", "workernode-a1", "workernode-b2", "worker-9", "storage-server", "lb"}},
	{"master-0", []string{"master-0"}},
	{"nfs_server", []string{"storage-server"}},
	{"k8s_cluster", []string{"master-0", "master-1", "workernode-a1", "workernode-b2", "worker-9"}},
	{"calico_rr", nil},
	{"no-such-host", nil},
	{"master-0,storage-server", []string{"master-0", "storage-server"}},
	{"master-0:storage-server", []string{"master-0", "storage-server"}},
	{"master-0,", []string{"master-0"}},
	{"nfs_client,!kube_control_plane", []string{"workernode-a1", "workernode-b2", "worker-9"}},
	{"nfs_client:&etcd", []string{"master-0"}},
	{"!nfs_server", []string{"master-0", "master-1", "workernode-a1", "workernode-b2", "worker-9", "lb"}},
	{"&kube_node", []string{"workernode-a1", "workernode-b2", "worker-9"}},
	{"worker*", []string{"workernode-a1", "workernode-b2", "worker-9"}},
	{"worker-?", []string{"worker-9"}},
	{"kube_*", []string{"master-0", "master-1", "workernode-a1", "workernode-b2", "worker-9"}},
	{"*-server", []string{"storage-server"}},
	{"~master-[01]", []string{"master-0", "master-1"}},
	{"~node", nil}, // Ansible's ~regex matches at the start of a name (re.match)
	{"~.*node", []string{"workernode-a1", "workernode-b2", "worker-9"}}, // worker-9 through its group kube_node
	{"~^w.*[0-9]$", []string{"workernode-a1", "workernode-b2", "worker-9"}},
	{"~nfs_(server|client)", []string{"master-0", "master-1", "workernode-a1", "workernode-b2", "worker-9", "storage-server"}},
	{"kube_control_plane,nfs_server,!master-1", []string{"master-0", "storage-server"}},
	{" master-0 , lb ", []string{"master-0", "lb"}},
}

func parse(t *testing.T) *Inventory {
	t.Helper()
	inv, err := ParseInventory([]byte(inventory))
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func TestResolve(t *testing.T) {
	inv := parse(t)
	for _, c := range patterns {
		t.Run(c.pattern, func(t *testing.T) {
			got, err := inv.Resolve(c.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if !sameSet(got, c.want) {
				t.Errorf("Resolve(%q) = %v, want %v", c.pattern, got, c.want)
			}
			// Hosts come in inventory order, whatever the pattern's order.
			if !slices.IsSortedFunc(got, func(a, b string) int {
				return slices.Index(inv.Hosts(), a) - slices.Index(inv.Hosts(), b)
			}) {
				t.Errorf("Resolve(%q) = %v: not in inventory order %v", c.pattern, got, inv.Hosts())
			}
		})
	}
}

func TestResolveRefusesSubscripts(t *testing.T) {
	inv := parse(t)
	for _, p := range []string{"kube_node[0]", "kube_node[0:1]", "master-0,kube_node[-1]"} {
		if _, err := inv.Resolve(p); err == nil || !strings.Contains(err.Error(), "not supported") {
			t.Errorf("Resolve(%q): err = %v, want a refusal naming subscripts", p, err)
		}
	}
	if _, err := inv.Resolve("~master-[0"); err == nil {
		t.Error("Resolve(~master-[0): a regex that does not compile must be an error")
	}
}

// TestResolveAgreesWithAnsible: every pattern above resolves to the hosts
// the real Ansible resolves it to: one ansible-playbook --list-hosts run of
// a playbook with a play per pattern, on the same inventory (nothing
// connects anywhere).
func TestResolveAgreesWithAnsible(t *testing.T) {
	ansible, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Skip("ansible-playbook not on PATH (make test's machines have it)")
	}
	dir := t.TempDir()
	invFile := filepath.Join(dir, "inventory.yaml")
	if err := os.WriteFile(invFile, []byte(inventory), 0o644); err != nil {
		t.Fatal(err)
	}
	var pb strings.Builder
	for i, c := range patterns {
		// JSON strings are YAML strings: the pattern reaches Ansible as is.
		q, _ := json.Marshal(c.pattern)
		fmt.Fprintf(&pb, "- name: p%d\n  hosts: %s\n  gather_facts: false\n  tasks: []\n", i, q)
	}
	pbFile := filepath.Join(dir, "patterns.yml")
	if err := os.WriteFile(pbFile, []byte(pb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(ansible, "-i", invFile, "--list-hosts", pbFile)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "ANSIBLE_CONFIG=", "ANSIBLE_LOCALHOST_WARNING=False", "ANSIBLE_NOCOLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ansible-playbook --list-hosts: %v\n%s", err, out)
	}
	real := listedHosts(out)
	inv := parse(t)
	for i, c := range patterns {
		got, err := inv.Resolve(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		listed, ok := real[fmt.Sprintf("p%d", i)]
		if !ok {
			t.Fatalf("ansible-playbook --list-hosts did not list play p%d (%q):\n%s", i, c.pattern, out)
		}
		if !sameSet(got, listed) {
			t.Errorf("pattern %q: heatsible resolves %v, ansible-playbook lists %v", c.pattern, got, listed)
		}
	}
}

// listedHosts reads ansible-playbook --list-hosts' output: per play a line
// "  play #N (PATTERN): NAME\tTAGS: []", then "    hosts (N):" and one host
// per more indented line.
func listedHosts(out []byte) map[string][]string {
	plays := map[string][]string{}
	play := ""
	for _, line := range strings.Split(string(out), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "play #"):
			name := trimmed[strings.Index(trimmed, "): ")+3:]
			play, _, _ = strings.Cut(name, "\t")
			play = strings.TrimSpace(play)
			plays[play] = []string{}
		case strings.HasPrefix(trimmed, "hosts ("), strings.HasPrefix(trimmed, "pattern:"), trimmed == "":
		case play != "" && strings.HasPrefix(line, "      "):
			plays[play] = append(plays[play], trimmed)
		}
	}
	return plays
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestSelected(t *testing.T) {
	for _, c := range []struct {
		have, want []string
		selected   bool
	}{
		{nil, nil, true},
		{[]string{"nfs_client"}, nil, true},
		{[]string{"nfs_client"}, []string{"all"}, true},
		{[]string{"nfs_client"}, []string{"nfs_client"}, true},
		{[]string{"nfs_client"}, []string{"pv_register"}, false},
		{nil, []string{"pv_register"}, false},
		{[]string{"always"}, []string{"pv_register"}, true},
		{[]string{"a", "b"}, []string{"c", "b"}, true},
	} {
		if got := Selected(c.have, c.want); got != c.selected {
			t.Errorf("Selected(%v, %v) = %v, want %v", c.have, c.want, got, c.selected)
		}
	}
}

func TestLimitFile(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	retry := file("retry", "worker-9\r\nmaster-1\n\n")
	inv := parse(t)
	for _, c := range []struct {
		limit, arg string
		hosts      []string
		err        string
	}{
		{"master-0", "master-0", []string{"master-0"}, ""},
		{"@" + retry, "worker-9,master-1,", []string{"master-1", "worker-9"}, ""},
		{"@" + retry + ",lb", "worker-9,master-1,lb,", []string{"master-1", "worker-9", "lb"}, ""},
		{"@" + file("comma", "a,b\n"), "", nil, "line 1 holds ','"},
		{"@" + file("at", "x\n@y\n"), "", nil, "line 2 holds ','"},
		{"@" + dir, "", nil, "must be a file"},
		{"@" + filepath.Join(dir, "missing"), "", nil, "cannot read the limit file"},
		{"@" + file("latin1", "m\xe9\n"), "", nil, "not UTF-8"},
	} {
		arg, err := LimitArg(c.limit)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("LimitArg(%q): err = %v, want one with %q", c.limit, err, c.err)
			}
			continue
		}
		if err != nil || arg != c.arg {
			t.Errorf("LimitArg(%q) = %q, %v; want %q", c.limit, arg, err, c.arg)
		}
		hosts, err := inv.ResolveLimit(c.limit)
		if err != nil || !sameSet(hosts, c.hosts) {
			t.Errorf("ResolveLimit(%q) = %v, %v; want %v", c.limit, hosts, err, c.hosts)
		}
	}
}

func TestParsePlaybook(t *testing.T) {
	plays, err := ParsePlaybook([]byte(`
- name: storage
  hosts: nfs_server
  tags: [storage]
  roles:
    - role: nfs_server
      tags: [nfs_server]
    - cinder_volume
- name: register
  hosts: !unsafe "master-0"
  tasks:
    - name: register the PVs
      ansible.builtin.debug: {msg: x}
- ansible.builtin.import_playbook: kubespray/cluster.yml
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(plays) != 3 {
		t.Fatalf("%d plays, want 3: %+v", len(plays), plays)
	}
	if p := plays[0]; p.Name != "storage" || p.Hosts != "nfs_server" || len(p.Roles) != 2 || p.Roles[0].Name != "nfs_server" || !slices.Equal(p.Roles[0].Tags, []string{"nfs_server"}) || p.Roles[1].Name != "cinder_volume" || !slices.Equal(p.Tags, []string{"storage"}) {
		t.Errorf("play 1 = %+v", p)
	}
	if p := plays[1]; p.Hosts != "master-0" || !slices.Equal(p.Tasks, []string{"register the PVs"}) {
		t.Errorf("play 2 = %+v", p)
	}
	if p := plays[2]; p.Import != "kubespray/cluster.yml" {
		t.Errorf("play 3 = %+v", p)
	}
	if _, err := ParsePlaybook([]byte("hosts: [")); err == nil {
		t.Error("a playbook that is not YAML must be an error")
	}
}

// TestParsePlaybookForms: each way a play can say its hosts, tags, roles
// and tasks, and the plays that are errors.
func TestParsePlaybookForms(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       Play
		err        string
	}{
		{"hosts as a list", "- hosts: [nfs_server, kube_node]\n", Play{Hosts: "nfs_server,kube_node"}, ""},
		{"tags as a string", "- hosts: all\n  tags: 'a, b ,,c'\n", Play{Hosts: "all", Tags: []string{"a", "b", "c"}}, ""},
		{"role by name:, tags as a string", "- hosts: all\n  roles:\n    - {name: k8s_vim, tags: k8s_vim}\n",
			Play{Hosts: "all", Roles: []Role{{Name: "k8s_vim", Tags: []string{"k8s_vim"}}}}, ""},
		{"tasks in every section, unnamed", "- hosts: all\n  pre_tasks: [{name: first}]\n  tasks: [{ansible.builtin.ping: {}}]\n  post_tasks: [{name: last}]\n",
			Play{Hosts: "all", Tasks: []string{"first", "(unnamed task)", "last"}}, ""},
		{"import by its short name, named", "- name: cluster\n  import_playbook: cluster.yml\n", Play{Name: "cluster", Import: "cluster.yml"}, ""},
		{"import, unnamed", "- import_playbook: cluster.yml\n", Play{Name: "import cluster.yml", Import: "cluster.yml"}, ""},
		{"no hosts", "- name: lost\n  roles: [nfs_client]\n", Play{}, "play 1 (lost) has no hosts"},
		{"not a list of plays", "hosts: all\n", Play{}, "parsing the rendered playbook"},
	} {
		t.Run(c.name, func(t *testing.T) {
			plays, err := ParsePlaybook([]byte(c.yaml))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || len(plays) != 1 {
				t.Fatalf("%+v, %v: want one play", plays, err)
			}
			got, _ := json.Marshal(plays[0])
			want, _ := json.Marshal(c.want)
			if string(got) != string(want) {
				t.Errorf("play %s, want %s", got, want)
			}
		})
	}
}

// TestParseInventoryForms: an empty inventory has no hosts; what is not a
// mapping of groups, or not YAML, is an error; --limit's errors reach
// ResolveLimit's caller.
func TestParseInventoryForms(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		hosts      []string
		err        string
	}{
		{"empty", "", nil, ""},
		{"one group", "all:\n  hosts:\n    a: {}\n", []string{"a"}, ""},
		{"a list", "- all\n", nil, "not a YAML mapping of groups"},
		{"not YAML", "all: [\n", nil, "parsing the inventory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			inv, err := ParseInventory([]byte(c.yaml))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || !slices.Equal(inv.Hosts(), c.hosts) {
				t.Fatalf("hosts %v, %v; want %v", inv.Hosts(), err, c.hosts)
			}
		})
	}
	inv, err := ParseInventory([]byte(inventory))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inv.ResolveLimit("@" + filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "cannot read the limit file") {
		t.Errorf("ResolveLimit of a missing file: %v", err)
	}
}
