package lcm

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/params"
)

// PlanOptions is one "heatsible plan" invocation: the inputs of "heatsible
// run" that decide what runs where.
type PlanOptions struct {
	Operation string
	// Target and DeleteReleased complete the operation (see Op).
	Target         string
	DeleteReleased bool
	Nodes          []string
	Request        *params.Request
	PackageDir     string
	Source         Source
	Limit          string
	Tags           []string
	Version        string
}

// Plan is what "heatsible run" would do, step by step. It is derived from
// the very playbook and inventory RenderOp renders for the run, so it cannot
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
	Pattern string   `json:"pattern,omitempty"`
	Hosts   []string `json:"hosts"`
	Roles   []Role   `json:"roles"`
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

// Role is one role of a play.
type Role struct {
	Name string   `json:"name"`
	Tags []string `json:"tags,omitempty"`
	// Selected is false when --tags leaves the role out.
	Selected bool `json:"selected"`
}

// MakePlan reads the topology (from the file, or from Heat: never a node),
// renders the operation's files as Run does, and resolves every play's hosts
// and roles. Errors carry exit codes.
func MakePlan(ctx context.Context, o PlanOptions) (*Plan, error) {
	op := Op{Name: o.Operation, Target: o.Target, DeleteReleased: o.DeleteReleased, Nodes: o.Nodes, Tags: o.Tags}
	t, files, err := load(ctx, op, o.Request, o.PackageDir, o.Source, o.Version)
	if err != nil {
		return nil, err
	}
	p := &Plan{Limit: o.Limit, Tags: o.Tags, Steps: []Step{}, Hosts: []string{}}
	if len(files.Playbook) > 0 {
		if p, err = PlanFiles(files.Playbook, files.Inventory, o.Limit, o.Tags); err != nil {
			return nil, fail.With(fail.Internal, err)
		}
	}
	p.Operation, p.Cluster = o.Operation, t.Cluster
	if files.VIM != nil && vimLeftOut(files, o.Limit, o.Tags) == "" {
		p.VIM = files.VIM
	}
	p.Steps = withPhases(p.Steps, files, skipKubespray(false, o.Tags, o.Limit))
	for _, ph := range files.Phases {
		if ph.Kind == PhaseKubespray {
			p.Kubespray = &KubesprayPlan{
				Root: files.KubesprayRoot, Inventory: files.KubesprayInventoryPath, InventoryFormat: string(files.KubesprayInventoryFormat),
				VarsFile: KubesprayVarsFile, Vars: MaskedKubesprayVars(files.KubesprayVars),
			}
			break
		}
	}
	return p, nil
}

// withPhases puts the plays of heatsible's playbook (steps) among the
// operation's other phases, numbered in the order they run.
func withPhases(steps []Step, files *OpFiles, skip string) []Step {
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
	inv, err := parseInventory(inventoryYAML)
	if err != nil {
		return nil, err
	}
	plays, err := parsePlaybook(playbook)
	if err != nil {
		return nil, err
	}
	var limitSet map[string]bool
	if limit != "" {
		hs, err := inv.resolve(limit)
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
		s := Step{Number: i + 1, Name: pl.Name, Pattern: pl.Hosts, Import: pl.Import, Tasks: pl.Tasks, Hosts: []string{}, Roles: []Role{}}
		if s.Import != "" {
			s.Runs = true
			p.Steps = append(p.Steps, s)
			continue
		}
		hs, err := inv.resolve(pl.Hosts)
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
			r.Selected = selected(all, tags)
			anySelected = anySelected || r.Selected
			s.Roles = append(s.Roles, r)
		}
		if len(s.Tasks) > 0 && selected(pl.Tags, tags) {
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
	for _, h := range inv.hosts {
		if used[h] {
			p.Hosts = append(p.Hosts, h)
		}
	}
	if len(p.Hosts) == 0 && len(p.Steps) > 0 && len(p.Warnings) == 0 {
		p.Warnings = append(p.Warnings, "no step would run: --limit and --tags leave nothing")
	}
	return p, nil
}

// selected applies --tags to a role or task tagged have: everything runs
// without --tags, and with "all"; "always" always runs.
func selected(have, want []string) bool {
	if len(want) == 0 || slices.Contains(want, "all") || slices.Contains(have, "always") {
		return true
	}
	for _, t := range have {
		if slices.Contains(want, t) {
			return true
		}
	}
	return false
}

// play is what the plan needs of one play.
type play struct {
	Name   string
	Hosts  string
	Roles  []Role
	Tags   []string
	Tasks  []string
	Import string
}

func parsePlaybook(b []byte) ([]play, error) {
	var raw []map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("parsing the rendered playbook: %w", err)
	}
	var out []play
	for i, m := range raw {
		var p play
		p.Name, _ = m["name"].(string)
		for _, k := range []string{"import_playbook", "ansible.builtin.import_playbook"} {
			if v, ok := m[k].(string); ok {
				p.Import = v
			}
		}
		if p.Import != "" {
			if p.Name == "" {
				p.Name = "import " + p.Import
			}
			out = append(out, p)
			continue
		}
		switch h := m["hosts"].(type) {
		case string:
			p.Hosts = h
		case []any:
			var parts []string
			for _, x := range h {
				parts = append(parts, fmt.Sprint(x))
			}
			p.Hosts = strings.Join(parts, ",")
		default:
			return nil, fmt.Errorf("play %d (%s) has no hosts", i+1, p.Name)
		}
		p.Tags = stringList(m["tags"])
		roles, _ := m["roles"].([]any)
		for _, r := range roles {
			switch r := r.(type) {
			case string:
				p.Roles = append(p.Roles, Role{Name: r})
			case map[string]any:
				name, _ := r["role"].(string)
				if name == "" {
					name, _ = r["name"].(string)
				}
				p.Roles = append(p.Roles, Role{Name: name, Tags: stringList(r["tags"])})
			}
		}
		for _, k := range []string{"pre_tasks", "tasks", "post_tasks"} {
			ts, _ := m[k].([]any)
			for _, t := range ts {
				tm, _ := t.(map[string]any)
				name, _ := tm["name"].(string)
				if name == "" {
					name = "(unnamed task)"
				}
				p.Tasks = append(p.Tasks, name)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

func stringList(v any) []string {
	switch v := v.(type) {
	case string:
		var out []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	return nil
}

// hostInventory is a YAML inventory as far as host patterns need it.
type hostInventory struct {
	hosts  []string            // inventory order
	groups map[string][]string // group -> hosts (children included), inventory order
}

func parseInventory(b []byte) (*hostInventory, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("parsing the inventory: %w", err)
	}
	inv := &hostInventory{groups: map[string][]string{}}
	if len(doc.Content) == 0 {
		return inv, nil
	}
	seen := map[string]bool{}
	direct := map[string][]string{}
	children := map[string][]string{}
	// Mapping nodes keep the document's order, which is the inventory's.
	var walk func(name string, g *yaml.Node)
	walk = func(name string, g *yaml.Node) {
		if _, ok := direct[name]; !ok {
			direct[name] = nil
		}
		if hs := mapValue(g, "hosts"); hs != nil {
			for k := 0; k+1 < len(hs.Content); k += 2 {
				h := hs.Content[k].Value
				direct[name] = append(direct[name], h)
				if !seen[h] {
					seen[h] = true
					inv.hosts = append(inv.hosts, h)
				}
			}
		}
		if cs := mapValue(g, "children"); cs != nil {
			for k := 0; k+1 < len(cs.Content); k += 2 {
				c := cs.Content[k].Value
				children[name] = append(children[name], c)
				walk(c, cs.Content[k+1])
			}
		}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errors.New("parsing the inventory: not a YAML mapping of groups")
	}
	for k := 0; k+1 < len(root.Content); k += 2 {
		walk(root.Content[k].Value, root.Content[k+1])
	}
	var members func(g string, depth int) []string
	members = func(g string, depth int) []string {
		if depth > 64 {
			return nil
		}
		set := map[string]bool{}
		for _, h := range direct[g] {
			set[h] = true
		}
		for _, c := range children[g] {
			for _, h := range members(c, depth+1) {
				set[h] = true
			}
		}
		var out []string
		for _, h := range inv.hosts {
			if set[h] {
				out = append(out, h)
			}
		}
		return out
	}
	for g := range direct {
		inv.groups[g] = members(g, 0)
	}
	inv.groups["all"] = slices.Clone(inv.hosts)
	return inv, nil
}

// mapValue returns the value of key in mapping node n (nil if absent or n
// is not a mapping).
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for k := 0; k+1 < len(n.Content); k += 2 {
		if n.Content[k].Value == key {
			v := n.Content[k+1]
			if v.Kind != yaml.MappingNode {
				return nil
			}
			return v
		}
	}
	return nil
}

// resolve evaluates an Ansible host pattern: terms separated by "," (or
// ":"), each a host, a group, "all"/"*", a glob or "~regex"; "&term"
// intersects, "!term" excludes. Unknown names match nothing, as in Ansible
// (which warns). Subscripts (group[0]) are not supported.
func (inv *hostInventory) resolve(pattern string) ([]string, error) {
	pattern = strings.TrimSpace(pattern)
	var terms []string
	if strings.Contains(pattern, ",") {
		terms = strings.Split(pattern, ",")
	} else if strings.Count(pattern, ":") > 0 && !strings.Contains(pattern, "::") && !ipv6ish(pattern) {
		terms = strings.Split(pattern, ":")
	} else {
		terms = []string{pattern}
	}
	union := map[string]bool{}
	var and, not [][]string
	for _, term := range terms {
		term = strings.TrimSpace(term)
		if term == "" {
			continue
		}
		op := byte(0)
		if term[0] == '&' || term[0] == '!' {
			op, term = term[0], term[1:]
		}
		hs, err := inv.term(term)
		if err != nil {
			return nil, err
		}
		switch op {
		case '&':
			and = append(and, hs)
		case '!':
			not = append(not, hs)
		default:
			for _, h := range hs {
				union[h] = true
			}
		}
	}
	for _, hs := range and {
		keep := map[string]bool{}
		for _, h := range hs {
			if union[h] {
				keep[h] = true
			}
		}
		union = keep
	}
	for _, hs := range not {
		for _, h := range hs {
			delete(union, h)
		}
	}
	var out []string
	for _, h := range inv.hosts {
		if union[h] {
			out = append(out, h)
		}
	}
	return out, nil
}

func ipv6ish(s string) bool { return strings.Count(s, ":") >= 2 }

func (inv *hostInventory) term(t string) ([]string, error) {
	if t == "all" || t == "*" {
		return inv.hosts, nil
	}
	if strings.ContainsAny(t, "[]") {
		return nil, fmt.Errorf("subscripts like %q are not supported by heatsible plan", t)
	}
	if hs, ok := inv.groups[t]; ok {
		return hs, nil
	}
	if slices.Contains(inv.hosts, t) {
		return []string{t}, nil
	}
	var match func(string) bool
	switch {
	case strings.HasPrefix(t, "~"):
		re, err := regexp.Compile(t[1:])
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", t, err)
		}
		match = re.MatchString
	case strings.ContainsAny(t, "*?"):
		match = func(s string) bool { ok, _ := path.Match(t, s); return ok }
	default:
		return nil, nil
	}
	set := map[string]bool{}
	for g, hs := range inv.groups {
		if match(g) {
			for _, h := range hs {
				set[h] = true
			}
		}
	}
	for _, h := range inv.hosts {
		if match(h) {
			set[h] = true
		}
	}
	var out []string
	for _, h := range inv.hosts {
		if set[h] {
			out = append(out, h)
		}
	}
	return out, nil
}
