package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/heatsible/heatsible/internal/redact"
)

// Two readers see a manifest: heatsible (gopkg.in/yaml.v3, YAML 1.2 rules)
// and kubectl, which reads manifests with sigs.k8s.io/yaml: YAML 1.1 rules
// (a fork of yaml.v2) converted to JSON. Where they differ (yes, on, y are
// booleans to kubectl and strings to heatsible; a !!binary key decodes to
// another key; a !!merge key merges; 2001-01-01 becomes a timestamp), the
// PersistentVolume heatsible checked and edited is not the one Kubernetes
// gets. Parse refuses such a manifest, naming the first place where the two
// differ, and Prepare's output is checked again (FuzzViews).

// View is a manifest as heatsible reads it, as JSON values
// (map[string]any, []any, string, json.Number, bool, nil): what heatsible
// believes it hands kubectl.
func View(data []byte) (any, error) {
	pv, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return treeView(pv.root)
}

// KubectlView is the manifest as kubectl reads it (sigs.k8s.io/yaml's
// YAMLToJSON, the first document), as JSON values.
func KubectlView(data []byte) (any, error) {
	j, err := k8syaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	return decodeJSON(j)
}

// treeView converts heatsible's YAML tree into JSON values, each scalar as
// yaml.v3 resolves it. A timestamp stays the text it is (heatsible reads
// text); a number JSON cannot hold is an error.
func treeView(root *yaml.Node) (any, error) {
	v, err := nodeView(root)
	if err != nil {
		return nil, err
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(j)
}

func nodeView(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return nodeView(n.Content[0])
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := nodeView(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeView(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str", "!!timestamp":
			return n.Value, nil
		case "!!null":
			return nil, nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return nil, fmt.Errorf("the value %s is not a number JSON can hold", quote(n.Value))
		}
		return v, nil
	}
	return nil, fmt.Errorf("an alias")
}

func decodeJSON(j []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// viewDiff returns the path of the first place where a and b (JSON values)
// differ, and what each holds there; ok when they are equal.
func viewDiff(a, b any, at string) (path, inA, inB string, ok bool) {
	// JSON text, escaped for a terminal and cut like quote's.
	show := func(v any) string {
		j, _ := json.Marshal(v)
		s := redact.Terminal(string(j))
		if len(s) > redact.MaxShown {
			cut := redact.MaxShown
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			s = fmt.Sprintf("%s... (%d bytes)", s[:cut], len(s))
		}
		return s
	}
	join := func(k string) string {
		if at == "" {
			return k
		}
		return at + "." + k
	}
	ma, aIsMap := a.(map[string]any)
	mb, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap {
		keys := make([]string, 0, len(ma)+len(mb))
		for k := range ma {
			keys = append(keys, k)
		}
		for k := range mb {
			if _, dup := ma[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			va, inA := ma[k]
			vb, inB := mb[k]
			switch {
			case !inA:
				return quote(join(k)), "nothing", show(vb), false
			case !inB:
				return quote(join(k)), show(va), "nothing", false
			}
			if p, x, y, same := viewDiff(va, vb, join(k)); !same {
				return p, x, y, false
			}
		}
		return "", "", "", true
	}
	la, aIsList := a.([]any)
	lb, bIsList := b.([]any)
	if aIsList && bIsList && len(la) == len(lb) {
		for i := range la {
			if p, x, y, same := viewDiff(la[i], lb[i], fmt.Sprintf("%s[%d]", at, i)); !same {
				return p, x, y, false
			}
		}
		return "", "", "", true
	}
	if reflect.DeepEqual(a, b) {
		return "", "", "", true
	}
	where := quote(at)
	if at == "" {
		where = "the top level"
	}
	return where, show(a), show(b), false
}

// sameAsKubectl refuses a manifest that kubectl's YAML reader would read
// differently from heatsible: data is the text, root heatsible's tree.
func sameAsKubectl(data []byte, root *yaml.Node) error {
	mine, err := treeView(root)
	if err != nil {
		return fmt.Errorf("cannot be written as JSON, which is what kubectl sends: %v", err)
	}
	theirs, err := KubectlView(data)
	if err != nil {
		return fmt.Errorf("is not read by kubectl's YAML reader (sigs.k8s.io/yaml): %s", strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "))
	}
	if p, a, b, same := viewDiff(mine, theirs, ""); !same {
		return fmt.Errorf("reads differently to kubectl's YAML reader (YAML 1.1) than to heatsible (YAML 1.2) at %s: heatsible reads %s, kubectl %s. "+
			"Quote strings that YAML 1.1 takes for something else (\"yes\", \"no\", \"on\", \"off\", \"y\", \"n\", \"2001-01-01\", \"012\") and write booleans as true/false", p, a, b)
	}
	return nil
}

// yaml11Bool is what YAML 1.1 (kubectl's reader) takes for a boolean and
// YAML 1.2 (heatsible's) for a string, when written plain.
func yaml11Bool(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
		"on", "On", "ON", "off", "Off", "OFF":
		return true
	}
	return false
}
