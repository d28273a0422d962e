package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/hostpattern"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/inventory"
)

// Operations heatsible runs with "heatsible run".
const (
	OpInstantiateEnd = "instantiate-end"
	OpHealStart      = "heal-start"
	OpHealEnd        = "heal-end"
	OpScaleStart     = "scale-start"
	OpScaleEnd       = "scale-end"
	OpTerminateEnd   = "terminate-end"
)

// Operations lists the operations, in lifecycle order.
var Operations = []string{OpInstantiateEnd, OpHealStart, OpHealEnd, OpScaleStart, OpScaleEnd, OpTerminateEnd}

// Heal targets.
const (
	TargetStorageServer = "storage-server"
	TargetCluster       = "cluster"
	// TargetNode is one master or worker (Op.Nodes has it).
	TargetNode = "node"
)

// Op is an operation with its target.
type Op struct {
	Name string
	// Target is what a heal acts on: TargetStorageServer, TargetCluster or
	// TargetNode.
	Target string
	// DeleteReleased lets heal-start of the storage server unregister
	// Released PVs (their data stays on the export).
	DeleteReleased bool
	// Nodes are the node of a node heal (one), the leaving nodes of
	// scale-start or the new nodes of scale-end. Each is a node name, a Heat
	// member resource name (how Tacker names scale-in victims), a member's
	// nested stack id (how Tacker names new members) or a Nova server id
	// (a VNFC resource id).
	Nodes []string
	// Tags are the run's --tags (empty: every role). They decide whether a
	// node heal or scale changes the node's membership of the cluster
	// (k8s_node, k8s_join) or only, say, its NFS client; a refusal for want
	// of a way to re-join the node is only made when it does.
	Tags []string
	// Waits are the bounds set with --wait (name -> seconds; see Waits).
	Waits map[string]int
}

// Check reports an operation heatsible does not run, or a target that does
// not fit it.
func (op Op) Check() error {
	switch op.Name {
	case OpInstantiateEnd, OpTerminateEnd:
		if op.Target != "" || len(op.Nodes) > 0 {
			return fmt.Errorf("%s takes no target (no --storage-server, --cluster, --node or --nodes)", op.Name)
		}
	case OpHealStart, OpHealEnd:
		switch op.Target {
		case TargetStorageServer, TargetCluster:
			if len(op.Nodes) > 0 {
				return fmt.Errorf("%s --%s takes no --node/--nodes", op.Name, op.Target)
			}
		case TargetNode:
			if len(op.Nodes) != 1 {
				return fmt.Errorf("%s heals one node at a time: give one --node NAME or --vnfc-resource-id ID", op.Name)
			}
		default:
			return fmt.Errorf("%s needs its target: --storage-server, --cluster, or one node (--node NAME or --vnfc-resource-id ID)", op.Name)
		}
	case OpScaleStart, OpScaleEnd:
		if op.Target != "" {
			return fmt.Errorf("%s takes no heal target; give the nodes with --nodes", op.Name)
		}
		if len(op.Nodes) == 0 {
			which := "leaving nodes (scale-in victims)"
			if op.Name == OpScaleEnd {
				which = "new nodes"
			}
			return fmt.Errorf("%s needs the %s: --nodes A,B (node names, Heat member names, member stack ids or server ids)", op.Name, which)
		}
	default:
		return fmt.Errorf("unknown operation %q; heatsible run knows: %s", op.Name, strings.Join(Operations, ", "))
	}
	for _, n := range op.Nodes {
		if strings.TrimSpace(n) == "" {
			return fmt.Errorf("%s: an empty node name in --node/--nodes", op.Name)
		}
	}
	if op.DeleteReleased && (op.Name != OpHealStart || op.Target != TargetStorageServer) {
		return fmt.Errorf("--delete-released belongs to heal-start --storage-server")
	}
	return nil
}

// resolveNodes maps each identifier of ids to its node of t: by node name,
// Heat member resource name, member stack id or Nova server id.
func resolveNodes(t *topology.Topology, ids []string) ([]topology.Node, error) {
	var out []topology.Node
	seen := map[string]bool{}
	for _, id := range ids {
		var hits []topology.Node
		for _, n := range t.Nodes {
			if id == n.Name || (n.Member != "" && id == n.Member) || (n.MemberStackID != "" && id == n.MemberStackID) || (n.ServerID != "" && id == n.ServerID) {
				hits = append(hits, n)
			}
		}
		switch len(hits) {
		case 0:
			var names []string
			for _, n := range t.Nodes {
				if n.Role == topology.RoleMaster || n.Role == topology.RoleWorker {
					names = append(names, n.Name)
				}
			}
			return nil, fmt.Errorf("%q is not a node of cluster %s: no node has this name, Heat member name, member stack id or server id (its masters and workers: %s)", id, t.Cluster, strings.Join(names, ", "))
		case 1:
		default:
			return nil, fmt.Errorf("%q names %d nodes of cluster %s (%s and %s); give the node name", id, len(hits), t.Cluster, hits[0].Name, hits[1].Name)
		}
		if !seen[hits[0].Name] {
			seen[hits[0].Name] = true
			out = append(out, hits[0])
		}
	}
	return out, nil
}

// kubespray reports whether the request has heatsible drive kubespray.
func kubespray(req *params.Request) bool {
	a := req.Cluster.Ansible
	return a != nil && a.KubesprayRootPath != ""
}

// Roles that change a node's membership of the cluster: k8s_node drains and
// deletes its Node object, k8s_join joins it with kubeadm (and checks, at
// heal-start, that heal-end will be able to).
const (
	roleK8sNode = "k8s_node"
	roleK8sJoin = "k8s_join"
)

// membership reports whether --tags (tags) select what changes a node's
// membership of the cluster. "--tags nfs_client" (the shim's kubeadm
// variant) does not: the node's NFS client only, no join, no refusal.
func membership(tags []string) bool {
	return hostpattern.Selected([]string{roleK8sNode, roleK8sJoin}, tags)
}

// Phase kinds: what one step of a run does.
const (
	// PhasePlaybook runs heatsible's playbook (the bundle's playbook.yml).
	PhasePlaybook = "playbook"
	// PhaseKubespray runs a kubespray playbook from kubespray_root_path,
	// with kubespray's ansible.cfg and the inventory written for it.
	PhaseKubespray = "kubespray"
	// PhaseWriteInventory writes the kubespray inventory to
	// transferring_inventory_path.
	PhaseWriteInventory = "write-inventory"
	// PhaseRemoveInventory removes that inventory file.
	PhaseRemoveInventory = "remove-inventory"
	// PhaseCleanStaging removes the cluster's staging directories left on
	// the Ansible host by runs whose connection was cut.
	PhaseCleanStaging = "clean-staging"
)

// Phase is one step of a run, in order.
type Phase struct {
	Kind string `json:"kind"`
	// Playbook is the kubespray playbook (PhaseKubespray), relative to the
	// kubespray root: "cluster.yml", or "playbooks/cluster.yml" in layouts
	// without the root-level files (resolved at run time).
	Playbook string `json:"playbook,omitempty"`
	// Limit and ExtraVars go to that kubespray run.
	Limit     string         `json:"limit,omitempty"`
	ExtraVars map[string]any `json:"extra_vars,omitempty"`
	// Hosts is what the phase changes, for the plan and messages.
	Hosts []string `json:"hosts,omitempty"`
}

// String says what the phase does, in a line.
func (p Phase) String() string {
	switch p.Kind {
	case PhaseKubespray:
		s := "kubespray " + p.Playbook
		if p.Limit != "" {
			s += " --limit=" + p.Limit
		}
		keys := make([]string, 0, len(p.ExtraVars))
		for k := range p.ExtraVars {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			s += fmt.Sprintf(" -e %s=%v", k, p.ExtraVars[k])
		}
		return s
	case PhaseWriteInventory:
		if len(p.Hosts) > 0 {
			return "write the kubespray inventory, without " + strings.Join(p.Hosts, ", ")
		}
		return "write the kubespray inventory"
	case PhaseRemoveInventory:
		return "remove the kubespray inventory heatsible wrote"
	case PhaseCleanStaging:
		return "remove the cluster's leftover staging directories on the Ansible host"
	}
	return "heatsible playbook"
}

// kubesprayPhase is a run of kubespray's playbook pb.
func kubesprayPhase(pb, limit string, vars map[string]any, hosts ...string) Phase {
	return Phase{Kind: PhaseKubespray, Playbook: pb, Limit: limit, ExtraVars: vars, Hosts: hosts}
}

// plan works out, before anything runs, what an operation does: its phases,
// which template renders its playbook (empty: none) and the nodes it acts
// on. Everything that can be refused is refused here.
func (op Op) plan(req *params.Request, t *topology.Topology) (phases []Phase, template string, nodes []topology.Node, err error) {
	ks := kubespray(req)
	pb := Phase{Kind: PhasePlaybook}
	if op.Target == TargetNode || op.Name == OpScaleStart || op.Name == OpScaleEnd {
		if nodes, err = resolveNodes(t, op.Nodes); err != nil {
			return nil, "", nil, err
		}
	}
	names := func() []string {
		var out []string
		for _, n := range nodes {
			out = append(out, n.Name)
		}
		return out
	}
	switch {
	case op.Name == OpInstantiateEnd, op.Name == OpHealEnd && op.Target == TargetCluster:
		if ks {
			phases = append(phases, Phase{Kind: PhaseWriteInventory}, kubesprayPhase("cluster.yml", "", nil))
		}
		return append(phases, pb), OpInstantiateEnd, nil, nil
	case op.Name == OpTerminateEnd, op.Name == OpHealStart && op.Target == TargetCluster:
		// Nothing on the VMs (they are going away); heatsible's state on
		// the Ansible host goes.
		phases = append(phases, Phase{Kind: PhaseCleanStaging})
		if ks {
			phases = append(phases, Phase{Kind: PhaseRemoveInventory})
		}
		return phases, "", nil, nil
	case op.Target == TargetStorageServer:
		return []Phase{pb}, op.Name, nil, nil
	}

	// Nodes leave (scale-start, heal-start of a node) or join (scale-end,
	// heal-end of a node).
	for _, n := range nodes {
		switch n.Role {
		case topology.RoleWorker:
		case topology.RoleMaster:
			if op.Target != TargetNode {
				return nil, "", nil, fmt.Errorf("%s: %s is a control-plane node; heatsible scales workers only (the master aspect is not scaled: kubespray adds control-plane nodes with cluster.yml, and etcd needs an odd number of members)", op.Name, n.Name)
			}
			if !membership(op.Tags) {
				// --tags nfs_client and the like: nothing leaves or joins.
				continue
			}
			if err := canHealMaster(req, t, n); err != nil {
				return nil, "", nil, fmt.Errorf("%s --node %s: %w", op.Name, n.Name, err)
			}
		case topology.RoleStorage:
			return nil, "", nil, fmt.Errorf("%s: %s is the storage server; heal it with --storage-server", op.Name, n.Name)
		default:
			return nil, "", nil, fmt.Errorf("%s: %s is the %s, not a Kubernetes node", op.Name, n.Name, n.Role)
		}
	}
	list := strings.Join(names(), ",")
	leaving := op.Name == OpScaleStart || op.Name == OpHealStart
	if leaving {
		phases = append(phases, pb)
		if ks {
			vars := map[string]any{"node": list, "skip_confirmation": true}
			if op.Name == OpHealStart {
				// The VM being healed may be dead: kubespray must not wait
				// for it to reset it.
				vars["reset_nodes"] = false
				vars["allow_ungraceful_removal"] = true
			}
			phases = append(phases, kubesprayPhase("remove-node.yml", "", vars, names()...),
				Phase{Kind: PhaseWriteInventory, Hosts: names()})
		}
		return phases, "node_remove", nodes, nil
	}
	if ks {
		phases = append(phases, Phase{Kind: PhaseWriteInventory}, kubesprayPhase("facts.yml", "", nil))
		if nodes[0].Role == topology.RoleMaster {
			// kubespray's way to add a control-plane node: cluster.yml on
			// the control plane and etcd.
			phases = append(phases, kubesprayPhase("cluster.yml", "etcd,kube_control_plane", map[string]any{"ignore_assert_errors": true}, list))
		} else {
			phases = append(phases, kubesprayPhase("scale.yml", list, nil, names()...))
		}
	}
	return append(phases, pb), "node_add", nodes, nil
}

// canHealMaster says whether kubespray can remove and re-add master n: not
// without kubespray, not the only or first control-plane node, and not when
// etcd would lose its quorum.
func canHealMaster(req *params.Request, t *topology.Topology, n topology.Node) error {
	if !kubespray(req) {
		// Refused for safety (exit code 6), at plan time, before anything
		// changed: heal-start would drain and delete a control-plane node
		// that nothing brings back.
		return fail.With(fail.Refused, fmt.Errorf("a control-plane node is re-added by kubespray, and the request has no ansible.kubespray_root_path: without kubespray heatsible joins workers only (kubeadm join); a control-plane node would also need its etcd member removed and re-added and its certificates handed over (kubeadm join --control-plane --certificate-key), which heatsible does not do. Nothing was changed. Heal the whole cluster (--cluster) instead, or give the request ansible.kubespray_root_path; with --tags nfs_client heatsible only installs the NFS client on the node"))
	}
	masters := t.ByRole(topology.RoleMaster)
	if len(masters) < 3 {
		return fmt.Errorf("the cluster has %d control-plane node(s); removing one would leave etcd without quorum, which kubespray does not allow: heal the whole cluster (--cluster) instead", len(masters))
	}
	if masters[0].Name == n.Name {
		return fmt.Errorf("it is the first control-plane node, which kubespray's remove-node.yml cannot remove (it bootstraps the others); heal the whole cluster (--cluster) instead, or reorder kube_control_plane as kubespray's docs/operations/nodes.md describes")
	}
	return nil
}

// addKubespray fills in what the kubespray phases of f.Phases need: where
// the inventory goes and in which format (params.InventoryFile, the one
// function validate, plan and run ask), the inventory itself, and the
// variables every kubespray run gets.
func (f *Files) addKubespray(req *params.Request, t *topology.Topology) error {
	for _, ph := range f.Phases {
		switch ph.Kind {
		case PhaseWriteInventory, PhaseRemoveInventory, PhaseKubespray:
		default:
			continue
		}
		if f.KubesprayRoot == "" {
			inv, prob := req.Cluster.Ansible.InventoryFile()
			if prob != nil {
				return params.Problems{*prob}
			}
			f.KubesprayInventoryPath, f.KubesprayInventoryFormat = inv.Path, inventory.Format(inv.Format)
			f.KubesprayRoot = req.Cluster.Ansible.KubesprayRootPath
		}
		switch ph.Kind {
		case PhaseWriteInventory:
			b, err := kubesprayInventory(req, t, ph.Hosts, f.KubesprayInventoryFormat)
			if err != nil {
				return err
			}
			f.KubesprayInventory = b
		case PhaseKubespray:
			if f.KubesprayVarsYAML == nil {
				f.KubesprayVars = kubesprayVars(req, t)
				b, err := kubesprayVarsFile(req, f.KubesprayVars)
				if err != nil {
					return err
				}
				f.KubesprayVarsYAML = b
			}
		}
	}
	return nil
}

// VarsFiles are the bundle's vars files besides secrets.yml.
func (f *Files) VarsFiles() map[string][]byte {
	if f.KubesprayVarsYAML == nil {
		return nil
	}
	return map[string][]byte{KubesprayVarsFile: f.KubesprayVarsYAML}
}

// SkipKubespray says why kubespray and the files handed to it are left
// alone in a run with these flags, or "" when they are not.
func SkipKubespray(check bool, tags []string, limit string) string {
	switch {
	case check:
		return "check mode: kubespray does not support --check, and nothing may change"
	case len(tags) > 0:
		return "--tags/--role select heatsible's roles only"
	case limit != "":
		return "--limit narrows heatsible's own plays only"
	}
	return ""
}
