package inventory

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/topology"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var users = Users{Master: "ubuntu", Worker: "ubuntu", Storage: "admin"}

func load(t *testing.T) *Inventory {
	t.Helper()
	topo, err := topology.Load("../testdata/topology/k8s-a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := Build(nodesOf(topo), users)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// nodesOf maps a topology file's nodes onto the inventory's, as
// internal/render does (whose tests check its inventory against these
// golden files too).
func nodesOf(t *topology.Topology) []Node {
	var out []Node
	for _, n := range t.Nodes {
		out = append(out, Node{Name: n.Name, Role: Role(n.Role), SSHAddress: n.SSHAddress, Address: n.Address})
	}
	return out
}

func TestWriteGolden(t *testing.T) {
	inv := load(t)
	for _, f := range []Format{INI, YAML} {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			if err := inv.Write(&buf, f); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "k8s-a."+string(f))
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if buf.String() != string(want) {
				t.Errorf("%s differs:\n%s", golden, buf.String())
			}
		})
	}
}

// TestAnsibleInventoryLoads feeds both formats to the real
// ansible-inventory --list and checks groups, hosts and vars.
func TestAnsibleInventoryLoads(t *testing.T) {
	if _, err := exec.LookPath("ansible-inventory"); err != nil {
		t.Skip("ansible-inventory not installed (apt-get install ansible); .ci/run installs it")
	}
	inv := load(t)
	for _, f := range []Format{INI, YAML} {
		t.Run(string(f), func(t *testing.T) {
			got := ansibleList(t, inv, f)
			checkList(t, got)
		})
	}
}

type listed struct {
	Meta struct {
		HostVars map[string]map[string]any `json:"hostvars"`
	} `json:"_meta"`
	groups map[string]struct {
		Hosts    []string `json:"hosts"`
		Children []string `json:"children"`
	}
}

func ansibleList(t *testing.T, inv *Inventory, f Format) listed {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "hosts."+string(f))
	var buf bytes.Buffer
	if err := inv.Write(&buf, f); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ansible-inventory", "-i", path, "--list")
	cmd.Env = append(os.Environ(), "ANSIBLE_INVENTORY_UNPARSED_FAILED=true", "ANSIBLE_INVENTORY_ENABLED=ini,yaml", "ANSIBLE_LOCAL_TEMP="+dir, "ANSIBLE_HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ansible-inventory: %v\n%s\ninventory:\n%s", err, stderr.String(), buf.String())
	}
	if strings.Contains(stderr.String(), "WARNING") {
		t.Errorf("ansible-inventory warned:\n%s", stderr.String())
	}
	var l listed
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &l.groups); err != nil {
		t.Fatal(err)
	}
	return l
}

func checkList(t *testing.T, l listed) {
	t.Helper()
	workers := []string{"workernode-a1b2c3d4e5f6", "workernode-b2c3d4e5f6a1", "workernode-c3d4e5f6a1b2"}
	wantHosts := map[string][]string{
		"kube_control_plane": {"master-0"},
		"etcd":               {"master-0"},
		"kube_node":          workers,
		"nfs_server":         {"storage-server"},
	}
	for g, want := range wantHosts {
		got := append([]string(nil), l.groups[g].Hosts...)
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("group %s hosts = %v, want %v", g, got, want)
		}
	}
	wantChildren := map[string][]string{
		"k8s_cluster": {"calico_rr", "kube_control_plane", "kube_node"},
		"nfs_client":  {"kube_control_plane", "kube_node"},
	}
	for g, want := range wantChildren {
		got := append([]string(nil), l.groups[g].Children...)
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("group %s children = %v, want %v", g, got, want)
		}
	}
	hv := l.Meta.HostVars
	for name, want := range map[string]map[string]string{
		"master-0":                {"ansible_host": "192.0.2.10", "ip": "10.10.0.10", "ansible_user": "ubuntu"},
		"workernode-c3d4e5f6a1b2": {"ansible_host": "2001:db8::23", "ip": "fd00::23", "ansible_user": "ubuntu"},
		"storage-server":          {"ansible_host": "10.10.0.45", "ip": "10.10.0.45", "ansible_user": "admin"},
	} {
		for k, v := range want {
			if got := hv[name][k]; got != v {
				t.Errorf("hostvars[%s][%s] = %v, want %s", name, k, got, v)
			}
		}
		for k := range hv[name] {
			if strings.Contains(k, "pass") {
				t.Errorf("hostvars[%s] holds %s: no secret may go into an inventory", name, k)
			}
		}
	}
	if len(hv) != 5 {
		t.Errorf("want 5 hosts in hostvars, got %d", len(hv))
	}
}

func TestBuildRejectsUnsafeValues(t *testing.T) {
	topo := []Node{{Name: "m", Role: Master, SSHAddress: "10.0.0.1", Address: "10.0.0.1"}}
	if _, err := Build(topo, Users{Master: "bad user"}); err == nil || !strings.Contains(err.Error(), "ansible_user") {
		t.Fatalf("want an error naming ansible_user, got %v", err)
	}
}

// TestKubesprayRejectsUnsafeValues: the kubespray inventory holds the same
// checks as Build, in both formats (the YAML writer has none of its own: a
// user "{{ ... }}" would reach Ansible as a template), and its own password
// references pass.
func TestKubesprayRejectsUnsafeValues(t *testing.T) {
	topo := []Node{{Name: "m", Role: Master, SSHAddress: "10.0.0.1", Address: "10.0.0.1"}}
	for _, f := range []Format{YAML, INI} {
		for _, user := range []string{"{{ heatsible_secrets.master_password }}", "bad user", "a'b"} {
			if _, err := Kubespray(topo, KubesprayConn{User: user, Password: true}, KubesprayConn{}, nil, f); err == nil || !strings.Contains(err.Error(), "ansible_user") {
				t.Errorf("%v, user %q: want an error naming ansible_user, got %v", f, user, err)
			}
		}
		out, err := Kubespray(topo, KubesprayConn{User: "ubuntu", Password: true}, KubesprayConn{}, nil, f)
		if err != nil || !strings.Contains(string(out), "{{ heatsible_secrets.master_password }}") {
			t.Errorf("%v: %v\n%s", f, err, out)
		}
	}
	etcd := []Node{{Name: "etcd", Role: Worker, SSHAddress: "10.0.0.2", Address: "10.0.0.2"}}
	if _, err := Kubespray(etcd, KubesprayConn{}, KubesprayConn{}, nil, YAML); err == nil || !strings.Contains(err.Error(), "name of an inventory group") {
		t.Errorf("a node named etcd: want the group-name error, got %v", err)
	}
}

func TestWithout(t *testing.T) {
	inv := load(t).Without("workernode-a1b2c3d4e5f6")
	g, _ := inv.Group(GroupKubeNode)
	if len(g.Hosts) != 2 || len(inv.Hosts) != 4 {
		t.Fatalf("Without: kube_node=%v hosts=%d", g.Hosts, len(inv.Hosts))
	}
}

// TestBuildChecksNodes: the inventory checks the nodes it is handed
// itself (names, roles, addresses), whoever hands them in, in both
// builders.
func TestBuildChecksNodes(t *testing.T) {
	m := Node{Name: "m", Role: Master, SSHAddress: "192.0.2.1", Address: "10.0.0.1"}
	with := func(edit func(*Node)) []Node { n := m; edit(&n); return []Node{n} }
	for _, c := range []struct {
		name  string
		nodes []Node
		err   string
	}{
		{"fine", []Node{m}, ""},
		{"a host name address", with(func(n *Node) { n.SSHAddress = "m.example.com" }), ""},
		{"no name", with(func(n *Node) { n.Name = "" }), "not a DNS-1123 label"},
		{"upper case", with(func(n *Node) { n.Name = "Master" }), "not a DNS-1123 label"},
		{"a YAML key", with(func(n *Node) { n.Name = "m: x" }), "not a DNS-1123 label"},
		{"twice", []Node{m, m}, "two nodes are called m"},
		{"no role", with(func(n *Node) { n.Role = "" }), `the role "" is not one of`},
		{"an IPv6 zone", with(func(n *Node) { n.Address = "fe80::1%eth0" }), `the address "fe80::1%eth0" is not an IP address`},
		{"sexagesimal", with(func(n *Node) { n.SSHAddress = "1:20" }), `the SSH address "1:20" is not`},
		{"no address", with(func(n *Node) { n.Address = "" }), "the address"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Build(c.nodes, Users{})
			_, kerr := Kubespray(c.nodes, KubesprayConn{}, KubesprayConn{}, nil, YAML)
			for what, e := range map[string]error{"Build": err, "Kubespray": kerr} {
				if (e == nil) != (c.err == "") || (e != nil && !strings.Contains(e.Error(), c.err)) {
					t.Errorf("%s: %v, want %q", what, e, c.err)
				}
			}
		})
	}
}
