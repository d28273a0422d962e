package lcm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/collection"
	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/roles"
)

// literalCase is one hostile request for TestVarsReachAnsibleLiterally:
// the passwords of master, worker, storage and external LB, the proxy URLs
// and a PV manifest annotation. (A Cinder volume id from the topology was
// one too until topology values got a grammar: one with '{' no longer
// loads, TestParseRefusesHostileValues.)
type literalCase struct {
	name       string
	passwords  [4]string
	httpProxy  string
	httpsProxy string
	annotation string
}

// literalCases: "evaluated" holds Jinja that renders (Ansible would change
// the value, or run the lookup that creates pwned on the machine that runs
// Ansible); "broken" holds Jinja that does not parse (Ansible would fail,
// quoting every password in its error). Both hold every character that
// quoting gets wrong somewhere. Validation accepts the passwords (printable
// UTF-8, no control character) and the annotation; the proxy URLs it
// refuses (a proxy URL's grammar has no '{'), so the test sets them after
// validation: should a value ever slip past a grammar, it still reaches
// Ansible literally.
func literalCases(pwned string) []literalCase {
	evil := "{{ lookup('pipe', 'touch " + pwned + "') }}"
	return []literalCase{{
		name: "evaluated",
		passwords: [4]string{
			"ab{{ 7*7 }}cd ' \" \\ $HOME `id` &<> % é",
			evil,
			"{{ 6*7 }}",
			"x{{ 'y' | upper }} {{ playbook_dir }}",
		},
		httpProxy:  "http://proxy.example.com:3128/{{7*7}}",
		httpsProxy: "http://user:pw@proxy.example.com:3128/{{lookup('env','HOME')}}",
		annotation: evil + " {{ 7*7 }}",
	}, {
		name: "broken",
		passwords: [4]string{
			"ab{{ 7*7 }}cd {% raw %} {# ' \" \\ $HOME `id` &<> % é " + evil,
			"{#",
			"{% if true %}x{% endif %}{{",
			"{{ heatsible_secrets }} {% endraw %}",
		},
		httpProxy:  "http://proxy.example.com:3128/{{7*7}}{#x",
		httpsProxy: "http://user:pw@proxy.example.com:3128/{{",
		annotation: "{% raw %}{{",
	}}
}

// TestVarsReachAnsibleLiterally loads the bundle heatsible renders for a
// request full of Jinja (passwords, proxy URLs, a Cinder volume id from the
// topology, a PV manifest annotation) with the real ansible-playbook, and
// prints every variable of every host with a debug play over the same vars
// files (local connection), for the bundle's inventory and kubespray's:
// each value must arrive exactly as written, and the lookup in them must
// never run.
func TestVarsReachAnsibleLiterally(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not installed (apt-get install ansible); .ci/run installs it")
	}
	dir := t.TempDir()
	pwned := filepath.Join(dir, "PWNED")
	for _, tc := range literalCases(pwned) {
		t.Run(tc.name, func(t *testing.T) { testLiteral(t, tc) })
	}
	if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists: Ansible evaluated a request value as a template and ran its lookup", pwned)
	}
}

func testLiteral(t *testing.T, tc literalCase) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "package")
	if err := os.CopyFS(pkg, os.DirFS("../../testdata/package")); err != nil {
		t.Fatal(err)
	}
	pv1 := filepath.Join(pkg, "Files/kubernetes/nfs-pv1.yaml")
	m, err := os.ReadFile(pv1)
	if err != nil {
		t.Fatal(err)
	}
	note, _ := json.Marshal(tc.annotation)
	m = bytes.Replace(m, []byte("  name: nfs-pv1\n"), []byte("  name: nfs-pv1\n  annotations:\n    note: "+string(note)+"\n"), 1)
	if err := os.WriteFile(pv1, m, 0o644); err != nil {
		t.Fatal(err)
	}

	req, topo := scaleFixture(t, "kubespray_lb")
	c := &req.Cluster
	c.MasterNode.Password, c.WorkerNode.Password, c.StorageServer.Password, c.ExternalLBParam.SSHPassword = tc.passwords[0], tc.passwords[1], tc.passwords[2], tc.passwords[3]
	if err := req.Validate(params.Options{PackageDir: pkg, RequirePackage: true}); err != nil {
		t.Fatalf("the hostile request must pass validation: %v", err)
	}
	// Past the proxy URLs' grammar, which refuses these (see literalCase).
	c.Proxy.HTTPProxy, c.Proxy.HTTPSProxy = tc.httpProxy, tc.httpsProxy
	f, err := RenderOp(req, topo, pkg, Op{Name: OpInstantiateEnd}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(f.Manifests["nfs-pv1.yaml"]), "note:") {
		t.Fatalf("the prepared manifest lost its hostile annotation:\n%s", f.Manifests["nfs-pv1.yaml"])
	}
	b, err := ansible.NewBundle(ansible.BundleSpec{
		Cluster: topo.Cluster, Operation: OpInstantiateEnd, BaseDir: dir,
		Inventory: f.Inventory, InventoryName: "hosts.yml", Playbook: f.Playbook, Roles: roles.FS, Collections: map[string]fs.FS{collection.FQCN: collection.FS},
		GroupVars: f.GroupVars, Secrets: f.Secrets, SecretValues: f.SecretValues,
		Files: f.BundleFiles(), KnownHosts: []byte{},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ksInv := filepath.Join(dir, "kubespray-hosts.yaml")
	if err := os.WriteFile(ksInv, f.KubesprayInventory, 0o600); err != nil {
		t.Fatal(err)
	}

	// What every host must see: the vars files as written (decoded without
	// Ansible), the references heatsible writes resolved by hand.
	secrets := decodeYAML(t, f.Secrets)
	heatsibleSecrets := secrets["heatsible_secrets"].(map[string]any)
	refRE := regexp.MustCompile(`^\{\{ heatsible_secrets\.([a-z_]+) \}\}$`)
	resolve := func(v any) any {
		s, ok := v.(string)
		if !ok {
			return v
		}
		if m := refRE.FindStringSubmatch(s); m != nil {
			return heatsibleSecrets[m[1]]
		}
		return strings.ReplaceAll(s, "{{ playbook_dir }}", b.Dir)
	}
	groupVars := map[string]map[string]any{}
	names := map[string]bool{"group_names": true}
	for g, data := range f.GroupVars {
		groupVars[g] = decodeYAML(t, data)
		for k := range groupVars[g] {
			names[k] = true
		}
	}
	for k := range secrets {
		names[k] = true
	}

	t.Run("bundle inventory", func(t *testing.T) {
		got := debugVars(t, b, filepath.Join(b.Dir, ansible.InventoryDir), names, true)
		if len(got) < 6 {
			t.Fatalf("the debug play printed %d hosts, want every host of the inventory: %v", len(got), got)
		}
		for host, vars := range got {
			want := map[string]any{"group_names": vars["group_names"]}
			for k, v := range groupVars["all"] {
				want[k] = v
			}
			groups, ok := vars["group_names"].([]any)
			if !ok {
				t.Errorf("%s: no group_names", host)
				continue
			}
			for _, g := range groups {
				g, _ := g.(string)
				for k, v := range groupVars[g] {
					want[k] = v
				}
			}
			for k, v := range secrets {
				want[k] = v
			}
			for k, v := range want {
				want[k] = resolve(v)
			}
			for k, v := range want {
				if m, ok := v.([]any); ok && k == "pv_manifests" {
					for _, e := range m {
						e := e.(map[string]any)
						e["src"] = resolve(e["src"])
					}
				}
			}
			compareVars(t, host, vars, want)
		}
	})

	t.Run("kubespray inventory", func(t *testing.T) {
		hosts := decodeYAML(t, f.KubesprayInventory)["all"].(map[string]any)["hosts"].(map[string]any)
		ks := map[string]bool{"group_names": true}
		for _, hv := range hosts {
			for k := range hv.(map[string]any) {
				ks[k] = true
			}
		}
		got := debugVars(t, b, ksInv, ks, false)
		if len(got) != len(hosts) {
			t.Fatalf("the debug play printed %d hosts, the kubespray inventory has %d", len(got), len(hosts))
		}
		for host, vars := range got {
			want := map[string]any{"group_names": vars["group_names"]}
			for k, v := range hosts[host].(map[string]any) {
				want[k] = resolve(v)
			}
			compareVars(t, host, vars, want)
		}
	})
}

// debugVars runs a debug play over inventory and the bundle's secrets file
// (as heatsible runs ansible-playbook, with the bundle's ansible.cfg) and
// returns, per host, every variable in names as the host's tasks see it.
// With manifests, it also checks that a file lookup of each prepared PV
// manifest (as pv_register does it) returns the file unchanged.
func debugVars(t *testing.T, b *ansible.Bundle, inventory string, names map[string]bool, manifests bool) map[string]map[string]any {
	t.Helper()
	var list []string
	for n := range names {
		list = append(list, n)
	}
	nameList, _ := json.Marshal(list)
	pb := `- hosts: all
  gather_facts: false
  connection: local
  vars:
    literal_check_names: ` + string(nameList) + `
  tasks:
    # One variable at a time: a value that breaks templating fails its
    # own item only, and every other value is still looked at.
    - name: vars
      ansible.builtin.debug:
        msg: "{{ lookup('ansible.builtin.vars', item, default=None) }}"
      loop: "{{ literal_check_names }}"
      ignore_errors: true
`
	if manifests {
		pb += `    - name: manifests
      ansible.builtin.debug:
        msg: "{{ pv_manifests | map(attribute='src') | map('basename') | zip(query('ansible.builtin.file', *(pv_manifests | map(attribute='src')))) }}"
      run_once: true
      ignore_errors: true
`
	}
	// Beside playbook.yml, so that playbook_dir is the bundle's.
	p := filepath.Join(b.Dir, "literal-debug.yml")
	if err := os.WriteFile(p, []byte(pb), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(p)
	cmd := exec.CommandContext(context.Background(), "ansible-playbook", "-i", inventory, "-e", "@"+filepath.Join(b.Dir, ansible.SecretsFile), p)
	cmd.Dir = b.Dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"ANSIBLE_CONFIG=" + filepath.Join(b.Dir, ansible.ConfigFile), "ANSIBLE_STDOUT_CALLBACK=ansible.posix.json"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ansible-playbook: %v\n%s\n%s", err, out, stderr.String())
	}
	var res struct {
		Plays []struct {
			Tasks []struct {
				Task  struct{ Name string }     `json:"task"`
				Hosts map[string]map[string]any `json:"hosts"`
			} `json:"tasks"`
		} `json:"plays"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Plays) != 1 {
		t.Fatalf("ansible-playbook printed no JSON result (%v):\n%s", err, out)
	}
	got := map[string]map[string]any{}
	for _, task := range res.Plays[0].Tasks {
		for host, r := range task.Hosts {
			if r["failed"] == true && r["results"] == nil {
				t.Errorf("%s on %s failed: %v", task.Task.Name, host, r["msg"])
				continue
			}
			switch task.Task.Name {
			case "vars":
				got[host] = map[string]any{}
				results, _ := r["results"].([]any)
				for _, item := range results {
					item, _ := item.(map[string]any)
					name, _ := item["item"].(string)
					if item["failed"] == true {
						t.Errorf("%s: templating %s failed: %v", host, name, item["msg"])
						continue
					}
					got[host][name] = item["msg"]
				}
			case "manifests":
				pairs, _ := r["msg"].([]any)
				if len(pairs) == 0 {
					t.Errorf("the manifests task printed no manifest: %v", r)
				}
				for _, pair := range pairs {
					pair, _ := pair.([]any)
					if len(pair) != 2 {
						t.Fatalf("the manifests task printed %v", r["msg"])
					}
					name, _ := pair[0].(string)
					content, _ := pair[1].(string)
					want, err := os.ReadFile(filepath.Join(b.Dir, ManifestDir, name))
					if err != nil {
						t.Fatal(err)
					}
					// The file lookup drops the final newline.
					if content != strings.TrimSuffix(string(want), "\n") {
						t.Errorf("lookup('file') of manifest %s:\n got %q\nwant %q", name, content, want)
					}
				}
			}
		}
	}
	return got
}

// compareVars compares what a host saw with what heatsible wrote, as JSON
// (numbers and maps compare alike whoever decoded them).
func compareVars(t *testing.T, host string, got, want map[string]any) {
	t.Helper()
	norm := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for k, w := range want {
		if g := norm(got[k]); !reflect.DeepEqual(g, norm(w)) {
			t.Errorf("%s: %s arrived as\n  %v\nheatsible wrote\n  %v", host, k, g, norm(w))
		}
	}
}

func decodeYAML(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	return m
}
