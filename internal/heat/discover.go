// Package heat discovers a cluster's topology from its OpenStack Heat stack,
// following the Tacker convention (see "The Heat contract" in SPEC.md):
// masters and workers are members of AutoScalingGroups named by aspect_id,
// each member a nested stack with an OS::Nova::Server and its ports; the
// storage server, its port(s) and its OS::Cinder::Volume(s) are in the top
// stack.
//
// Discovery costs a constant number of Heat requests, whatever the number of
// nodes: one stack GET (plus the 302 Heat answers a lookup by name with), one
// resource listing with nested_depth=2 and with_detail=true (attributes
// inline), and, only for a volume whose attachment is not in the listing, one
// GET per volume named in the contract.
package heat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stackresources"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"

	"github.com/heatsible/heatsible/internal/topology"
)

// TopologyOutput is the stack output that, when present, is the topology
// document itself (YAML or JSON string, or a map), parsed with
// topology.Parse; the resources are then not read.
const TopologyOutput = "heatsible_topology"

// Contract names what the instantiate request names: the aspects (ASG
// resource names) of masters and workers, and the connection points (CP
// resource names) that give each node's SSH and internal addresses.
//
// SSH CPs may name an OS::Neutron::FloatingIP (its floating_ip_address is
// the address) or a port (fixed_ips[0].ip_address). An empty WorkerAspect
// means no workers; an empty StorageNICCP means no storage server.
type Contract struct {
	// MasterAspect is master_node.aspect_id: the masters' AutoScalingGroup.
	MasterAspect string
	// WorkerAspect is worker_node.aspect_id: the workers' AutoScalingGroup.
	WorkerAspect string
	// MasterSSHCP is master_node.ssh_cp_name (defaults to MasterNICCP).
	MasterSSHCP string
	// MasterNICCP is master_node.nic_cp_name, the internal address.
	MasterNICCP string
	// WorkerSSHCP is worker_node.ssh_cp_name (defaults to WorkerNICCP).
	WorkerSSHCP string
	// WorkerNICCP is worker_node.nic_cp_name, the internal address.
	WorkerNICCP string
	// StorageSSHCP is storage_server.ssh_cp_name (a top-level resource).
	StorageSSHCP string
	// StorageNICCP is storage_server.nic_cp_name (a top-level port); its
	// server is the storage server.
	StorageNICCP string
	// Volumes are the storage server's volume resource names
	// (cinder_volume_setup_params[].volume_resource_id).
	Volumes []string
	// ExtraCPs are other top-level CP resources whose address the request
	// refers to (nfs_server_cp, an external load balancer's CP, ...). They
	// end up in Topology.CPs, as do the storage server's CPs.
	ExtraCPs []string
}

// ListOpts is a stackresources.ListOptsBuilder with the with_detail
// parameter gophercloud's own ListOpts lacks: with it Heat returns every
// resource's attributes inline.
type ListOpts struct {
	// Depth is nested_depth: 2 reaches the resources of ASG members.
	Depth int `q:"nested_depth"`
	// WithDetail asks for every resource's attributes inline.
	WithDetail bool `q:"with_detail"`
}

// ToStackResourceListQuery formats the options as a query string.
func (o ListOpts) ToStackResourceListQuery() (string, error) {
	q, err := gophercloud.BuildQueryString(o)
	if err != nil {
		return "", err
	}
	return q.String(), nil
}

// resource is one row of the listing; attributes are decoded only for the
// rows discovery reads.
type resource struct {
	Name       string             `json:"resource_name"`
	Type       string             `json:"resource_type"`
	PhysicalID string             `json:"physical_resource_id"`
	Parent     string             `json:"parent_resource"`
	Status     string             `json:"resource_status"`
	Links      []gophercloud.Link `json:"links"`
	Attributes json.RawMessage    `json:"attributes"`

	stackID string
	attrs   map[string]any
}

func (r *resource) attributes() (map[string]any, error) {
	if r.attrs != nil {
		return r.attrs, nil
	}
	r.attrs = map[string]any{}
	if len(r.Attributes) == 0 || string(r.Attributes) == "null" {
		return r.attrs, nil
	}
	if err := json.Unmarshal(r.Attributes, &r.attrs); err != nil {
		return nil, fmt.Errorf("resource %s: attributes: %w", r.Name, err)
	}
	return r.attrs, nil
}

// attr returns attribute name, from the service JSON Heat returns for
// resources with a "show" attribute, or from "show" itself when Heat
// returned every attribute separately.
func (r *resource) attr(name string) (any, error) {
	a, err := r.attributes()
	if err != nil {
		return nil, err
	}
	if v, ok := a[name]; ok && v != nil {
		return v, nil
	}
	if show, ok := a["show"].(map[string]any); ok {
		return show[name], nil
	}
	return nil, nil
}

func (r *resource) String() string {
	return fmt.Sprintf("%s (%s %s)", r.Name, r.Type, r.PhysicalID)
}

// index groups the listing by the stack each row lives in.
type index struct {
	byStack map[string][]*resource
}

func (ix *index) find(stackID, name string) *resource {
	for _, r := range ix.byStack[stackID] {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// stackIDOf is the id of the stack a row lives in (its "stack" link ends in
// /stacks/<name>/<id>).
func stackIDOf(r *resource) string {
	for _, l := range r.Links {
		if l.Rel == "stack" {
			return l.Href[strings.LastIndexByte(strings.TrimRight(l.Href, "/"), '/')+1:]
		}
	}
	return ""
}

// Discover reads stack (name, id or name/id) and returns its topology.
//
// Node names are unique, stable and DNS-1123 labels (topology.SanitizeName):
//
//   - a member of an AutoScalingGroup is named "<server name>-<member>",
//     member being the group member's resource name (12 random characters
//     that Heat keeps for the member's whole life), e.g.
//     "workernode-l4zsglajl64q". Tacker's templates give every member the
//     same literal server name ("workerNode"), and the suffix is added even
//     to a group of one, so that scaling the group never renames a node;
//   - a server of the top stack (the storage server) is named after its Nova
//     server name ("storage-server"; the Heat resource name if Nova has none);
//   - never after an address: addresses change on heal, names must not.
func Discover(ctx context.Context, client *gophercloud.ServiceClient, stack string, c Contract) (*topology.Topology, error) {
	if client == nil {
		return nil, errors.New("discover: no Heat client")
	}
	if stack == "" {
		return nil, errors.New("discover: no stack name or id given")
	}
	if c.MasterAspect == "" {
		return nil, errors.New("discover: contract has no master aspect_id")
	}
	st, err := getStack(ctx, client, stack)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(st.Status, "DELETE_") {
		return nil, fmt.Errorf("stack %s is %s", stack, st.Status)
	}
	stackRef := st.Name + "/" + st.ID
	for _, o := range st.Outputs {
		if key, _ := o["output_key"].(string); key == TopologyOutput {
			return topologyFromOutput(o, stackRef)
		}
	}

	rows, err := listResources(ctx, client, st.Name, st.ID)
	if err != nil {
		return nil, err
	}
	ix := &index{byStack: map[string][]*resource{}}
	for _, r := range rows {
		r.stackID = stackIDOf(r)
		if r.stackID == "" && r.Parent == "" {
			r.stackID = st.ID // a top-level row without links
		}
		ix.byStack[r.stackID] = append(ix.byStack[r.stackID], r)
	}
	// Rows without a stack link: attach them by parent_resource name.
	for _, r := range rows {
		if r.stackID == "" {
			for _, p := range rows {
				if p.Name == r.Parent && p.PhysicalID != "" {
					r.stackID = p.PhysicalID
					ix.byStack[r.stackID] = append(ix.byStack[r.stackID], r)
					break
				}
			}
		}
	}

	t := &topology.Topology{Cluster: st.Name, Stack: stackRef, CPs: map[string]string{}}
	var found []found
	masters, err := groupNodes(ix, st.ID, topology.RoleMaster, c.MasterAspect, c.MasterSSHCP, c.MasterNICCP)
	if err != nil {
		return nil, err
	}
	if len(masters) == 0 {
		return nil, fmt.Errorf("stack %s: master aspect %q has no members", stackRef, c.MasterAspect)
	}
	found = append(found, masters...)
	if c.WorkerAspect != "" {
		workers, err := groupNodes(ix, st.ID, topology.RoleWorker, c.WorkerAspect, c.WorkerSSHCP, c.WorkerNICCP)
		if err != nil {
			return nil, err
		}
		found = append(found, workers...)
	}
	var storage *resource
	if c.StorageNICCP != "" || c.StorageSSHCP != "" {
		n, srv, err := storageNode(ix, st.ID, c)
		if err != nil {
			return nil, err
		}
		found = append(found, n)
		storage = srv
		t.CPs[c.StorageNICCP] = n.node.Address
		if c.StorageSSHCP != "" {
			t.CPs[c.StorageSSHCP] = n.node.SSHAddress
		}
	}
	t.Nodes = nameNodes(found)
	for _, name := range c.ExtraCPs {
		r := ix.find(st.ID, name)
		if r == nil {
			var err error
			if r, err = memberCP(ix, st.ID, t, name); err != nil {
				return nil, fmt.Errorf("stack %s: %w", stackRef, err)
			}
		}
		addr, err := cpAddress(r)
		if err != nil {
			return nil, fmt.Errorf("stack %s: CP %q: %w", stackRef, name, err)
		}
		t.CPs[name] = addr
	}
	if len(t.CPs) == 0 {
		t.CPs = nil
	}

	for _, name := range c.Volumes {
		v, err := volume(ctx, client, ix, st, name, storage)
		if err != nil {
			return nil, err
		}
		t.Volumes = append(t.Volumes, v)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("stack %s: discovered topology is invalid: %w", stackRef, err)
	}
	return t, nil
}

// memberCP finds a CP the request names that is not in the top stack
// inside the group members' stacks. Tacker's own samples set
// cluster_cp_name to the master's CP (masterNode_CP1), which is in every
// master member's stack:
//
//   - a CP found in exactly one member stack is that member's (Tacker's
//     kubernetes_mgmt.py, _get_cluster_ip, reads it from the member's stack
//     when the master group has one member);
//   - a CP found in several member stacks, each a master's, is the first
//     master's (the first of t's masters, the one heatsible runs the
//     control plane's one-off steps on). Tacker's kubeadm driver, with
//     more than one master, reads cluster_cp_name from the top stack only
//     (a VIP port, vip_CP in its guide), and its kubespray driver does not
//     read it at all; the seeds' bodies still name masterNode_CP1 with a
//     master group of up to 3. lcm warns that such an endpoint is one
//     master, not a VIP (see lcm.vimEndpoint);
//   - anywhere else (several workers, or masters and workers) it has no
//     single address.
func memberCP(ix *index, topID string, t *topology.Topology, name string) (*resource, error) {
	var in []*resource
	for sid, rows := range ix.byStack {
		if sid == topID {
			continue
		}
		for _, row := range rows {
			if row.Name == name {
				in = append(in, row)
			}
		}
	}
	switch len(in) {
	case 0:
		return nil, fmt.Errorf("CP %q (named in the request) is not a resource of the stack", name)
	case 1:
		return in[0], nil
	}
	byStack := map[string]*resource{}
	for _, r := range in {
		byStack[r.stackID] = r
	}
	masters := t.ByRole(topology.RoleMaster)
	for _, m := range masters {
		if m.MemberStackID == "" || byStack[m.MemberStackID] == nil {
			continue
		}
		inMasters := 0
		for _, n := range masters {
			if byStack[n.MemberStackID] != nil {
				inMasters++
			}
		}
		if inMasters == len(in) {
			return byStack[m.MemberStackID], nil
		}
		break
	}
	return nil, fmt.Errorf("CP %q (named in the request) is in %d group members, not all of them masters, so it has no single address; name a CP of the top stack (a VIP port) instead", name, len(in))
}

func getStack(ctx context.Context, client *gophercloud.ServiceClient, stack string) (*stacks.RetrievedStack, error) {
	// stacks.Find GETs /stacks/<stack>; Heat answers a name or an id with a
	// 302 to /stacks/<name>/<id>, which the HTTP client follows.
	st, err := stacks.Find(ctx, client, stack).Extract()
	if err != nil {
		if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			return nil, fmt.Errorf("stack %q not found in Heat at %s", stack, client.Endpoint)
		}
		return nil, fmt.Errorf("getting stack %q: %w", stack, err)
	}
	if st.ID == "" || st.Name == "" {
		return nil, fmt.Errorf("getting stack %q: Heat returned no stack id/name", stack)
	}
	return st, nil
}

func topologyFromOutput(o map[string]any, stackRef string) (*topology.Topology, error) {
	if e, _ := o["output_error"].(string); e != "" {
		return nil, fmt.Errorf("stack %s: output %s: %s", stackRef, TopologyOutput, e)
	}
	var data []byte
	switch v := o["output_value"].(type) {
	case string:
		data = []byte(v)
	case map[string]any:
		var err error
		if data, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("stack %s: output %s: %w", stackRef, TopologyOutput, err)
		}
	default:
		return nil, fmt.Errorf("stack %s: output %s is a %T, want a YAML/JSON string or a map", stackRef, TopologyOutput, v)
	}
	t, err := topology.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("stack %s: output %s: %w", stackRef, TopologyOutput, err)
	}
	if t.Stack == "" {
		t.Stack = stackRef
	}
	return t, nil
}

func listResources(ctx context.Context, client *gophercloud.ServiceClient, name, id string) ([]*resource, error) {
	// The URL stackresources.List would GET, decoded once into our own rows
	// (the pager decodes into map[string]any and re-encodes: 3x the cost).
	q, err := ListOpts{Depth: 2, WithDetail: true}.ToStackResourceListQuery()
	if err != nil {
		return nil, err
	}
	u := client.ServiceURL("stacks", url.PathEscape(name), id, "resources") + q
	var body struct {
		Resources []*resource `json:"resources"`
	}
	if _, err := client.Get(ctx, u, &body, nil); err != nil {
		return nil, fmt.Errorf("listing resources of stack %s/%s: %w", name, id, err)
	}
	return body.Resources, nil
}

// ListOpts is what stackresources.List takes.
var _ stackresources.ListOptsBuilder = ListOpts{}

// found is a node before naming.
type found struct {
	node       topology.Node
	serverName string
}

func groupNodes(ix *index, topID string, role topology.Role, aspect, sshCP, nicCP string) ([]found, error) {
	if nicCP == "" {
		return nil, fmt.Errorf("%s aspect %q: the request names no nic_cp_name", role, aspect)
	}
	if sshCP == "" {
		sshCP = nicCP
	}
	asg := ix.find(topID, aspect)
	if asg == nil {
		var groups []string
		for _, r := range ix.byStack[topID] {
			if strings.HasSuffix(r.Type, "AutoScalingGroup") || strings.HasSuffix(r.Type, "ResourceGroup") {
				groups = append(groups, r.Name)
			}
		}
		sort.Strings(groups)
		return nil, fmt.Errorf("%s aspect_id %q: no such resource in the top stack (its groups: %s)", role, aspect, strings.Join(groups, ", "))
	}
	if asg.PhysicalID == "" {
		return nil, fmt.Errorf("%s aspect_id %q: the group has no nested stack (status %s)", role, aspect, asg.Status)
	}
	var out []found
	for _, m := range ix.byStack[asg.PhysicalID] {
		if m.PhysicalID == "" {
			return nil, fmt.Errorf("%s aspect_id %q: member %s has no nested stack (status %s)", role, aspect, m.Name, m.Status)
		}
		where := fmt.Sprintf("%s aspect_id %q, member %s", role, aspect, m.Name)
		nic := ix.find(m.PhysicalID, nicCP)
		if nic == nil {
			return nil, fmt.Errorf("%s: no CP %q (nic_cp_name) in the member stack", where, nicCP)
		}
		ssh := ix.find(m.PhysicalID, sshCP)
		if ssh == nil {
			return nil, fmt.Errorf("%s: no CP %q (ssh_cp_name) in the member stack", where, sshCP)
		}
		addr, err := cpAddress(nic)
		if err != nil {
			return nil, fmt.Errorf("%s: CP %q: %w", where, nicCP, err)
		}
		sshAddr, err := cpAddress(ssh)
		if err != nil {
			return nil, fmt.Errorf("%s: CP %q: %w", where, sshCP, err)
		}
		srv, err := serverOf(ix.byStack[m.PhysicalID], nic)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		out = append(out, found{
			node: topology.Node{Role: role, SSHAddress: sshAddr, Address: addr,
				ServerID: srv.PhysicalID, Member: m.Name, MemberStackID: m.PhysicalID},
			serverName: serverName(srv),
		})
	}
	return out, nil
}

// serverOf picks the OS::Nova::Server among rows: the only one, or the one
// the NIC port is attached to (device_id).
func serverOf(rows []*resource, nic *resource) (*resource, error) {
	var servers []*resource
	for _, r := range rows {
		if r.Type == "OS::Nova::Server" {
			servers = append(servers, r)
		}
	}
	dev, _ := nic.attr("device_id")
	for _, s := range servers {
		if d, ok := dev.(string); ok && d != "" && d == s.PhysicalID {
			return s, nil
		}
	}
	switch len(servers) {
	case 1:
		return servers[0], nil
	case 0:
		return nil, errors.New("no OS::Nova::Server")
	}
	return nil, fmt.Errorf("%d servers and CP %s is attached to none of them", len(servers), nic.Name)
}

func serverName(srv *resource) string {
	if v, _ := srv.attr("name"); v != nil {
		if s, ok := v.(string); ok && s != "" {
			return s
		}
	}
	return srv.Name
}

func storageNode(ix *index, topID string, c Contract) (found, *resource, error) {
	nicName, sshName := c.StorageNICCP, c.StorageSSHCP
	if nicName == "" {
		nicName = sshName
	}
	if sshName == "" {
		sshName = nicName
	}
	nic := ix.find(topID, nicName)
	if nic == nil {
		return found{}, nil, fmt.Errorf("storage server: no CP %q (nic_cp_name) in the top stack", nicName)
	}
	ssh := ix.find(topID, sshName)
	if ssh == nil {
		return found{}, nil, fmt.Errorf("storage server: no CP %q (ssh_cp_name) in the top stack", sshName)
	}
	addr, err := cpAddress(nic)
	if err != nil {
		return found{}, nil, fmt.Errorf("storage server: CP %q: %w", nicName, err)
	}
	sshAddr, err := cpAddress(ssh)
	if err != nil {
		return found{}, nil, fmt.Errorf("storage server: CP %q: %w", sshName, err)
	}
	srv, err := serverOf(topServers(ix, topID, nic), nic)
	if err != nil {
		return found{}, nil, fmt.Errorf("storage server (CP %q): %w", nicName, err)
	}
	return found{
		node: topology.Node{Role: topology.RoleStorage, SSHAddress: sshAddr, Address: addr,
			ServerID: srv.PhysicalID},
		serverName: serverName(srv),
	}, srv, nil
}

// topServers returns the top stack's servers; when the port's device_id does
// not settle it, the server whose networks reference the port is preferred
// via serverOf's single-server rule.
func topServers(ix *index, topID string, nic *resource) []*resource {
	var out []*resource
	for _, r := range ix.byStack[topID] {
		if r.Type == "OS::Nova::Server" {
			out = append(out, r)
		}
	}
	if len(out) <= 1 {
		return out
	}
	// Prefer servers whose Nova addresses include the CP's address.
	addr, err := cpAddress(nic)
	if err != nil {
		return out
	}
	var match []*resource
	for _, s := range out {
		a, _ := s.attr("addresses")
		nets, _ := a.(map[string]any)
		for _, l := range nets {
			list, _ := l.([]any)
			for _, e := range list {
				if m, ok := e.(map[string]any); ok && m["addr"] == addr {
					match = append(match, s)
				}
			}
		}
	}
	if len(match) > 0 {
		return match
	}
	return out
}

// cpAddress is a CP's address: floating_ip_address if the resource has one
// (an OS::Neutron::FloatingIP), else fixed_ips[0].ip_address (a port).
func cpAddress(r *resource) (string, error) {
	if v, err := r.attr("floating_ip_address"); err != nil {
		return "", err
	} else if s, ok := v.(string); ok && s != "" {
		return checkAddr(r, s)
	}
	v, err := r.attr("fixed_ips")
	if err != nil {
		return "", err
	}
	if s, ok := v.(string); ok { // an older Heat's repr string
		if v, err = parsePyLiteral(s); err != nil {
			return "", fmt.Errorf("resource %s: fixed_ips: %w", r.Name, err)
		}
	}
	if list, ok := v.([]any); ok && len(list) > 0 {
		if m, ok := list[0].(map[string]any); ok {
			if s, ok := m["ip_address"].(string); ok && s != "" {
				return checkAddr(r, s)
			}
		}
	}
	if strings.HasSuffix(r.Type, "FloatingIP") {
		return "", fmt.Errorf("resource %s has no floating_ip_address (status %s)", r, r.Status)
	}
	return "", fmt.Errorf("resource %s has neither floating_ip_address nor fixed_ips[0].ip_address (status %s)", r, r.Status)
}

func checkAddr(r *resource, s string) (string, error) {
	if !topology.ValidAddress(s) {
		return "", fmt.Errorf("resource %s: %q is not an address", r.Name, s)
	}
	return s, nil
}

// nameNodes applies Discover's naming rule and orders nodes by role, then
// internal address, then name.
func nameNodes(in []found) []topology.Node {
	count := map[string]int{}
	for _, f := range in {
		count[topology.SanitizeName(f.serverName)]++
	}
	out := make([]topology.Node, 0, len(in))
	used := map[string]bool{}
	for _, f := range in {
		base := topology.SanitizeName(f.serverName)
		name := base
		if base == "" || count[base] > 1 || f.node.Member != "" {
			name = joinName(base, f.node.Member)
		}
		if name == "" {
			name = string(f.node.Role)
		}
		// Last resort, e.g. a storage server literally named like a member.
		for i := 2; used[name]; i++ {
			name = joinName(base, fmt.Sprintf("%s-%d", f.node.Member, i))
		}
		used[name] = true
		n := f.node
		n.Name = name
		out = append(out, n)
	}
	rank := map[topology.Role]int{topology.RoleMaster: 0, topology.RoleWorker: 1, topology.RoleStorage: 2}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if rank[a.Role] != rank[b.Role] {
			return rank[a.Role] < rank[b.Role]
		}
		pa, ea := netip.ParseAddr(a.Address)
		pb, eb := netip.ParseAddr(b.Address)
		if ea == nil && eb == nil && pa != pb {
			return pa.Less(pb)
		}
		return a.Name < b.Name
	})
	return out
}

// joinName is "<base>-<suffix>" as a DNS-1123 label; the suffix (the member
// name) is kept whole when the base must be shortened to fit 63 characters.
func joinName(base, suffix string) string {
	suffix = topology.SanitizeName(suffix)
	if base == "" {
		return suffix
	}
	if suffix == "" {
		return base
	}
	if max := 63 - len(suffix) - 1; len(base) > max {
		base = strings.Trim(base[:max], "-")
	}
	return topology.SanitizeName(base + "-" + suffix)
}

// volume reads a volume's id and device. The device comes from the volume's
// attachment to the storage server, in whichever shape Heat gives it:
// "attachments" as Cinder's list (resource show of a current Heat),
// "attachments" as a string (str() of that list, older Heats and
// get_attr), or "attachments_list". When the listing has no attachment to
// the storage server, one GET with ?with_attr=attachments_list asks for it.
//
// Only the storage server's own attachment counts: a multi-attach volume
// (or one being moved) is also attached to other servers, whose device
// names say nothing about the storage server's. None at all is an error:
// the volume is not where the request says it is.
func volume(ctx context.Context, client *gophercloud.ServiceClient, ix *index, st *stacks.RetrievedStack, name string, storage *resource) (topology.Volume, error) {
	r := ix.find(st.ID, name)
	if r == nil {
		return topology.Volume{}, fmt.Errorf("volume %q (volume_resource_id): no such resource in the top stack %s/%s", name, st.Name, st.ID)
	}
	if !strings.Contains(r.Type, "Volume") {
		return topology.Volume{}, fmt.Errorf("volume %q (volume_resource_id) is a %s, not an OS::Cinder::Volume", name, r.Type)
	}
	id := r.PhysicalID
	if v, _ := r.attr("id"); id == "" && v != nil {
		id, _ = v.(string)
	}
	if id == "" {
		return topology.Volume{}, fmt.Errorf("volume %q has no id (status %s)", name, r.Status)
	}
	if storage == nil || storage.PhysicalID == "" {
		return topology.Volume{}, fmt.Errorf("volume %q (Cinder volume %s): the request names no storage server to find its attachment on", name, id)
	}
	att, err := attachmentOf(r, storage.PhysicalID)
	if err != nil {
		return topology.Volume{}, fmt.Errorf("volume %q: %w", name, err)
	}
	if !att.found {
		// One more request per volume, never per node.
		var body struct {
			Resource *resource `json:"resource"`
		}
		u := client.ServiceURL("stacks", url.PathEscape(st.Name), st.ID, "resources", url.PathEscape(name)) + "?with_attr=attachments_list"
		if _, err := client.Get(ctx, u, &body, nil); err != nil {
			return topology.Volume{}, fmt.Errorf("volume %q: getting its attachments: %w", name, err)
		}
		if body.Resource != nil {
			more, err := attachmentOf(body.Resource, storage.PhysicalID)
			if err != nil {
				return topology.Volume{}, fmt.Errorf("volume %q: %w", name, err)
			}
			more.others = append(att.others, more.others...)
			att = more
		}
	}
	if !att.found {
		others := "it has no attachment at all"
		if len(att.others) > 0 {
			sort.Strings(att.others)
			others = "it is attached only to other servers (" + strings.Join(uniq(att.others), ", ") + ")"
		}
		return topology.Volume{}, fmt.Errorf("volume %q (Cinder volume %s) is not attached to the storage server %s (Nova server %s): %s; attach it to the storage server, or correct volume_resource_id",
			name, id, serverName(storage), storage.PhysicalID, others)
	}
	return topology.Volume{Resource: name, ID: id, Device: att.device}, nil
}

// attachment is what attachmentOf found: the storage server's attachment
// (found, with its device, which may be empty) and the ids of the other
// servers the volume is attached to.
type attachment struct {
	found  bool
	device string
	others []string
}

// attachmentOf looks for r's attachment to serverID, in every attribute
// shape Heat uses.
func attachmentOf(r *resource, serverID string) (attachment, error) {
	var out attachment
	for _, key := range []string{"attachments_list", "attachments"} {
		v, err := r.attr(key)
		if err != nil {
			return out, err
		}
		if s, ok := v.(string); ok {
			s = strings.TrimSpace(s)
			if s == "" || s == "None" || s == "[]" {
				continue
			}
			if v, err = parsePyLiteral(s); err != nil {
				return out, fmt.Errorf("%s: cannot read %q: %w", key, truncate(s, 80), err)
			}
		}
		list, _ := v.([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			sid, _ := m["server_id"].(string)
			if sid == "" {
				continue
			}
			if sid != serverID {
				out.others = append(out.others, sid)
				continue
			}
			dev, _ := m["device"].(string)
			return attachment{found: true, device: dev}, nil
		}
	}
	return out, nil
}

func uniq(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
