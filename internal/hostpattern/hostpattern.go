// Package hostpattern is the part of Ansible that "heatsible plan" needs
// to say what a run would do without running it: a rendered playbook's
// plays (hosts pattern, roles, tags, tasks), a YAML inventory's hosts and
// groups, Ansible's host patterns (groups, globs, ~regex, &, !) resolved
// against it, and --tags applied to roles. It knows nothing of heatsible's
// operations; package lcm builds its Plan from these.
package hostpattern

import (
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Role is one role of a play.
type Role struct {
	Name string   `json:"name"`
	Tags []string `json:"tags,omitempty"`
	// Selected is false when --tags leaves the role out.
	Selected bool `json:"selected"`
}

// Selected applies --tags to a role or task tagged have: everything runs
// without --tags, and with "all"; "always" always runs.
func Selected(have, want []string) bool {
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

// Play is what a plan needs of one play of a playbook.
type Play struct {
	Name   string
	Hosts  string
	Roles  []Role
	Tags   []string
	Tasks  []string
	Import string
}

// ParsePlaybook reads the plays of a rendered playbook: each one's hosts
// pattern, roles (with their tags), tags and task names, or the playbook
// an import_playbook pulls in.
func ParsePlaybook(b []byte) ([]Play, error) {
	var raw []map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("parsing the rendered playbook: %w", err)
	}
	var out []Play
	for i, m := range raw {
		var p Play
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

// Inventory is a YAML inventory as far as host patterns need it.
type Inventory struct {
	hosts  []string            // inventory order
	groups map[string][]string // group -> hosts (children included), inventory order
}

// ParseInventory reads a YAML inventory's hosts and groups (children
// included), in the inventory's order.
func ParseInventory(b []byte) (*Inventory, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("parsing the inventory: %w", err)
	}
	inv := &Inventory{groups: map[string][]string{}}
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

// Hosts are the inventory's hosts, in inventory order.
func (inv *Inventory) Hosts() []string { return inv.hosts }

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

// Resolve evaluates an Ansible host pattern (a play's hosts): terms
// separated by "," (or ":"), each a host, a group, "all"/"*", a glob or
// "~regex" (matched from the start of a name, as Python's re.match);
// "&term" intersects, "!term" excludes. Unknown names match nothing, as in
// Ansible (which warns). Subscripts (group[0]) are not supported.
func (inv *Inventory) Resolve(pattern string) ([]string, error) {
	return inv.evaluate(splitHostPattern(pattern))
}

// ResolveLimit evaluates a --limit value as ansible-playbook does
// (InventoryManager.subset): a pattern whose terms may be @FILE, each line
// of FILE one more term (see LimitPatterns).
func (inv *Inventory) ResolveLimit(limit string) ([]string, error) {
	terms, err := LimitPatterns(limit)
	if err != nil {
		return nil, err
	}
	return inv.evaluate(terms)
}

// splitHostPattern is Ansible's split_host_pattern: split on ',' when
// there is one, else on ':' unless the pattern is an address (IPv6, or
// host:port).
func splitHostPattern(pattern string) []string {
	var terms []string
	switch {
	case strings.Contains(pattern, ","):
		terms = strings.Split(pattern, ",")
	case strings.Count(pattern, ":") > 0 && !strings.Contains(pattern, "::") && !ipv6ish(pattern) && !hostPort.MatchString(strings.TrimSpace(pattern)):
		terms = strings.Split(pattern, ":")
	default:
		terms = []string{pattern}
	}
	var out []string
	for _, t := range terms {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// hostPort is a host:port that Ansible's parse_address takes as one
// address rather than two patterns.
var hostPort = regexp.MustCompile(`^[A-Za-z0-9._-]+:[0-9]+$`)

// LimitPatterns returns the terms of a --limit value as ansible-playbook
// reads them: split like a host pattern, and each @FILE term replaced by
// the lines of FILE, each stripped, read on this machine (Python's text
// mode: "\r\n" and "\r" end lines too). A line holding ',' or starting
// with '@' is refused: ansible-playbook takes it as one pattern that names
// nothing, and heatsible hands the lines on joined by ',' (LimitArg).
func LimitPatterns(limit string) ([]string, error) {
	var out []string
	for _, t := range splitHostPattern(limit) {
		if !strings.HasPrefix(t, "@") {
			out = append(out, t)
			continue
		}
		name := t[1:]
		st, err := os.Stat(name)
		if err != nil {
			return nil, fmt.Errorf("--limit %s: cannot read the limit file: %v", t, err)
		}
		if st.IsDir() {
			return nil, fmt.Errorf("--limit %s: a limit starting with '@' must be a file, not a directory", t)
		}
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("--limit %s: cannot read the limit file: %v", t, err)
		}
		if !utf8.Valid(data) {
			return nil, fmt.Errorf("--limit %s: the limit file is not UTF-8 text", t)
		}
		text := strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n")
		for i, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			if strings.Contains(line, ",") || strings.HasPrefix(line, "@") {
				return nil, fmt.Errorf("--limit %s: line %d holds ',' or starts with '@'; a limit file has one host pattern per line (ansible-playbook would take the line as one pattern that names nothing)", t, i+1)
			}
			out = append(out, line)
		}
	}
	return out, nil
}

// LimitArg is the --limit value to hand ansible-playbook for limit: limit
// itself, or, when it names a limit file, its patterns joined by ',' (with
// a ',' at the end, so that even one pattern is not split on ':'). The
// file is read on this machine, so the run and plan agree wherever
// ansible-playbook runs (the Ansible host has no such file).
func LimitArg(limit string) (string, error) {
	terms, err := LimitPatterns(limit)
	if err != nil {
		return "", err
	}
	for _, t := range splitHostPattern(limit) {
		if strings.HasPrefix(t, "@") {
			var kept []string
			for _, p := range terms {
				if p != "" {
					kept = append(kept, p)
				}
			}
			return strings.Join(kept, ",") + ",", nil
		}
	}
	return limit, nil
}

// evaluate is Ansible's _evaluate_patterns: the plain terms first (in
// order, a union), then the '&' terms (intersections), then the '!' terms
// (exclusions); with no plain term it starts from all hosts. Empty terms
// are skipped.
func (inv *Inventory) evaluate(terms []string) ([]string, error) {
	union := map[string]bool{}
	var and, not [][]string
	plain := 0
	for _, term := range terms {
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
			plain++
			for _, h := range hs {
				union[h] = true
			}
		}
	}
	if plain == 0 {
		for _, h := range inv.hosts {
			union[h] = true
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

func (inv *Inventory) term(t string) ([]string, error) {
	if t == "all" || t == "*" {
		return inv.hosts, nil
	}
	if strings.ContainsAny(t, "[]") && !strings.HasPrefix(t, "~") {
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
		// Ansible matches with Python's re.match: anchored at the start
		// of the name, not at its end.
		re, err := regexp.Compile("^(?:" + t[1:] + ")")
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
