// Package topology is heatsible's model of a deployed cluster: its nodes with
// their roles and addresses, the addresses of named connection points (CPs)
// and the Cinder volumes attached to the storage server.
//
// A topology is discovered from Heat (internal/heat) or loaded from a file the
// operator saved earlier, so everything downstream of it runs without
// OpenStack. The file format is documented in docs/topology.md.
package topology

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Role is what a node does in the cluster.
type Role string

// The roles a node can have.
const (
	RoleMaster     Role = "master"
	RoleWorker     Role = "worker"
	RoleStorage    Role = "storage"
	RoleExternalLB Role = "external_lb"
)

// Node is one VM of the cluster.
type Node struct {
	// Name is unique and stable for the life of the VM. It becomes the
	// inventory host name, which kubespray uses as the Kubernetes node name.
	Name string `yaml:"name" json:"name"`
	Role Role   `yaml:"role" json:"role"`
	// SSHAddress is what Ansible connects to (a floating IP if the CP has one).
	SSHAddress string `yaml:"ssh_address" json:"ssh_address"`
	// Address is the internal (nic_cp) address.
	Address string `yaml:"address" json:"address"`
	// ServerID is the Nova server id (Heat physical_resource_id), used to map
	// VNFC resource ids to nodes for heal. Optional.
	ServerID string `yaml:"server_id,omitempty" json:"server_id,omitempty"`
	// Member is the Heat AutoScalingGroup member (resource name) that holds
	// the server; Tacker names scale-in victims this way. Optional.
	Member string `yaml:"member,omitempty" json:"member,omitempty"`
	// MemberStackID is the member's nested stack id; Tacker names scale-out
	// members this way. Optional.
	MemberStackID string `yaml:"member_stack_id,omitempty" json:"member_stack_id,omitempty"`
}

// Volume is a Cinder volume attached to the storage server.
type Volume struct {
	// Resource is the Heat resource name, which the request calls
	// volume_resource_id.
	Resource string `yaml:"resource" json:"resource"`
	ID       string `yaml:"id" json:"id"`
	// Device is the device name Heat reported from the attachment, e.g.
	// /dev/vdb. The guest's /dev/disk/by-id/virtio-<id[:20]> is preferred.
	Device string `yaml:"device,omitempty" json:"device,omitempty"`
}

// Topology is the whole cluster as heatsible sees it.
type Topology struct {
	Cluster string            `yaml:"cluster" json:"cluster"`
	Stack   string            `yaml:"stack,omitempty" json:"stack,omitempty"`
	Nodes   []Node            `yaml:"nodes" json:"nodes"`
	CPs     map[string]string `yaml:"cps,omitempty" json:"cps,omitempty"`
	Volumes []Volume          `yaml:"volumes,omitempty" json:"volumes,omitempty"`
}

// nodeName is a DNS-1123 label: kubespray uses the inventory name as the
// Kubernetes node name, which must be one.
var nodeName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// SanitizeName turns s into a DNS-1123 label: lower case, runs of other
// characters become '-', trimmed to 63 characters.
func SanitizeName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 63 {
		out = strings.Trim(out[:63], "-")
	}
	return out
}

// ValidAddress reports whether s is an IP address or a DNS host name.
func ValidAddress(s string) bool {
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	return ValidHostname(s)
}

var hostLabel = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

// ValidHostname reports whether s is an RFC 1123 host name.
func ValidHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(strings.TrimSuffix(s, "."), ".")
	for _, l := range labels {
		if !hostLabel.MatchString(l) {
			return false
		}
	}
	// An all-numeric dotted name would be read as a (bad) IPv4 address.
	last := labels[len(labels)-1]
	return strings.Trim(last, "0123456789") != ""
}

// Validate returns every problem in t, each naming its field.
func (t *Topology) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if t.Cluster == "" {
		add("topology.cluster: is empty; set the cluster name")
	}
	if len(t.Nodes) == 0 {
		add("topology.nodes: is empty; a cluster needs at least one master")
	}
	seen := map[string]int{}
	masters := 0
	for i, n := range t.Nodes {
		p := fmt.Sprintf("topology.nodes[%d]", i)
		if !nodeName.MatchString(n.Name) {
			add("%s.name: %q is not a DNS-1123 label (lower-case letters, digits and '-', at most 63)", p, n.Name)
		}
		if j, dup := seen[n.Name]; dup {
			add("%s.name: %q is also nodes[%d].name; node names must be unique", p, n.Name, j)
		}
		seen[n.Name] = i
		switch n.Role {
		case RoleMaster:
			masters++
		case RoleWorker, RoleStorage, RoleExternalLB:
		default:
			add("%s.role: %q is not one of master, worker, storage, external_lb", p, n.Role)
		}
		if !ValidAddress(n.SSHAddress) {
			add("%s.ssh_address: %q is not an IP address or host name", p, n.SSHAddress)
		}
		if !ValidAddress(n.Address) {
			add("%s.address: %q is not an IP address or host name", p, n.Address)
		}
	}
	if len(t.Nodes) > 0 && masters == 0 {
		add("topology.nodes: has no node with role master")
	}
	for _, name := range sortedKeys(t.CPs) {
		if !ValidAddress(t.CPs[name]) {
			add("topology.cps.%s: %q is not an IP address or host name", name, t.CPs[name])
		}
	}
	for i, v := range t.Volumes {
		p := fmt.Sprintf("topology.volumes[%d]", i)
		if v.Resource == "" {
			add("%s.resource: is empty; set the Heat resource name of the volume", p)
		}
		if v.ID == "" {
			add("%s.id: is empty; set the Cinder volume id", p)
		}
		if v.Device != "" && (!strings.HasPrefix(v.Device, "/dev/") || strings.ContainsAny(v.Device, " \t\n;|&$`'\"\\")) {
			add("%s.device: %q is not a /dev path", p, v.Device)
		}
	}
	return errors.Join(errs...)
}

// ByRole returns the nodes with role r, in file order.
func (t *Topology) ByRole(r Role) []Node {
	var out []Node
	for _, n := range t.Nodes {
		if n.Role == r {
			out = append(out, n)
		}
	}
	return out
}

// Node returns the node called name.
func (t *Topology) Node(name string) (Node, bool) {
	for _, n := range t.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

// Volume returns the volume whose Heat resource name is resource.
func (t *Topology) Volume(resource string) (Volume, bool) {
	for _, v := range t.Volumes {
		if v.Resource == resource {
			return v, true
		}
	}
	return Volume{}, false
}

// MaxFileSize bounds what Load reads: a topology of thousands of nodes is far
// below it, and a mistaken path to a disk image fails fast.
const MaxFileSize = 8 << 20

// Parse reads a topology from YAML or JSON (JSON is YAML) and validates it.
// Unknown fields are an error: a misspelt key in a file an operator wrote by
// hand must not be ignored silently.
func Parse(data []byte) (*Topology, error) {
	var t Topology
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&t); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("topology: the file is empty")
		}
		return nil, fmt.Errorf("topology: %w", err)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

// Load reads and validates the topology file at path.
func Load(path string) (*Topology, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading topology: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading topology %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("topology %s: larger than %d bytes; is this the right file?", path, MaxFileSize)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Marshal renders t as the documented YAML format.
func (t *Topology) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(t); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// Save writes t to path atomically (write to a temporary file, then rename),
// so a crash never leaves half a topology behind.
func (t *Topology) Save(path string) error {
	data, err := t.Marshal()
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("saving topology: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("saving topology: %w", err)
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
