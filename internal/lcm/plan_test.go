package lcm

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/collection"
	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/hostpattern"
	"github.com/heatsible/heatsible/roles"
)

func TestResolvePattern(t *testing.T) {
	req, topo := fixture(t, "valid")
	f, err := RenderOp(req, topo, "../../testdata/package", Op{Name: OpInstantiateEnd}, "test")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := hostpattern.ParseInventory(f.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	const w1, w2, w3 = "workernode-a1b2c3d4e5f6", "workernode-b2c3d4e5f6a1", "workernode-c3d4e5f6a1b2"
	tests := []struct {
		pattern string
		want    []string
	}{
		{"all", []string{"master-0", w1, w2, w3, "storage-server"}},
		{"*", []string{"master-0", w1, w2, w3, "storage-server"}},
		{"nfs_server", []string{"storage-server"}},
		{"nfs_client", []string{"master-0", w1, w2, w3}},
		{"k8s_cluster", []string{"master-0", w1, w2, w3}},
		{"calico_rr", nil},
		{"master-0", []string{"master-0"}},
		{"storage-server,master-0", []string{"master-0", "storage-server"}},
		{"nfs_client:!kube_node", []string{"master-0"}},
		{"nfs_client,!" + w2, []string{"master-0", w1, w3}},
		{"all:&kube_node", []string{w1, w2, w3}},
		{"workernode-*", []string{w1, w2, w3}},
		{"~^worker.*b2$", []string{w3}},
		{"nosuchhost", nil},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			got, err := inv.Resolve(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Resolve(%q) = %v, want %v", tt.pattern, got, tt.want)
			}
		})
	}
	if _, err := inv.Resolve("kube_node[0]"); err == nil {
		t.Error("a subscript resolved; want an error (not supported)")
	}
}

func TestPlanTags(t *testing.T) {
	req, topo := fixture(t, "valid")
	f, err := RenderOp(req, topo, "../../testdata/package", Op{Name: OpInstantiateEnd}, "test")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		limit string
		tags  []string
		runs  []bool
	}{
		{"", nil, []bool{true, true, true, true}},
		{"", []string{"nfs_client"}, []bool{false, true, false, false}},
		{"", []string{"all"}, []bool{true, true, true, true}},
		{"", []string{"nfs_server", "pv_register"}, []bool{true, false, true, false}},
		{"", []string{"k8s_vim"}, []bool{false, false, false, true}},
		{"storage-server", nil, []bool{true, false, false, false}},
		{"kube_node", []string{"pv_register"}, []bool{false, false, false, false}},
	}
	for _, tt := range tests {
		p, err := PlanFiles(f.Playbook, f.Inventory, tt.limit, tt.tags)
		if err != nil {
			t.Fatal(err)
		}
		var runs []bool
		for _, s := range p.Steps {
			runs = append(runs, s.Runs)
		}
		if !slices.Equal(runs, tt.runs) {
			t.Errorf("limit %q tags %v: runs %v, want %v", tt.limit, tt.tags, runs, tt.runs)
		}
	}
}

// TestPlanMatchesAnsible stages the run's bundle and asks ansible-playbook
// itself (--list-hosts: it contacts nothing) which hosts each play runs
// on: the plan must say the same.
func TestPlanMatchesAnsible(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not on PATH")
	}
	req, topo := fixture(t, "valid")
	f, err := RenderOp(req, topo, "../../testdata/package", Op{Name: OpInstantiateEnd}, "test")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ansible.NewBundle(ansible.BundleSpec{
		Cluster: "k8s-a", Operation: OpInstantiateEnd, BaseDir: t.TempDir(),
		Inventory: f.Inventory, Playbook: f.Playbook, Roles: roles.FS, Collections: map[string]fs.FS{collection.FQCN: collection.FS},
		GroupVars: f.GroupVars, Secrets: f.Secrets, SecretValues: f.SecretValues,
		Files: f.BundleFiles(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, limit := range []string{"", "storage-server", "nfs_client:!workernode-b2c3d4e5f6a1", "master-0,storage-server", "workernode-*"} {
		t.Run("limit="+limit, func(t *testing.T) {
			args := []string{"--list-hosts", "-i", b.InventoryPath(b.Dir), b.Dir + "/" + ansible.PlaybookFile}
			if limit != "" {
				args = append(args, "--limit", limit)
			}
			cmd := exec.Command("ansible-playbook", args...)
			cmd.Env = append(os.Environ(), "ANSIBLE_CONFIG="+b.Dir+"/"+ansible.ConfigFile, "ANSIBLE_STDOUT_CALLBACK=default")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("ansible-playbook --list-hosts: %v\n%s", err, out)
			}
			want := listHosts(string(out))
			if limit == "" && (len(want) != 4 || len(want[1]) != 4) {
				t.Fatalf("could not read ansible's --list-hosts output: %v\n%s", want, out)
			}
			p, err := PlanFiles(f.Playbook, f.Inventory, limit, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for _, s := range p.Steps {
				hs := slices.Clone(s.Hosts)
				slices.Sort(hs)
				got = append(got, hs)
			}
			if len(got) != len(want) {
				t.Fatalf("plan has %d steps, ansible %d plays\n%s", len(got), len(want), out)
			}
			for i := range got {
				if !slices.Equal(got[i], want[i]) && !(len(got[i]) == 0 && len(want[i]) == 0) {
					t.Errorf("play %d: plan %v, ansible %v", i+1, got[i], want[i])
				}
			}
		})
	}
}

var playRE = regexp.MustCompile(`^\s*play #\d+`)

// listHosts parses ansible-playbook --list-hosts: per play, its hosts, sorted.
func listHosts(out string) [][]string {
	var plays [][]string
	inHosts := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case playRE.MatchString(l):
			plays = append(plays, []string{})
			inHosts = false
		case strings.HasPrefix(strings.TrimSpace(l), "hosts ("):
			inHosts = true
		case inHosts && strings.TrimSpace(l) != "" && len(plays) > 0:
			plays[len(plays)-1] = append(plays[len(plays)-1], strings.TrimSpace(l))
		default:
			inHosts = false
		}
	}
	for _, p := range plays {
		slices.Sort(p)
	}
	return plays
}

// TestPlanPlaybookShapes: import_playbook steps (kubespray's, later), plays
// with their own tasks, host lists and play-level tags.
func TestPlanPlaybookShapes(t *testing.T) {
	req, topo := fixture(t, "valid")
	f, err := RenderOp(req, topo, "../../testdata/package", Op{Name: OpInstantiateEnd}, "test")
	if err != nil {
		t.Fatal(err)
	}
	pb := []byte(`---
- import_playbook: "{{ kubespray_root }}/cluster.yml"
- name: Facts
  hosts: [kube_control_plane, nfs_server]
  tags: [facts]
  tasks:
    - name: Gather
      ansible.builtin.setup:
    - ansible.builtin.ping:
- name: Nothing here
  hosts: calico_rr
  roles: [nfs_client]
`)
	tests := []struct {
		tags  []string
		steps []string // name:runs:hosts
	}{
		{nil, []string{"import {{ kubespray_root }}/cluster.yml:true:", "Facts:true:master-0,storage-server", "Nothing here:false:"}},
		{[]string{"nfs_client"}, []string{"import {{ kubespray_root }}/cluster.yml:true:", "Facts:false:master-0,storage-server", "Nothing here:false:"}},
		{[]string{"facts"}, []string{"import {{ kubespray_root }}/cluster.yml:true:", "Facts:true:master-0,storage-server", "Nothing here:false:"}},
	}
	for _, tt := range tests {
		p, err := PlanFiles(pb, f.Inventory, "", tt.tags)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range p.Steps {
			got = append(got, fmt.Sprintf("%s:%v:%s", s.Name, s.Runs, strings.Join(s.Hosts, ",")))
		}
		if !slices.Equal(got, tt.steps) {
			t.Errorf("tags %v:\n got %q\nwant %q", tt.tags, got, tt.steps)
		}
		if tasks := p.Steps[1].Tasks; !slices.Equal(tasks, []string{"Gather", "(unnamed task)"}) {
			t.Errorf("tasks %q", tasks)
		}
	}
}
