// Package playbooks holds heatsible's per-operation playbook templates and
// renders them. Templates are Go text/template with sprig functions and the
// delimiters [[ ]], so Jinja2's {{ }} passes through to Ansible untouched.
//
// Every value a template writes into the YAML goes through one of two
// functions: unsafe (a YAML flow value whose strings are tagged !unsafe, so
// Ansible never renders them as Jinja) or comment (one comment line, its
// non-printable characters escaped). Jinja in a template's own text is
// heatsible's.
package playbooks

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"unicode"

	"github.com/Masterminds/sprig/v3"
	"gopkg.in/yaml.v3"
)

//go:embed *.yml.tmpl
var files embed.FS

// Data is what a template sees.
type Data struct {
	// Cluster is the cluster (stack) name, for play names and logs.
	Cluster string
	// Operation is the CLI name of the operation, e.g. instantiate-end.
	Operation string
	// FirstMaster is the inventory name of the master that runs kubectl.
	FirstMaster string
	// Storage is true when the request has storage_server.
	Storage bool
	// PVs is true when the request has pv_registration_params.
	PVs bool
	// NFSClient is true when the nodes get the NFS client: the request has
	// storage_server or pv_registration_params (params.Request.NFSClient).
	NFSClient bool
	// PVState is present (register) or absent (unregister).
	PVState string
	// Target is what a heal acts on: "storage-server" (or "cluster", which
	// renders as instantiate-end).
	Target string
	// DeleteReleased lets heal-start unregister Released PVs.
	DeleteReleased bool
	// Version is heatsible's version, written into the header.
	Version string
	// Nodes are the nodes that leave (node_remove) or join (node_add).
	Nodes []string
	// Kubespray is true when kubespray manages Kubernetes: it removes the
	// Node objects of leaving nodes itself (remove-node.yml).
	Kubespray bool
	// Addresses maps each of Nodes to its internal address: k8s_node and
	// k8s_join recognise a node's Node object by its InternalIP too
	// (clusters built by kubeadm scripts name Nodes their own way).
	Addresses map[string]string
	// KubeadmJoin (node_add): without kubespray, the new nodes (workers) are
	// joined with kubeadm (roles/k8s_join) before anything else is done on
	// them.
	KubeadmJoin bool
	// JoinCheck (node_remove, heal-start of a worker without kubespray):
	// before anything changes, check that heal-end can join the node's
	// replacement with kubeadm; Peers are the other workers, which stand
	// for the image when the node does not answer.
	JoinCheck bool
	Peers     []string
	// LB is true when the request has external_lb_param; LBInterface is
	// its script's interface ("heatsible" or "tacker", see
	// docs/external-lb.md); LBInstall runs the script's install (Tacker's
	// contract: the script itself, once); LBRoutes are the routes to add or
	// remove.
	LB          bool
	LBInterface string
	LBInstall   bool
	LBRoutes    []Route
	// LBMasters and LBWorkers are the -m and -w addresses of a script of
	// Tacker's contract (with LBInstall).
	LBMasters []string
	LBWorkers []string
	// VIM is true when the operation prepares Tacker's Kubernetes VIM on
	// the first master (role k8s_vim); VIMHost and VIMPort are its
	// endpoint (an IP address or host name; 0: the admin kubeconfig's
	// port).
	VIM     bool
	VIMHost string
	VIMPort int
}

// Route is a route of the external load balancer to a worker: its node
// name and address and, for Tacker's contract, the haproxy server name
// (worker<last octet>) of its line in backend kubernetes-nodeport.
type Route struct {
	Name    string `json:"name"`
	Address string `json:"address"`
	Server  string `json:"server,omitempty"`
}

// Operations lists the templates (named after the operation that renders
// them, or the part of one: node_remove, node_add).
func Operations() []string {
	entries, _ := files.ReadDir(".")
	var ops []string
	for _, e := range entries {
		ops = append(ops, strings.ReplaceAll(strings.TrimSuffix(e.Name(), ".yml.tmpl"), "_", "-"))
	}
	sort.Strings(ops)
	return ops
}

// Render renders the playbook of operation op.
func Render(op string, d Data) ([]byte, error) {
	name := strings.ReplaceAll(op, "-", "_") + ".yml.tmpl"
	src, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("no playbook for operation %q (have: %s)", op, strings.Join(Operations(), ", "))
	}
	funcs := sprig.TxtFuncMap()
	funcs["unsafe"] = unsafe
	funcs["comment"] = comment
	t, err := template.New(name).Delims("[[", "]]").Funcs(funcs).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("playbook template %s: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return nil, fmt.Errorf("rendering playbook %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// unsafe renders v (a string, a list, a struct: anything encoding/json
// takes) as a one-line YAML flow value whose strings are tagged !unsafe and
// double-quoted, e.g. [{address: !unsafe "10.0.0.20", name: !unsafe "w-0"}].
// Booleans and numbers stay as they are; map keys are sorted.
func unsafe(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("unsafe: %w", err)
	}
	var data any
	if err := json.Unmarshal(b, &data); err != nil {
		return "", fmt.Errorf("unsafe: %w", err)
	}
	out, err := yaml.Marshal(unsafeNode(data))
	if err != nil {
		return "", fmt.Errorf("unsafe: %w", err)
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

func unsafeNode(v any) *yaml.Node {
	switch v := v.(type) {
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!unsafe", Value: v, Style: yaml.DoubleQuotedStyle}
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, e := range v {
			n.Content = append(n.Content, unsafeNode(e))
		}
		return n
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, unsafeNode(v[k]))
		}
		return n
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	}
	n := &yaml.Node{}
	_ = n.Encode(v) // bool, float64: json.Unmarshal gives nothing else
	return n
}

// comment renders s for a comment line: as it is when every character is
// printable (a line break would end the comment and start YAML), quoted
// with Go's escapes otherwise.
func comment(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
