// Package playbooks holds heatsible's per-operation playbook templates and
// renders them. Templates are Go text/template with sprig functions and the
// delimiters [[ ]], so Jinja2's {{ }} passes through to Ansible untouched.
package playbooks

import (
	"bytes"
	"embed"
	"fmt"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
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
	// LB is true when the request has external_lb_param; LBInstall runs
	// the script's install; LBRoutes are the routes to add or remove.
	LB        bool
	LBInstall bool
	LBRoutes  []Route
}

// Route is a route of the external load balancer to a worker.
type Route struct {
	Name    string `json:"name"`
	Address string `json:"address"`
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
	t, err := template.New(name).Delims("[[", "]]").Funcs(sprig.TxtFuncMap()).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("playbook template %s: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return nil, fmt.Errorf("rendering playbook %s: %w", name, err)
	}
	return buf.Bytes(), nil
}
