package inventory

import (
	"bytes"
	"fmt"
	"regexp"

	"gopkg.in/yaml.v3"
)

// Every YAML file heatsible writes for Ansible (group_vars, secrets.yml,
// kubespray's vars file) goes through Marshal, which tags every string value
// !unsafe: Ansible then hands it to tasks, connection plugins and filters as
// it is and never renders it as a Jinja template, wherever it is referenced
// from ("{{ heatsible_secrets.x }}", a file lookup, a role default). A
// password "ab{{ 7*7 }}cd" arrives as typed instead of as "ab49cd", and one
// holding "{{ lookup('pipe', ...) }}" runs nothing on the machine that runs
// Ansible. Values added later are literal without anyone remembering to
// mark them; the only strings Ansible may render are the Jinja references
// heatsible writes itself, as Template values (docs/hostile-input.md).

// Template is a Jinja expression heatsible writes itself, e.g.
// "{{ heatsible_secrets.master_password }}": the one kind of string value
// that Marshal leaves templatable. It may hold only variable references and
// path characters (templateRE), so no request value can ride along in one.
type Template string

// templateRE is what a Template may hold: "{{ var.attr }}" references and
// the characters of a path.
var templateRE = regexp.MustCompile(`^(\{\{ [a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)* \}\}|[A-Za-z0-9_./-])+$`)

// templateTag marks a Template's scalar between Template.MarshalYAML and
// markLiteral, which turns it into a plain string. A Template marshalled
// any other way keeps the tag, which Ansible refuses to load: it fails
// loudly instead of becoming a literal by accident.
const templateTag = "!heatsible-template"

// unsafeTag is Ansible's tag for a string never to be templated.
const unsafeTag = "!unsafe"

// MarshalYAML implements yaml.Marshaler.
func (t Template) MarshalYAML() (any, error) {
	if !templateRE.MatchString(string(t)) {
		return nil, fmt.Errorf("template %q: heatsible writes only variable references and path characters as templates", string(t))
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: templateTag, Value: string(t)}, nil
}

// Marshal writes v as a YAML document for Ansible, every string value
// tagged !unsafe except Templates (see the comment at the top of the file).
// Mapping keys stay plain: they are variable and host names that heatsible
// chooses or validates.
func Marshal(v any) ([]byte, error) {
	var doc yaml.Node
	if err := doc.Encode(v); err != nil {
		return nil, err
	}
	markLiteral(&doc, false)
	var buf bytes.Buffer
	buf.WriteString("---\n# Written by heatsible for this run. Strings tagged !unsafe are\n# data that Ansible never renders as templates.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// markLiteral tags the string scalars under n !unsafe and turns Template
// scalars into plain strings. Both are double-quoted, so the file shows
// exactly which characters the value holds.
func markLiteral(n *yaml.Node, isKey bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		switch {
		case isKey:
		case n.Tag == templateTag:
			n.Tag, n.Style = "!!str", yaml.DoubleQuotedStyle
		case n.ShortTag() == "!!str":
			n.Tag, n.Style = unsafeTag, yaml.DoubleQuotedStyle
		}
	case yaml.MappingNode:
		for i, c := range n.Content {
			markLiteral(c, i%2 == 0)
		}
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			markLiteral(c, false)
		}
	}
}
