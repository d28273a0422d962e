package inventory

import (
	"bytes"
	"fmt"
	"io"
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
			parts[i] = v.Name + "=" + v.Value
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

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func add(m *yaml.Node, k string, v *yaml.Node) { m.Content = append(m.Content, str(k), v) }
