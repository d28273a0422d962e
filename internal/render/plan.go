package render

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/heatsible/heatsible/internal/hostpattern"
)

// Plan is what "heatsible run" would do, step by step. It is derived from
// the very playbook and inventory Render renders for the run, so it cannot
// drift from it.
type Plan struct {
	Operation string   `json:"operation"`
	Cluster   string   `json:"cluster"`
	Limit     string   `json:"limit,omitempty"`
	Tags      []string `json:"tags,omitempty"`
	Steps     []Step   `json:"steps"`
	// Hosts are the hosts at least one step runs on, in inventory order.
	Hosts []string `json:"hosts"`
	// Warnings are what a reviewer should know before running it, e.g. a
	// --limit that matches no host (ansible-playbook then refuses to run).
	Warnings []string `json:"warnings,omitempty"`
	// Notes are what the request means for the run that is not a problem,
	// e.g. that no kubespray playbook runs (params.Request.Notes).
	Notes []string `json:"notes,omitempty"`
	// Kubespray is what the kubespray steps hand kubespray (nil when the
	// operation runs no kubespray playbook).
	Kubespray *KubesprayPlan `json:"kubespray,omitempty"`
	// VIM is where Tacker's Kubernetes VIM will point (nil when the
	// operation prepares none).
	VIM *VIMEndpoint `json:"vim,omitempty"`
}

// KubesprayPlan is what every kubespray step of a plan gets besides its
// playbook.
type KubesprayPlan struct {
	// Root is kubespray_root_path, the kubespray steps' working directory.
	Root string `json:"root"`
	// Inventory is the inventory file heatsible writes (mode 0600) and
	// passes with -i; InventoryFormat is "ini" or "yaml".
	Inventory       string `json:"inventory"`
	InventoryFormat string `json:"inventory_format"`
	// VarsFile is the run bundle's file passed with -e @ (mode 0600): Vars,
	// and the masters' and workers' passwords the inventory refers to.
	VarsFile string `json:"vars_file"`
	// Vars are the variables from the request, secrets masked (the
	// user:password of proxy URLs).
	Vars map[string]any `json:"vars"`
}

// Step is one play of the rendered playbook, or one of the operation's
// other phases (Kind: kubespray, write-inventory, ...).
type Step struct {
	// Kind is empty for a play of heatsible's playbook, else the phase's
	// kind (see Phase).
	Kind string `json:"kind,omitempty"`
	// Number counts from 1, in playbook order.
	Number int    `json:"number"`
	Name   string `json:"name"`
	// Pattern is the play's hosts: pattern; Hosts what it resolves to in
	// the inventory, narrowed by --limit.
	Pattern string             `json:"pattern,omitempty"`
	Hosts   []string           `json:"hosts"`
	Roles   []hostpattern.Role `json:"roles"`
	// Tasks are the names of the play's own tasks (pre_tasks, tasks,
	// post_tasks), if it has any besides its roles.
	Tasks []string `json:"tasks,omitempty"`
	// Import is the playbook an import_playbook step pulls in (e.g.
	// kubespray's cluster.yml): its plays and hosts are its own.
	Import string `json:"import,omitempty"`
	// Runs is false when --limit leaves no host or --tags no role; Skip
	// then says why.
	Runs bool   `json:"runs"`
	Skip string `json:"skip,omitempty"`
}

// makePlan is the plan of the rendered operation f: the plays of its
// playbook resolved against its inventory, with --limit and --tags, among
// its other phases, and what its kubespray phases and the VIM get. The
// error says why the plays could not be resolved; the plan then has the
// phases only.
func makePlan(f *Files, in Input) (*Plan, error) {
	tags := in.Op.Tags
	p := &Plan{Limit: in.Limit, Tags: tags, Steps: []Step{}, Hosts: []string{}}
	var err error
	if len(f.Playbook) > 0 {
		var pf *Plan
		if pf, err = PlanFiles(f.Playbook, f.Inventory, in.Limit, tags); err == nil {
			p = pf
		}
	}
	p.Operation, p.Cluster = in.Op.Name, in.Topology.Cluster
	p.Notes = append(in.Request.Notes(), WaitNotes(in.Op.Waits)...)
	if f.VIM != nil && (err != nil || vimSkip(p) == "") {
		p.VIM = f.VIM
		if w := f.VIM.Warning; w != "" {
			p.Warnings = append(p.Warnings, w)
		}
	}
	p.Steps = withPhases(p.Steps, f, SkipKubespray(false, tags, in.Limit))
	for _, ph := range f.Phases {
		if ph.Kind == PhaseKubespray {
			p.Kubespray = &KubesprayPlan{
				Root: f.KubesprayRoot, Inventory: f.KubesprayInventoryPath, InventoryFormat: string(f.KubesprayInventoryFormat),
				VarsFile: KubesprayVarsFile, Vars: MaskedKubesprayVars(f.KubesprayVars),
			}
			break
		}
	}
	return p, err
}

// vimSkip says why --limit or --tags keep the k8s_vim role from running,
// or "" when it runs: p's plays are the rendered playbook's.
func vimSkip(p *Plan) string {
	for _, st := range p.Steps {
		for _, r := range st.Roles {
			if r.Name != VIMRole {
				continue
			}
			switch {
			case !r.Selected:
				return "--tags/--role leave " + VIMRole + " out"
			case !st.Runs:
				return st.Skip
			}
			return ""
		}
	}
	return "the playbook has no " + VIMRole + " play"
}

// withPhases puts the plays of heatsible's playbook (steps) among the
// operation's other phases, numbered in the order they run.
func withPhases(steps []Step, files *Files, skip string) []Step {
	var out []Step
	for _, ph := range files.Phases {
		if ph.Kind == PhasePlaybook {
			out = append(out, steps...)
			continue
		}
		st := Step{Kind: ph.Kind, Name: ph.String(), Hosts: ph.Hosts, Runs: skip == ""}
		if st.Hosts == nil {
			st.Hosts = []string{}
		}
		switch ph.Kind {
		case PhaseKubespray:
			st.Import = path.Join(files.KubesprayRoot, ph.Playbook)
			st.Pattern = ph.Limit
		case PhaseWriteInventory:
			st.Name = fmt.Sprintf("write the kubespray inventory %s (%s)", files.KubesprayInventoryPath, strings.ToUpper(string(files.KubesprayInventoryFormat)))
			if len(ph.Hosts) > 0 {
				st.Name += " (without " + strings.Join(ph.Hosts, ", ") + ")"
			}
		case PhaseRemoveInventory:
			st.Name = "remove the kubespray inventory " + files.KubesprayInventoryPath
		case PhaseCleanStaging:
			st.Runs = true
		}
		if !st.Runs {
			st.Skip = skip
		}
		out = append(out, st)
	}
	for i := range out {
		out[i].Number = i + 1
	}
	if out == nil {
		out = []Step{}
	}
	return out
}

// PlanFiles resolves a rendered playbook against a YAML inventory, with
// Ansible's --limit and --tags.
func PlanFiles(playbook, inventoryYAML []byte, limit string, tags []string) (*Plan, error) {
	inv, err := hostpattern.ParseInventory(inventoryYAML)
	if err != nil {
		return nil, err
	}
	plays, err := hostpattern.ParsePlaybook(playbook)
	if err != nil {
		return nil, err
	}
	var limitSet map[string]bool
	if limit != "" {
		hs, err := inv.ResolveLimit(limit)
		if err != nil {
			return nil, fmt.Errorf("--limit %q: %w", limit, err)
		}
		limitSet = map[string]bool{}
		for _, h := range hs {
			limitSet[h] = true
		}
	}
	p := &Plan{Limit: limit, Tags: tags, Steps: []Step{}, Hosts: []string{}}
	if limitSet != nil && len(limitSet) == 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("--limit %s matches no host of the inventory: ansible-playbook would run nothing", limit))
	}
	used := map[string]bool{}
	for i, pl := range plays {
		s := Step{Number: i + 1, Name: pl.Name, Pattern: pl.Hosts, Import: pl.Import, Tasks: pl.Tasks, Hosts: []string{}, Roles: []hostpattern.Role{}}
		if s.Import != "" {
			s.Runs = true
			p.Steps = append(p.Steps, s)
			continue
		}
		hs, err := inv.Resolve(pl.Hosts)
		if err != nil {
			return nil, fmt.Errorf("play %d (%s): hosts %q: %w", i+1, pl.Name, pl.Hosts, err)
		}
		for _, h := range hs {
			if limitSet == nil || limitSet[h] {
				s.Hosts = append(s.Hosts, h)
			}
		}
		anySelected := false
		for _, r := range pl.Roles {
			all := append(slices.Clone(pl.Tags), r.Tags...)
			r.Selected = hostpattern.Selected(all, tags)
			anySelected = anySelected || r.Selected
			s.Roles = append(s.Roles, r)
		}
		if len(s.Tasks) > 0 && hostpattern.Selected(pl.Tags, tags) {
			anySelected = true
		}
		switch {
		case len(s.Hosts) == 0 && limit != "":
			s.Skip = "no host left after --limit"
		case len(s.Hosts) == 0:
			s.Skip = "no host in the inventory matches " + pl.Hosts
		case !anySelected:
			s.Skip = "no role left after --tags"
		default:
			s.Runs = true
			for _, h := range s.Hosts {
				used[h] = true
			}
		}
		p.Steps = append(p.Steps, s)
	}
	for _, h := range inv.Hosts() {
		if used[h] {
			p.Hosts = append(p.Hosts, h)
		}
	}
	if len(p.Hosts) == 0 && len(p.Steps) > 0 && len(p.Warnings) == 0 {
		p.Warnings = append(p.Warnings, "no step would run: --limit and --tags leave nothing")
	}
	return p, nil
}
