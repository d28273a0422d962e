package lcm

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/inventory"
)

const (
	lbTopology = "../../testdata/topology/k8s-lb.yaml"
	testPkg    = "../../testdata/package"
)

// TestInventoryPathForms takes every form transferring_inventory_path can
// take through validate (params.Validate), plan (MakePlan) and run
// (RenderOp, then the write-inventory and remove-inventory phases on this
// machine, as Run does them): all three accept it or refuse it with the same
// message, and run writes the file plan names, in the format it names, which
// ansible-inventory then loads. $R is kubespray_root_path, $H a directory
// outside it.
func TestInventoryPathForms(t *testing.T) {
	tests := []struct {
		in   string
		want string // the file, or "problem: " and a part of the message
		fmt  inventory.Format
	}{
		{"inventory/mycluster/hosts.ini", "$R/inventory/mycluster/hosts.ini", inventory.INI},
		{"inventory/mycluster/hosts.yaml", "$R/inventory/mycluster/hosts.yaml", inventory.YAML},
		{"inventory/mycluster/hosts.yml", "$R/inventory/mycluster/hosts.yml", inventory.YAML},
		{"inventory/mycluster", "$R/inventory/mycluster/hosts.yaml", inventory.YAML},
		{"inventory/mycluster/", "$R/inventory/mycluster/hosts.yaml", inventory.YAML},
		{"./inventory/mycluster", "$R/inventory/mycluster/hosts.yaml", inventory.YAML},
		{"inventory/my.cluster", "$R/inventory/my.cluster/hosts.yaml", inventory.YAML},
		{"inventory", "$R/inventory/hosts.yaml", inventory.YAML},
		{"$R/inventory/mycluster/hosts.ini", "$R/inventory/mycluster/hosts.ini", inventory.INI},
		{"$R/inventory/mycluster", "$R/inventory/mycluster/hosts.yaml", inventory.YAML},
		{"$R/inventory/mycluster/", "$R/inventory/mycluster/hosts.yaml", inventory.YAML},
		{"$H/inventories/c1", "$H/inventories/c1/hosts.yaml", inventory.YAML},
		{"$H/inventories/c1/hosts.ini", "$H/inventories/c1/hosts.ini", inventory.INI},
		{"$H/inventories/c1/hosts.yml", "$H/inventories/c1/hosts.yml", inventory.YAML},
		{"", "problem: is missing", ""},
		{"../inventories/c1", "problem: contains a '..' component", ""},
		{"inventory/../../etc", "problem: contains a '..' component", ""},
		{"$R/../inventories/c1", "problem: contains a '..' component", ""},
		{".", "problem: is kubespray_root_path itself", ""},
		{"./", "problem: is kubespray_root_path itself", ""},
		{"$R", "problem: is kubespray_root_path itself", ""},
		{"$R/", "problem: is kubespray_root_path itself", ""},
		{"cluster.yml", "problem: not under its inventory/ directory", ""},
		{"roles/kubespray_defaults/defaults/main/main.yml", "problem: not under its inventory/ directory", ""},
		{"hosts.ini", "problem: not under its inventory/ directory", ""},
		{"inventory/mycluster/hosts.json", "problem: heatsible writes the inventory as INI (.ini) or YAML", ""},
		{"inventory/my cluster", "problem: contains characters that are not allowed", ""},
		{"/etc/kubespray", "problem: would put the inventory in /etc/kubespray, a system directory", ""},
		{"/home", "problem: would put the inventory in /home, a system directory", ""},
		{"/hosts.ini", "problem: would put the inventory in /, a system directory", ""},
	}
	haveInventory := exec.Command("ansible-inventory", "--version").Run() == nil
	for _, tt := range tests {
		// t.TempDir uses the name: keep it to letters, digits and '_'.
		name := strings.NewReplacer("$R", "root", "$H", "home", "/", "_", ".", "dot", " ", "space").Replace(tt.in)
		if name == "" {
			name = "empty"
		}
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			root, home := filepath.Join(tmp, "kubespray"), filepath.Join(tmp, "home")
			expand := strings.NewReplacer("$R", root, "$H", home).Replace
			req := loadRequest(t, "kubespray_lb")
			req.Cluster.Ansible.KubesprayRootPath = root
			req.Cluster.Ansible.TransferringInventoryPath = expand(tt.in)
			want := expand(tt.want)

			// validate
			verr := req.Validate(params.Options{PackageDir: testPkg, RequirePackage: true})
			// plan
			plan, perr := MakePlan(context.Background(), PlanOptions{Operation: OpInstantiateEnd, Request: req, PackageDir: testPkg, Source: Source{TopologyFile: lbTopology}})
			// run: the same files Run renders
			topo, err := LoadTopology(context.Background(), req, Source{TopologyFile: lbTopology})
			if err != nil {
				t.Fatal(err)
			}
			f, rerr := RenderOp(req, topo, testPkg, Op{Name: OpInstantiateEnd}, "test")

			if msg, refused := strings.CutPrefix(want, "problem: "); refused {
				for what, err := range map[string]error{"validate": verr, "plan": perr, "run": rerr} {
					if err == nil || !strings.Contains(err.Error(), params.Prefix+".ansible.") || !strings.Contains(err.Error(), msg) {
						t.Errorf("%s: %v, want a problem of ansible.* saying %q", what, err, msg)
					}
				}
				if verr != nil && perr != nil && rerr != nil && (verr.Error() != rerr.Error() || !strings.Contains(perr.Error(), verr.Error())) {
					t.Errorf("the messages differ:\nvalidate: %v\nplan:     %v\nrun:      %v", verr, perr, rerr)
				}
				return
			}
			for what, err := range map[string]error{"validate": verr, "plan": perr, "run": rerr} {
				if err != nil {
					t.Fatalf("%s refuses %q: %v", what, tt.in, err)
				}
			}
			if f.KubesprayInventoryPath != want || f.KubesprayInventoryFormat != tt.fmt {
				t.Errorf("run writes %s (%s), want %s (%s)", f.KubesprayInventoryPath, f.KubesprayInventoryFormat, want, tt.fmt)
			}
			if k := plan.Kubespray; k == nil || k.Inventory != want || k.InventoryFormat != string(tt.fmt) {
				t.Errorf("plan says %+v, want %s (%s)", plan.Kubespray, want, tt.fmt)
			}
			if step := plan.Steps[0]; step.Kind != PhaseWriteInventory || !strings.Contains(step.Name, want+" ("+strings.ToUpper(string(tt.fmt))+")") {
				t.Errorf("plan step 1: %q, want the inventory %s", step.Name, want)
			}
			// The write-inventory phase, as Run runs it on this machine.
			ph := &phaseRunner{files: f, fileOps: ansible.LocalRunner{}}
			if err := ph.runPhase(context.Background(), Phase{Kind: PhaseWriteInventory}); err != nil {
				t.Fatalf("writing the inventory: %v", err)
			}
			st, err := os.Stat(want)
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("the inventory %s: %v, mode %v; want a 0600 file", want, err, st)
			}
			if haveInventory {
				loadsAs(t, want, tt.fmt)
			}
			if err := ph.runPhase(context.Background(), Phase{Kind: PhaseRemoveInventory}); err != nil {
				t.Fatalf("removing the inventory: %v", err)
			}
			if _, err := os.Stat(want); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the inventory is still there after remove-inventory: %v", err)
			}
		})
	}
}

// loadsAs loads the inventory file p with ansible-inventory, forcing the
// plugin of format f (ini or yaml), and checks kubespray's groups and a
// host's variables.
func loadsAs(t *testing.T, p string, f inventory.Format) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("ansible-inventory", "-i", p, "--list")
	cmd.Env = append(os.Environ(), "ANSIBLE_HOME="+dir, "ANSIBLE_LOCAL_TEMP="+dir,
		"ANSIBLE_INVENTORY_ENABLED="+map[inventory.Format]string{inventory.INI: "ini", inventory.YAML: "yaml"}[f],
		"ANSIBLE_INVENTORY_UNPARSED_FAILED=True", "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED=True")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("ansible-inventory (%s plugin only) %s: %v\n%s", f, p, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var inv map[string]struct {
		Hosts    []string                  `json:"hosts"`
		HostVars map[string]map[string]any `json:"hostvars"`
	}
	if err := json.Unmarshal(out, &inv); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(inv["kube_control_plane"].Hosts, ","); got != "master-0,master-1,master-2" {
		t.Errorf("kube_control_plane %s", got)
	}
	if got := strings.Join(inv["kube_node"].Hosts, ","); got != "workernode-a1b2c3d4e5f6,workernode-b2c3d4e5f6a1,workernode-c3d4e5f6a1b2" {
		t.Errorf("kube_node %s", got)
	}
	w := inv["_meta"].HostVars["workernode-c3d4e5f6a1b2"]
	if w["ansible_host"] != "2001:db8::23" || w["ip"] != "fd00::23" || w["access_ip"] != "fd00::23" || w["ansible_user"] != "ubuntu" ||
		w["ansible_password"] != "{{ heatsible_secrets.worker_password }}" || w["ansible_become_password"] != "{{ heatsible_secrets.worker_password }}" {
		t.Errorf("worker vars %v", w)
	}
}

// TestKubesprayRunGetsVars runs a kubespray playbook for real on this
// machine the way Run does (phaseRunner, LocalRunner, the bundle Run
// stages): the stand-in's recording play (testbed/kubespray) as cluster.yml
// records, as the first node sees them, the variables kubespray received and
// the inventory file it was given, in INI and in YAML. No node is contacted:
// the recording play runs on localhost.
func TestKubesprayRunGetsVars(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook is not on PATH (CI installs Debian's ansible)")
	}
	for _, tt := range []struct {
		inv  string
		want inventory.Format
	}{{"inventory/c1/hosts.ini", inventory.INI}, {"inventory/c1", inventory.YAML}} {
		t.Run(string(tt.want), func(t *testing.T) {
			tmp := t.TempDir()
			root := filepath.Join(tmp, "kubespray")
			standIn(t, root)
			req, topo := scaleFixture(t, "kubespray_lb")
			req.Cluster.Ansible.KubesprayRootPath, req.Cluster.Ansible.TransferringInventoryPath = root, tt.inv
			f, err := RenderOp(req, topo, testPkg, Op{Name: OpInstantiateEnd}, "test")
			if err != nil {
				t.Fatal(err)
			}
			b, err := ansible.NewBundle(ansible.BundleSpec{Cluster: topo.Cluster, Operation: OpInstantiateEnd, BaseDir: tmp, Inventory: f.Inventory, Playbook: f.Playbook,
				GroupVars: f.GroupVars, Secrets: f.Secrets, SecretValues: f.SecretValues, VarsFiles: f.VarsFiles()})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			t.Setenv("ANSIBLE_HOME", filepath.Join(tmp, "ansible-home"))
			t.Setenv("ANSIBLE_LOCALHOST_WARNING", "false")
			var stderr strings.Builder
			ph := &phaseRunner{o: RunOptions{Stderr: &stderr}, files: f, bundle: b, runner: ansible.LocalRunner{}, fileOps: ansible.LocalRunner{}, cluster: topo.Cluster}
			if err := ph.preflight(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, p := range f.Phases[:2] { // write-inventory, kubespray cluster.yml
				if err := ph.runPhase(context.Background(), p); err != nil {
					t.Fatalf("%s: %v\n%s", p, err, stderr.String())
				}
			}
			rec := onlyRecord(t, filepath.Join(root, "records"))
			inv := filepath.Join(root, tt.inv)
			if tt.want == inventory.YAML {
				inv += "/hosts.yaml"
			}
			checkStandInRecord(t, rec, inv, tt.want, filepath.Join(b.Dir, KubesprayVarsFile), map[string]any{
				"host":                                "master-0",
				"kube_pods_subnet":                    "192.168.0.0/16",
				"kube_service_addresses":              "10.199.187.0/24",
				"http_proxy":                          "http://********@proxy.example.com:3128",
				"https_proxy":                         "http://********@proxy.example.com:3128",
				"no_proxy":                            nil,
				"additional_no_proxy":                 "192.168.246.0/24,10.0.0.1,10.10.0.0/24,10.10.0.10,10.10.0.11,10.10.0.12,10.10.0.21,10.10.0.22,fd00::23",
				"supplementary_addresses_in_ssl_keys": []any{"10.10.0.10"},
				"proxy_env_defined":                   false,
				"heatsible_secrets_keys":              []any{"master_password", "worker_password"},
			})
			data, err := os.ReadFile(filepath.Join(root, "records", filepath.Base(rec.path)))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("the stand-in's record %s:\n%s", filepath.Base(rec.path), data)
			for _, s := range []string{"password1", "password2", "test-password"} {
				if strings.Contains(string(data), s) {
					t.Errorf("the stand-in's record holds %q:\n%s", s, data)
				}
			}
		})
	}
}

// standIn copies the kubespray stand-in's recording machinery
// (testbed/kubespray: ansible.cfg, library/, standin/) to root, with a
// cluster.yml that only records: its other play would log in to the nodes.
func standIn(t *testing.T, root string) {
	t.Helper()
	src := "../../testbed/kubespray"
	for _, rel := range []string{"ansible.cfg", "library/kubespray_standin_record.py", "standin/record.yml"} {
		b, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The stand-in's playbooks import the ansible_version.yml of the release
	// it stands for (testbed/bin/bed installs one); here it stands for none,
	// so that the test runs under every ansible-core of the matrix.
	for rel, data := range map[string]string{
		"standin/ansible_version.yml": "---\n- name: Check Ansible version (no release)\n  hosts: localhost\n  gather_facts: false\n  tasks: []\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, rel), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(src, "cluster.yml"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, ok := strings.Cut(string(b), "\n- name: \"Install Kubernetes")
	if !ok {
		t.Fatal("testbed/kubespray/cluster.yml no longer has its second play")
	}
	if err := os.WriteFile(filepath.Join(root, "cluster.yml"), []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
}

// standInRecord is what the tests read of a stand-in record.
type standInRecord struct {
	path           string
	Playbook       string         `json:"playbook"`
	KubesprayVars  map[string]any `json:"kubespray_vars"`
	Argv           []string       `json:"argv"`
	InventoryFiles []struct {
		Path   string `json:"path"`
		ByName string `json:"by_name"`
		Parsed string `json:"parsed"`
		Mode   string `json:"mode"`
	} `json:"inventory_files"`
	VarsFiles []struct {
		Path string `json:"path"`
		Mode string `json:"mode"`
	} `json:"vars_files"`
}

func onlyRecord(t *testing.T, dir string) standInRecord {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "[0-9]*.json"))
	if len(files) != 1 {
		t.Fatalf("want one stand-in record in %s, got %v", dir, files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var r standInRecord
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	r.path = files[0]
	return r
}

// checkStandInRecord checks what a stand-in playbook recorded: the inventory
// file it was given (path, format by name and by parsing, mode 0600), the
// vars file (-e @, mode 0600) instead of secrets.yml, no secret in argv, and
// the variables as the first node saw them.
func checkStandInRecord(t *testing.T, r standInRecord, inv string, format inventory.Format, varsFile string, vars map[string]any) {
	t.Helper()
	if len(r.InventoryFiles) != 1 {
		t.Fatalf("inventory files %+v, want %s only", r.InventoryFiles, inv)
	}
	i := r.InventoryFiles[0]
	if i.Path != inv || i.ByName != string(format) || i.Parsed != string(format) || i.Mode != "0600" {
		t.Errorf("inventory %+v, want %s, %s by name and by parsing, mode 0600", i, inv, format)
	}
	if len(r.VarsFiles) != 1 || r.VarsFiles[0].Path != varsFile || r.VarsFiles[0].Mode != "0600" {
		t.Errorf("vars files %+v, want %s only, mode 0600", r.VarsFiles, varsFile)
	}
	line := strings.Join(r.Argv, " ")
	if len(r.Argv) == 0 || strings.Contains(line, "********") || strings.Contains(line, "password") || strings.Contains(line, ansible.SecretsFile) {
		t.Errorf("argv %q: want ansible-playbook's, without a secret or secrets.yml", line)
	}
	if !reflect.DeepEqual(r.KubesprayVars, vars) {
		got, _ := json.MarshalIndent(r.KubesprayVars, "", "  ")
		want, _ := json.MarshalIndent(vars, "", "  ")
		t.Errorf("kubespray got\n%s\nwant\n%s", got, want)
	}
}

// TestKubesprayVarsFile: the vars file kubespray runs get holds the
// variables and the passwords the inventory refers to, nothing of
// heatsible's own variables; it is 0600 in the bundle, passed with -e @
// instead of secrets.yml, and no secret reaches argv; the plan masks the
// proxies' user information.
func TestKubesprayVarsFile(t *testing.T) {
	req, topo := scaleFixture(t, "kubespray_lb")
	f, err := RenderOp(req, topo, testPkg, Op{Name: OpScaleEnd, Nodes: []string{"workernode-c3d4e5f6a1b2"}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(f.KubesprayVarsYAML, &doc); err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(doc))
	if want := []string{"additional_no_proxy", "heatsible_secrets", "http_proxy", "https_proxy", "kube_pods_subnet", "kube_service_addresses", "supplementary_addresses_in_ssl_keys"}; !slices.Equal(keys, want) {
		t.Errorf("vars file keys %v, want %v", keys, want)
	}
	if s, _ := doc["heatsible_secrets"].(map[string]any); len(s) != 2 || s["master_password"] != "test-password-m" || s["worker_password"] != "test-password-w" {
		t.Errorf("heatsible_secrets %v", doc["heatsible_secrets"])
	}
	b, err := ansible.NewBundle(ansible.BundleSpec{Cluster: topo.Cluster, Operation: OpScaleEnd, BaseDir: t.TempDir(), Inventory: f.Inventory, Playbook: f.Playbook,
		GroupVars: f.GroupVars, Secrets: f.Secrets, SecretValues: f.SecretValues, VarsFiles: f.VarsFiles()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	st, err := os.Stat(filepath.Join(b.Dir, KubesprayVarsFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s in the bundle: %v %v, want mode 0600", KubesprayVarsFile, err, st)
	}
	ph := &phaseRunner{files: f}
	for _, p := range f.Phases {
		if p.Kind != PhaseKubespray {
			continue
		}
		argv, err := ansible.Command(b, "/stage", ansible.PlaybookOptions{Playbooks: []string{p.Playbook}, Limit: p.Limit, ExtraVars: p.ExtraVars,
			Inventory: ph.files.KubesprayInventoryPath, VarsFile: KubesprayVarsFile, Become: true})
		if err != nil {
			t.Fatal(err)
		}
		line := strings.Join(argv, " ")
		if !strings.Contains(line, "--extra-vars=@/stage/"+KubesprayVarsFile) || strings.Contains(line, ansible.SecretsFile) {
			t.Errorf("%s: %s, want --extra-vars=@/stage/%s and not secrets.yml", p.Playbook, line, KubesprayVarsFile)
		}
		for _, s := range []string{"password1", "password2", "test-password", "192.168.0.0"} {
			if strings.Contains(line, s) {
				t.Errorf("%s: argv holds %q: %s", p.Playbook, s, line)
			}
		}
	}
	masked := MaskedKubesprayVars(f.KubesprayVars)
	if masked["http_proxy"] != "http://********@proxy.example.com:3128" || masked["https_proxy"] != "http://********@proxy.example.com:3128" {
		t.Errorf("masked %v", masked)
	}
	if f.KubesprayVars["http_proxy"] != "http://user1:password1@proxy.example.com:3128" {
		t.Errorf("masking changed the vars themselves: %v", f.KubesprayVars)
	}
	for _, u := range []string{"http://user1:password1@proxy.example.com:3128", "http://user2:password2@proxy.example.com:3128"} {
		if !slices.Contains(f.SecretValues, u) {
			t.Errorf("%s is not among the secret values", u)
		}
	}
}
