package inventory

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"strings"

	"gopkg.in/ini.v1"
	"gopkg.in/yaml.v3"
)

// Format is an inventory file format.
type Format string

// The formats Write supports.
const (
	INI  Format = "ini"
	YAML Format = "yaml"
)

// ParseFormat checks a --format value.
func ParseFormat(s string) (Format, error) {
	switch Format(strings.ToLower(s)) {
	case INI:
		return INI, nil
	case YAML, "yml":
		return YAML, nil
	}
	return "", fmt.Errorf("--format %q: want ini or yaml", s)
}

// Write writes inv in format f.
func (inv *Inventory) Write(w io.Writer, f Format) error {
	switch f {
	case INI:
		return inv.WriteINI(w)
	case YAML:
		return inv.WriteYAML(w)
	}
	return fmt.Errorf("inventory: unknown format %q", f)
}

// WriteINI writes Ansible's INI inventory with gopkg.in/ini.v1.
//
// Ansible's INI is not quite INI: a host line is "name var=value var=value",
// and a group member is a bare name. ini.v1 expresses both: a host line is a
// key (the host name) whose value is its variables, written with a space as
// the delimiter; a member is a boolean key. Values are restricted by Build to
// characters that need no quoting, so what ini.v1 writes is what Ansible
// reads (a test loads it with ansible-inventory).
func (inv *Inventory) WriteINI(w io.Writer) error {
	f := ini.Empty(ini.LoadOptions{AllowBooleanKeys: true, KeyValueDelimiterOnWrite: " "})
	all, err := f.NewSection(GroupAll)
	if err != nil {
		return err
	}
	for _, h := range inv.Hosts {
		parts := make([]string, len(h.Vars))
		for i, v := range h.Vars {
			if !safeValue.MatchString(v.Value) && !VarRef.MatchString(v.Value) {
				return fmt.Errorf("inventory: host %s: %s %q needs quoting that an INI inventory line cannot be trusted with", h.Name, v.Name, v.Value)
			}
			parts[i] = v.Name + "=" + iniValue(v.Value)
		}
		if len(parts) == 0 {
			if _, err := all.NewBooleanKey(h.Name); err != nil {
				return err
			}
			continue
		}
		if _, err := all.NewKey(h.Name, strings.Join(parts, " ")); err != nil {
			return err
		}
	}
	for _, g := range inv.Groups {
		if len(g.Hosts) > 0 || len(g.Children) == 0 {
			s, err := f.NewSection(g.Name)
			if err != nil {
				return err
			}
			for _, h := range g.Hosts {
				if _, err := s.NewBooleanKey(h); err != nil {
					return err
				}
			}
		}
		if len(g.Children) > 0 {
			s, err := f.NewSection(g.Name + ":children")
			if err != nil {
				return err
			}
			for _, c := range g.Children {
				if _, err := s.NewBooleanKey(c); err != nil {
					return err
				}
			}
		}
	}
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// VarRef is a reference to another variable, "{{ name.key }}", the one
// Jinja expression heatsible writes into an inventory (kubespray's hosts'
// passwords, resolved from the run's 0600 vars file). Its characters need
// no escaping in INI (inside double quotes) or YAML.
var VarRef = regexp.MustCompile(`^\{\{ [A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)* \}\}$`)

// iniValue writes v so that Ansible reads it back as the string v. Ansible's
// INI plugin splits a host line with shlex and then hands each value to
// Python's ast.literal_eval: 1e3, 0x10, 1_000, -1, 1-2j, True or None would
// become numbers, booleans or null (a user "None" would silently become no
// user at all). Such values are written "'v'": shlex removes the double
// quotes, literal_eval the single ones. Build restricts values to
// [A-Za-z0-9_.:@-], so neither quote can occur inside v. IP addresses and
// values starting with a letter (other than True, False, None) are never
// Python literals and stay as they are.
func iniValue(v string) string {
	switch {
	case VarRef.MatchString(v):
		// shlex removes the double quotes and keeps the spaces inside;
		// literal_eval cannot read "{{ a.b }}" and leaves it a string,
		// which Ansible templates when it uses it.
		return `"` + v + `"`
	case v == "True" || v == "False" || v == "None":
	case v == "" || strings.ContainsAny(v[:1], "+-.0123456789") && !strings.ContainsAny(v, ":@") && !isIPv4(v):
	default:
		return v
	}
	return `"'` + v + `'"`
}

func isIPv4(v string) bool {
	a, err := netip.ParseAddr(v)
	return err == nil && a.Is4()
}

// WriteYAML writes Ansible's YAML inventory, as kubespray's
// inventory/<cluster>/hosts.yaml has it.
func (inv *Inventory) WriteYAML(w io.Writer) error {
	hosts := mapping()
	for _, h := range inv.Hosts {
		vars := mapping()
		for _, v := range h.Vars {
			add(vars, v.Name, str(v.Value))
		}
		add(hosts, h.Name, vars)
	}
	children := mapping()
	for _, g := range inv.Groups {
		gn := mapping()
		if len(g.Hosts) > 0 {
			gh := mapping()
			for _, h := range g.Hosts {
				add(gh, h, mapping())
			}
			add(gn, "hosts", gh)
		}
		if len(g.Children) > 0 {
			gc := mapping()
			for _, c := range g.Children {
				add(gc, c, mapping())
			}
			add(gn, "children", gc)
		}
		add(children, g.Name, gn)
	}
	all := mapping()
	add(all, "hosts", hosts)
	add(all, "children", children)
	root := mapping()
	add(root, GroupAll, all)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return err
	}
	return enc.Close()
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }

// str is the scalar s, double-quoted unless YAML 1.1 surely reads it as a
// string. Ansible reads inventories with PyYAML (YAML 1.1), which takes no,
// on, yes, off as booleans, 1:20 (and an IPv6 address such as
// 1:2:3:4:5:6:7:8) as a base-60 number and 2001-01-01 as a date; yaml.v3
// writes YAML 1.2 and would leave them plain.
func str(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if !plainYAML11(s) {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

func plainYAML11(s string) bool {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Is4() || strings.Trim(s, "0123456789:") != ""
	}
	if s == "" || !(s[0] == '_' || s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}

func add(m *yaml.Node, k string, v *yaml.Node) { m.Content = append(m.Content, str(k), v) }
