package redact

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Masked replaces secret values in output.
const Masked = "********"

// MinLeafSecret is the shortest string of a secrets YAML document that
// FromYAML masks; shorter ones would shred unrelated output. Explicit
// secrets are masked whatever their length.
const MinLeafSecret = 4

// MinPrefix is the shortest prefix of a secret's form that Truncate masks
// where it cuts text: a cut secret must not leave its beginning behind.
const MinPrefix = 4

// Masker replaces every form (see Forms) of a set of secrets with Masked.
// It is built once and is safe for concurrent use.
//
// All forms of all secrets are matched in one pass (an Aho-Corasick
// automaton over byte classes), and every byte covered by any match is
// masked: when secrets overlap or one contains another, the union of
// their matches goes, not only the first or the longest one.
type Masker struct {
	secrets []string // as given, longest first
	ac      *automaton
}

// New returns a masker for secrets (empty strings are ignored).
func New(secrets ...string) *Masker {
	m := &Masker{}
	seen := map[string]bool{}
	var patterns []string
	for _, s := range secrets {
		if s == "" || s == Masked || seen[s] {
			continue
		}
		seen[s] = true
		m.secrets = append(m.secrets, s)
		patterns = append(patterns, Forms(s)...)
	}
	sort.SliceStable(m.secrets, func(i, j int) bool { return len(m.secrets[i]) > len(m.secrets[j]) })
	if len(patterns) > 0 {
		m.ac = build(patterns)
	}
	return m
}

// FromYAML returns a masker for every string value of secretsYAML at least
// MinLeafSecret bytes long (numbers and booleans are not masked) and every
// value of extra.
func FromYAML(secretsYAML []byte, extra []string) (*Masker, error) {
	values := append([]string(nil), extra...)
	if len(strings.TrimSpace(string(secretsYAML))) > 0 {
		var root yaml.Node
		if err := yaml.Unmarshal(secretsYAML, &root); err != nil {
			return nil, fmt.Errorf("parsing secrets YAML: %w", err)
		}
		WalkScalars(&root, func(n *yaml.Node) {
			if (n.ShortTag() == "!!str" || n.Tag == "!unsafe") && len(n.Value) >= MinLeafSecret {
				values = append(values, n.Value)
			}
		})
	}
	return New(values...), nil
}

// Secrets returns the secrets the masker knows, longest first.
func (m *Masker) Secrets() []string {
	if m == nil {
		return nil
	}
	return append([]string(nil), m.secrets...)
}

// Mask replaces every form of every secret in s with Masked.
func (m *Masker) Mask(s string) string {
	if m == nil || m.ac == nil {
		return s
	}
	spans := m.ac.spans(s, nil)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, sp := range spans {
		b.WriteString(s[last:sp.start])
		b.WriteString(Masked)
		last = sp.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// Contains reports whether s holds a form of a secret.
func (m *Masker) Contains(s string) bool {
	if m == nil || m.ac == nil {
		return false
	}
	return m.ac.first(s)
}

// Truncate masks s, then cuts it to at most n bytes (on a character
// boundary) and appends "…". Masking comes first so that a secret that
// straddles the cut is masked whole; and a cut that ends in the first
// MinPrefix or more bytes of a secret's form (text that was cut before it
// got here, or that merely looks like one) has those masked too.
func (m *Masker) Truncate(s string, n int) string {
	s = m.Mask(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	cut := s[:n]
	if m != nil && m.ac != nil {
		if d := m.ac.tail(cut); d >= MinPrefix {
			cut = cut[:len(cut)-d] + Masked
		}
	}
	return cut + "…"
}

// MaskYAML returns the YAML document with every scalar value (not key)
// replaced by Masked.
func MaskYAML(doc []byte) ([]byte, error) {
	if len(strings.TrimSpace(string(doc))) == 0 {
		return []byte("{}\n"), nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("parsing secrets YAML: %w", err)
	}
	WalkScalars(&root, func(n *yaml.Node) {
		n.Value, n.Tag, n.Style = Masked, "!!str", 0
	})
	out, err := yaml.Marshal(&root)
	if err != nil {
		return nil, fmt.Errorf("writing masked secrets: %w", err)
	}
	return out, nil
}

// WalkScalars calls f on every scalar value node of n (mapping keys
// excluded).
func WalkScalars(n *yaml.Node, f func(*yaml.Node)) { walkScalars(n, false, f) }

func walkScalars(n *yaml.Node, isKey bool, f func(*yaml.Node)) {
	switch n.Kind {
	case yaml.ScalarNode:
		if !isKey {
			f(n)
		}
	case yaml.MappingNode:
		for i, c := range n.Content {
			walkScalars(c, i%2 == 0, f)
		}
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			walkScalars(c, false, f)
		}
	case yaml.AliasNode:
		// the anchor was visited where it is defined
	}
}
