package lcm

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/render"
)

// Which ansible-playbook runs what.
//
// heatsible's roles and kubespray's playbooks may need different Ansibles
// on one Ansible host (kubespray 2.16 wants Ansible 2.9; heatsible's roles
// want ansible-core 2.14 to 2.19). Each has its setting: the request's
// ansible.ansible_playbook and ansible.kubespray_ansible_playbook, which
// the run flags --ansible-playbook and --kubespray-ansible-playbook
// override. Unset, heatsible's roles run with ansible-playbook in the
// Ansible host's PATH, and kubespray with its virtualenv under (or beside)
// kubespray_root_path if it has one (KubesprayVenvs), else the same.
// Both are found and checked on connecting, before anything changes
// (ansible.CheckAnsible); plan shows the settings.

// AnsibleSettings are the two settings, as given.
type AnsibleSettings struct {
	// Roles and Kubespray are the flags' values ("" when not given).
	Roles, Kubespray string
}

// resolve puts the flags over the request's fields.
func (s AnsibleSettings) resolve(req *params.Request) (roles, kubespray string) {
	roles, kubespray = s.Roles, s.Kubespray
	if a := req.Cluster.Ansible; a != nil {
		if roles == "" {
			roles = a.AnsiblePlaybook
		}
		if kubespray == "" {
			kubespray = a.KubesprayAnsiblePlaybook
		}
	}
	return roles, kubespray
}

// check refuses a flag's value the way validate refuses the request's.
func (s AnsibleSettings) check() error {
	for _, f := range []struct{ flag, v string }{{"--ansible-playbook", s.Roles}, {"--kubespray-ansible-playbook", s.Kubespray}} {
		if f.v == "" {
			continue
		}
		if msg := params.CheckAnsiblePlaybook(f.v); msg != "" {
			return fail.With(fail.Invalid, fmt.Errorf("%s: %s", f.flag, msg))
		}
	}
	return nil
}

// KubesprayVenvs are the virtualenvs heatsible looks for, in this order,
// when kubespray's ansible-playbook is not set: under kubespray_root_path
// (venv, .venv, kubespray-venv), then kubespray-venv beside it, where
// kubespray's docs (docs/ansible/ansible.md) make it.
func KubesprayVenvs(root string) []string {
	return []string{path.Join(root, "venv"), path.Join(root, ".venv"), path.Join(root, "kubespray-venv"), path.Join(path.Dir(root), "kubespray-venv")}
}

// ansibleWants are the ansible-playbooks the operation will run: heatsible's
// when it has a playbook, kubespray's when a kubespray phase runs (skip:
// why kubespray is left out of this run, "" if it is not).
func ansibleWants(req *params.Request, s AnsibleSettings, files *render.Files, skip string) []ansible.AnsibleWant {
	roles, kubespray := s.resolve(req)
	c := req.Cluster
	passwords := (c.MasterNode != nil && c.MasterNode.Password != "") || (c.WorkerNode != nil && c.WorkerNode.Password != "") ||
		(c.StorageServer != nil && c.StorageServer.Password != "") || (c.ExternalLBParam != nil && c.ExternalLBParam.SSHPassword != "")
	var wants []ansible.AnsibleWant
	if len(files.Playbook) > 0 {
		wants = append(wants, ansible.AnsibleWant{For: ansible.ForRoles, Setting: roles, Collections: ansible.RoleCollections, SSHPass: passwords})
	}
	if skip != "" {
		return wants
	}
	for _, ph := range files.Phases {
		if ph.Kind != render.PhaseKubespray {
			continue
		}
		root := files.KubesprayRoot
		w := ansible.AnsibleWant{For: ansible.ForKubespray, Setting: kubespray, Dir: root, SSHPass: passwords,
			BoundsFiles: []string{path.Join(root, "playbooks", "ansible_version.yml"), path.Join(root, "ansible_version.yml")}}
		if kubespray == "" {
			for _, v := range KubesprayVenvs(root) {
				w.Candidates = append(w.Candidates, v+"/bin/ansible-playbook")
			}
		}
		return append(wants, w)
	}
	return wants
}

// checkAnsibles refuses (exit code 2, nothing changed) when an
// ansible-playbook the run needs is missing or unsupported, and else says
// which ones will run.
func (p *phaseRunner) checkAnsibles(wants []ansible.AnsibleWant, found []ansible.AnsibleFound, where string) error {
	p.ansibles = map[string]ansible.AnsibleFound{}
	for i, w := range wants {
		if err := ansible.CheckAnsible(w, found[i], where); err != nil {
			return fail.With(fail.Invalid, err)
		}
		p.ansibles[w.For] = found[i]
	}
	for _, w := range wants {
		what := "heatsible's roles run with"
		if w.For == ansible.ForKubespray {
			what = "kubespray runs with"
		}
		p.say("%s: %s %s", where, what, p.ansibles[w.For].Summary())
	}
	return nil
}

// withAnsible sets the ansible-playbook (and virtualenv) of purpose on o.
func (p *phaseRunner) withAnsible(o ansible.PlaybookOptions, purpose string) ansible.PlaybookOptions {
	if f, ok := p.ansibles[purpose]; ok {
		o.Binary, o.Venv = f.Path, f.Venv
	}
	return o
}

// prober finds ansible-playbooks where a runner runs them.
type prober interface {
	Probe(ctx context.Context, wants []ansible.AnsibleWant) ([]ansible.AnsibleFound, error)
}

// AnsiblePlan is how plan shows one ansible-playbook setting.
type AnsiblePlan struct {
	// For is "heatsible" (its roles) or "kubespray".
	For string `json:"for"`
	// Setting is the value given ("" when unset) and From where it came
	// ("flag", "request", or "default").
	Setting string `json:"setting,omitempty"`
	From    string `json:"from"`
	// Looks says where heatsible looks, and Checks what it checks on
	// connecting.
	Looks  string `json:"looks"`
	Checks string `json:"checks"`
}

// planAnsibles is what plan says of the ansible-playbooks of wants.
func planAnsibles(req *params.Request, s AnsibleSettings, wants []ansible.AnsibleWant) []AnsiblePlan {
	var out []AnsiblePlan
	for _, w := range wants {
		ap := AnsiblePlan{For: w.For, Setting: w.Setting, From: "default"}
		flag, field := s.Roles, "ansible_playbook"
		if w.For == ansible.ForKubespray {
			flag, field = s.Kubespray, "kubespray_ansible_playbook"
		}
		switch {
		case flag != "":
			ap.From = "flag"
		case w.Setting != "":
			ap.From = "request (ansible." + field + ")"
		}
		switch {
		case strings.Contains(w.Setting, "/"):
			ap.Looks = w.Setting + " (a virtualenv's bin/ansible-playbook if it is a directory)"
		case w.Setting != "":
			ap.Looks = w.Setting + " in the PATH of the Ansible host's login"
		case len(w.Candidates) > 0:
			ap.Looks = "the first of " + strings.Join(w.Candidates, ", ") + " that exists, else ansible-playbook in the PATH of the Ansible host's login"
		default:
			ap.Looks = "ansible-playbook in the PATH of the Ansible host's login"
		}
		if w.For == ansible.ForRoles {
			var colls []string
			for _, c := range slices.Sorted(maps.Keys(w.Collections)) {
				colls = append(colls, c+" ("+strings.Join(w.Collections[c], ", ")+")")
			}
			ap.Checks = fmt.Sprintf("ansible-core %s, with %s", ansible.CoreRange(), strings.Join(colls, " and "))
		} else {
			ap.Checks = fmt.Sprintf("Ansible %s or later, within the bounds of kubespray's own %s (or %s)", ansible.MinKubesprayAnsible, w.BoundsFiles[0], path.Base(w.BoundsFiles[1]))
		}
		out = append(out, ap)
	}
	return out
}
