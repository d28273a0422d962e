package roles

import (
	"encoding/json"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// argSpecRefusals: for each entry point of each role's
// meta/argument_specs.yml, one parameter its spec refuses (a wrong type, a
// value outside its choices, a required option missing), the option's name
// and what Ansible's message says about it. A role that gets a spec gets a
// row (TestArgumentSpecsRefuse fails on an entry point without one).
var argSpecRefusals = []struct {
	role, entry string // the entry point is the tasks_from of import_role
	vars        string // extra vars (JSON): the wrong parameter
	option      string
	want        string // Ansible's words for the problem
}{
	{"apt_wait", "main", `{"apt_wait_timeout": "10m"}`, "apt_wait_timeout", "unable to convert to int"},
	{"apt_wait", "update", `{"proxy_env": ["http://proxy:3128"]}`, "proxy_env", "unable to convert to dict"},
	{"cinder_volume", "main", `{"cinder_volume_trust_device_name": "perhaps"}`, "cinder_volume_trust_device_name", "unable to convert to bool"},
	{"external_lb", "main", `{"external_lb_script": "/lb.sh", "external_lb_interface": "octavia"}`, "external_lb_interface", "must be one of: heatsible, tacker, got: octavia"},
	{"k8s_join", "main", `{"k8s_join_nodes": ["worker-1"]}`, "k8s_join_master", "missing required arguments: k8s_join_master"},
	{"k8s_node", "main", `{"k8s_node_state": "deleted"}`, "k8s_node_state", "must be one of: drained, absent, got: deleted"},
	{"k8s_vim", "main", `{"k8s_vim_endpoint_port": "https"}`, "k8s_vim_endpoint_port", "unable to convert to int"},
	{"kubeconfig", "main", `{"kubeconfig_search": {"path": "/etc/kubernetes/admin.conf"}}`, "kubeconfig_search", "unable to convert to list"},
	{"nfs_client", "main", `{"nfs_client_nlm_pvs": [{"mount_options": ["nfsvers=3"]}]}`, "nfs_client_nlm_pvs", "missing required arguments: name found in nfs_client_nlm_pvs"},
	{"nfs_server", "main", `{"nfs_server_impl": "knfsd"}`, "nfs_server_impl", "must be one of: kernel, ganesha, got: knfsd"},
	{"pv_register", "main", `{"pv_wait_timeout": "2m"}`, "pv_wait_timeout", "unable to convert to int"},
}

// TestArgumentSpecsRefuse runs each row's role (import_role, its entry
// point) on this machine with the row's wrong parameter: the run fails in
// the task Ansible puts first in the role, the argument spec's validation,
// naming the option, and no task of the role runs after it (one would find
// no host: the play's ssh is /bin/false, so a spec that lets the value
// through does not run the role on this machine). Every entry point of
// every spec in the roles has a row. Seen failing, row by row, with the
// spec's type, choices or required taken off the row's option.
func TestArgumentSpecsRefuse(t *testing.T) {
	rows := map[string]bool{}
	for _, r := range argSpecRefusals {
		rows[r.role+"/"+r.entry] = true
	}
	specs, err := fs.Glob(FS, "*/meta/argument_specs.yml")
	if err != nil || len(specs) == 0 {
		t.Fatalf("no argument specs in the roles (%v)", err)
	}
	for _, s := range specs {
		b, err := fs.ReadFile(FS, s)
		if err != nil {
			t.Fatal(err)
		}
		var spec struct {
			ArgumentSpecs map[string]any `yaml:"argument_specs"`
		}
		if err := yaml.Unmarshal(b, &spec); err != nil || len(spec.ArgumentSpecs) == 0 {
			t.Fatalf("%s: no entry points (%v)", s, err)
		}
		role := strings.Split(s, "/")[0]
		for entry := range spec.ArgumentSpecs {
			if !rows[role+"/"+entry] {
				t.Errorf("%s: entry point %s has no row in argSpecRefusals", s, entry)
			}
			delete(rows, role+"/"+entry)
		}
	}
	for r := range rows {
		t.Errorf("argSpecRefusals: row %s is not an entry point of a role's meta/argument_specs.yml", r)
	}

	roles := needAnsible(t)
	task := regexp.MustCompile(`(?m)^TASK \[.*$`)
	fatal := regexp.MustCompile(`(?m)^fatal: \[localhost\]: FAILED! => .*$`)
	for _, r := range argSpecRefusals {
		t.Run(r.role+"/"+r.entry, func(t *testing.T) {
			t.Parallel()
			// A task after the validation would reach no host: ssh is
			// /bin/false (the validation runs on the controller alone).
			pb := "- hosts: localhost\n  gather_facts: false\n  connection: ssh\n" +
				"  vars: {ansible_ssh_executable: /bin/false}\n  tasks:\n" +
				"    - ansible.builtin.import_role: {name: " + r.role + ", tasks_from: " + r.entry + "}\n"
			code, out := runPlaybook(t, roles, pb, r.vars, nil)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (the argument spec refused %s):\n%s", code, r.option, out)
			}
			first := "TASK [" + r.role + " : Validating arguments against arg spec '" + r.entry + "'"
			if tasks := task.FindAllString(out, -1); len(tasks) != 1 || !strings.HasPrefix(tasks[0], first) {
				t.Errorf("the tasks that ran are %q, want only %q:\n%s", tasks, first+" ...]", out)
			}
			var res struct {
				Msg     string
				Context struct {
					Name string
					Spec string `json:"argument_spec_name"`
				} `json:"validate_args_context"`
			}
			line := fatal.FindString(out)
			if line == "" || json.Unmarshal([]byte(strings.TrimPrefix(line, "fatal: [localhost]: FAILED! => ")), &res) != nil {
				t.Fatalf("no failure of the validation task:\n%s", out)
			}
			if !strings.HasPrefix(res.Msg, "Validation of arguments failed") || res.Context.Name != r.role || res.Context.Spec != r.entry ||
				!strings.Contains(res.Msg, r.option) || !strings.Contains(res.Msg, r.want) {
				t.Errorf("the validation of %s's %s failed with %q (%s, %s), want it naming %s (%q):\n%s",
					r.role, r.entry, res.Msg, res.Context.Name, res.Context.Spec, r.option, r.want, out)
			}
		})
	}
}
