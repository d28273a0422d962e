// Package manifest reads and edits the PersistentVolume manifests of a VNF
// package. It works on the parsed YAML tree, never on the text: the NFS
// server may be an IPv4 or IPv6 address or a DNS name, and a regular
// expression over the text (what the reference driver did) gets at least one
// of those wrong.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/internal/redact"
	"github.com/heatsible/heatsible/internal/topology"
)

// MaxSize bounds a manifest file. A PersistentVolume is well under a KiB.
const MaxSize = 1 << 20

// ManagedByLabel marks the PVs heatsible registered, so heal can find them.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "heatsible"
)

// Source is the kind of volume a PV points at.
type Source string

// The PV sources heatsible registers.
const (
	SourceNFS Source = "nfs"
	SourceCSI Source = "csi"
)

// PV is one parsed PersistentVolume manifest.
type PV struct {
	Name   string
	Source Source
	// NFSPath is spec.nfs.path (NFS only).
	NFSPath string
	// MountOptions are the options the kubelet mounts the volume with:
	// the annotation volume.beta.kubernetes.io/mount-options, split at
	// commas, when the PV has it (the kubelet prefers it), else
	// spec.mountOptions; nil with neither. MountOptionsField says which.
	MountOptions      []string
	MountOptionsField string
	root              *yaml.Node // the document's mapping node
}

// MountOptionsAnnotation is the beta annotation the kubelet still reads
// before spec.mountOptions (MountOptionFromSpec in k8s.io/kubernetes).
const MountOptionsAnnotation = "volume.beta.kubernetes.io/mount-options"

var dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// Parse reads a manifest that must hold exactly one PersistentVolume with an
// nfs or csi source.
func Parse(data []byte) (*PV, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("is %d bytes; a PersistentVolume manifest is at most %d", len(data), MaxSize)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("is not valid YAML: %v", err)
		}
		if len(n.Content) == 0 || (n.Content[0].Kind == yaml.ScalarNode && n.Content[0].Tag == "!!null") {
			continue // an empty document, e.g. a trailing "---"
		}
		docs = append(docs, &n)
	}
	switch len(docs) {
	case 0:
		return nil, errors.New("is empty; it must hold one PersistentVolume")
	case 1:
	default:
		return nil, fmt.Errorf("holds %d YAML documents; give one PersistentVolume per file", len(docs))
	}
	root := docs[0].Content[0]
	if err := checkTree(root, ""); err != nil {
		return nil, err
	}
	if root.Kind != yaml.MappingNode {
		return nil, errors.New("is not a YAML mapping; it must be a PersistentVolume object")
	}
	if err := sameAsKubectl(data, root); err != nil {
		return nil, err
	}
	// The fields heatsible reads must be strings to YAML, not only text:
	// "name: 0" passes the name's pattern and is the number 0 to kubectl.
	if err := notStrings(root, "apiVersion", "kind", "metadata.name", "spec.nfs.path", "spec.csi.driver"); err != nil {
		return nil, err
	}
	if v := scalar(root, "apiVersion"); v != "v1" {
		return nil, fmt.Errorf("has apiVersion %s; a PersistentVolume is apiVersion v1", quote(v))
	}
	if k := scalar(root, "kind"); k != "PersistentVolume" {
		return nil, fmt.Errorf("has kind %s; heatsible registers PersistentVolume manifests only", quote(k))
	}
	meta := child(root, "metadata")
	name := scalar(meta, "name")
	if name == "" {
		return nil, errors.New("has no metadata.name")
	}
	if len(name) > 253 || !dns1123Subdomain.MatchString(name) {
		return nil, fmt.Errorf("metadata.name %s is not a valid Kubernetes name (at most 253 lower-case letters, digits, '-' and '.')", quote(name))
	}
	if meta.Kind != yaml.MappingNode {
		return nil, errors.New("metadata is not a mapping")
	}
	spec := child(root, "spec")
	if spec == nil || spec.Kind != yaml.MappingNode {
		return nil, errors.New("has no spec mapping")
	}
	pv := &PV{Name: name, root: root}
	if err := pv.readMountOptions(meta, spec); err != nil {
		return nil, err
	}
	nfs, csi := child(spec, "nfs"), child(spec, "csi")
	switch {
	case nfs != nil && csi != nil:
		return nil, errors.New("has both spec.nfs and spec.csi; a PersistentVolume has one source")
	case nfs != nil:
		if nfs.Kind != yaml.MappingNode {
			return nil, errors.New("spec.nfs is not a mapping")
		}
		pv.Source = SourceNFS
		pv.NFSPath = scalar(nfs, "path")
		if !strings.HasPrefix(pv.NFSPath, "/") {
			return nil, fmt.Errorf("spec.nfs.path %s is not an absolute path", quote(pv.NFSPath))
		}
		if strings.IndexFunc(pv.NFSPath, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
			return nil, fmt.Errorf("spec.nfs.path %s contains a control character (newline, tab, ...)", quote(pv.NFSPath))
		}
	case csi != nil:
		if csi.Kind != yaml.MappingNode || scalar(csi, "driver") == "" {
			return nil, errors.New("spec.csi has no driver")
		}
		pv.Source = SourceCSI
	default:
		return nil, errors.New("has neither spec.nfs nor spec.csi; heatsible registers NFS or CSI PersistentVolumes")
	}
	return pv, nil
}

// readMountOptions sets MountOptions as the kubelet reads them. Options
// that are not strings are refused (the API server would refuse the PV).
func (pv *PV) readMountOptions(meta, spec *yaml.Node) error {
	if ann := child(meta, "annotations"); ann != nil && ann.Kind == yaml.MappingNode {
		if n := child(ann, MountOptionsAnnotation); n != nil {
			if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
				return fmt.Errorf("metadata.annotations[%s] is not a string (the mount options, separated by commas); quote it", quote(MountOptionsAnnotation))
			}
			pv.MountOptions = strings.Split(n.Value, ",")
			pv.MountOptionsField = "metadata.annotations[" + MountOptionsAnnotation + "]"
			return nil
		}
	}
	n := child(spec, "mountOptions")
	if n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null") {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return errors.New("spec.mountOptions is not a list of strings (write e.g. mountOptions: [nfsvers=4.1, hard])")
	}
	opts := []string{}
	for i, o := range n.Content {
		if o.Kind != yaml.ScalarNode || o.ShortTag() != "!!str" {
			return fmt.Errorf("spec.mountOptions[%d] %s is not a string to YAML readers; quote it", i, quote(o.Value))
		}
		opts = append(opts, o.Value)
	}
	pv.MountOptions = opts
	pv.MountOptionsField = "spec.mountOptions"
	return nil
}

// checkTree refuses what a PersistentVolume never needs and what would make
// heatsible and Kubernetes read the manifest differently:
//   - anchors and aliases: heatsible edits the tree, and an alias would
//     carry an edit to a second place, or expand into a YAML bomb (billion
//     laughs) in whatever reads the manifest next;
//   - merge keys ('<<'): heatsible does not merge, Kubernetes' YAML reader
//     does, so each would see other keys;
//   - a key given twice in a mapping: heatsible reads the first, other YAML
//     readers the last, so the spec.nfs.server heatsible sets may not be the
//     one Kubernetes uses;
//   - tags (!!binary, !!merge, !!str, !custom): "? !!binary c2VydmVy" is a
//     key "c2VydmVy" to heatsible and "server" to kubectl, a quoted
//     !!merge "<<" merges for kubectl; a PersistentVolume needs none;
//   - keys that are not plain strings to both readers: a key that is not a
//     scalar, a block scalar (| or >) as a key, a plain key YAML reads as a
//     number, boolean, null or timestamp, or one YAML 1.1 takes for a
//     boolean (on, yes, y: kubectl's key "true"). Quoted keys are strings
//     to both (a JSON manifest quotes every key).
//
// What is left to tell apart (a plain value "yes", a non-specific tag "!",
// which yaml.v3 does not record) sameAsKubectl finds by reading the
// manifest with kubectl's reader.
func checkTree(n *yaml.Node, at string) error {
	where := func() string {
		if at == "" {
			return "the top level"
		}
		return quote(at)
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return fmt.Errorf("uses a YAML anchor or alias (at %s); write the PersistentVolume out in full", where())
	}
	if n.Style&yaml.TaggedStyle != 0 {
		return fmt.Errorf("uses the YAML tag %s (at %s); YAML readers differ on tags (!!binary, !!merge): write the PersistentVolume without them", quote(n.Tag), where())
	}
	switch n.Kind {
	case yaml.MappingNode:
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("has a mapping key that is not a string (at %s)", where())
			}
			if k.Anchor != "" {
				return fmt.Errorf("uses a YAML anchor or alias (at %s); write the PersistentVolume out in full", where())
			}
			if k.Style&yaml.TaggedStyle != 0 {
				return fmt.Errorf("has a key with the YAML tag %s (at %s); YAML readers differ on tags (to kubectl, \"? !!binary c2VydmVy\" is the key \"server\" and a !!merge \"<<\" merges): write keys as plain strings", quote(k.Tag), where())
			}
			if k.Value == "<<" && k.Style == 0 {
				return fmt.Errorf("uses a YAML merge key '<<' (at %s); write the PersistentVolume out in full", where())
			}
			if k.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 || strings.ContainsAny(k.Value, "\n\r") {
				return fmt.Errorf("has a block scalar or a multi-line string as a key (at %s); write keys as plain strings", where())
			}
			if k.Style == 0 && (k.ShortTag() != "!!str" || yaml11Bool(k.Value)) {
				return fmt.Errorf("has the key %s (at %s), which a YAML reader takes for a number, boolean, null or timestamp, not a string (kubectl's reads on, yes and y as true); quote it", quote(k.Value), where())
			}
			if seen[k.Value] {
				return fmt.Errorf("has the key %s twice (at %s); give each key once", quote(k.Value), where())
			}
			seen[k.Value] = true
			sub := k.Value
			if at != "" {
				sub = at + "." + k.Value
			}
			if err := checkTree(n.Content[i+1], sub); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := checkTree(c, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// quote shows a value from the manifest in a message, escaped and cut short
// so a hostile manifest can neither flood the terminal nor forge lines.
func quote(v string) string { return redact.Quote(v) }

// Prepare returns the manifest as heatsible applies it: for an NFS PV,
// spec.nfs.server set to server (which must be an IP address or a host
// name); for every PV, the managed-by label. A CSI
// PV is otherwise unchanged.
func (pv *PV) Prepare(server string) ([]byte, error) {
	if pv.Source == SourceNFS {
		if server == "" {
			return nil, fmt.Errorf("PV %s: no NFS server address", pv.Name)
		}
		if !topology.ValidAddress(server) {
			return nil, fmt.Errorf("PV %s: NFS server %s is not an IP address or host name", pv.Name, quote(server))
		}
		setScalar(child(child(pv.root, "spec"), "nfs"), "server", server)
	}
	meta := child(pv.root, "metadata")
	labels := child(meta, "labels")
	if labels == nil || labels.Kind != yaml.MappingNode {
		labels = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		setNode(meta, "labels", labels)
	}
	setScalar(labels, "app.kubernetes.io/managed-by", ManagedByValue)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(pv.root); err != nil {
		return nil, fmt.Errorf("PV %s: %w", pv.Name, err)
	}
	return buf.Bytes(), enc.Close()
}

func child(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// notStrings refuses a field (a dotted path from root) that is a scalar
// YAML reads as something other than a string (a number, a boolean, null).
func notStrings(root *yaml.Node, paths ...string) error {
	for _, p := range paths {
		n := root
		for _, k := range strings.Split(p, ".") {
			if n = child(n, k); n == nil {
				break
			}
		}
		if n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() != "!!str" {
			return fmt.Errorf("%s %s is a %s to YAML readers, not a string; quote it", p, quote(n.Value), strings.TrimPrefix(n.ShortTag(), "!!"))
		}
	}
	return nil
}

func scalar(m *yaml.Node, key string) string {
	n := child(m, key)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

func setNode(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// setScalar sets key to the string value v, quoted when YAML would otherwise
// read it as something else (an IPv6 address such as "::1" is fine, "1e3" or
// "true" are not).
func setScalar(m *yaml.Node, key, v string) {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
	if yaml11Bool(v) {
		// A host name "yes" or "on": yaml.v3 writes it plain (a string in
		// YAML 1.2), kubectl would read a boolean.
		n.Style = yaml.DoubleQuotedStyle
	}
	setNode(m, key, n)
}
