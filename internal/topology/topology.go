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
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/internal/redact"
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

// ValidAddress reports whether s is an IP address or a DNS host name. An
// IPv6 address with a zone ("fe80::1%eth0") is not one: Go's parser takes
// any text after the '%' (spaces, export options, Jinja, a newline), and no
// value heatsible hands on (an exports line, an inventory, a PV's server,
// kubespray's certificates) can use a zone.
func ValidAddress(s string) bool {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Zone() == ""
	}
	return ValidHostname(s)
}

// ZoneProblem says what is wrong with an address that carries an IPv6
// zone, or "" when s has none. The message never shows the zone's text.
func ZoneProblem(s string) string {
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() != "" {
		return fmt.Sprintf("is an IPv6 address with a zone (%s%%...); a zone names an interface of one machine, which no other machine can use: give the address without it", a.WithZone(""))
	}
	return ""
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

// The grammars of a topology's values: the same whether the value was read
// from Heat (internal/heat validates what it discovered with Validate) or
// from a file. Each is narrower than what Heat, Nova or Cinder allow,
// because the values end up in inventories, playbooks, file names on the
// storage server (/dev/disk/by-id/virtio-<id>) and messages.
var (
	// clusterName is a Heat stack name (Heat: a letter, then letters,
	// digits, '_', '-', '.').
	clusterName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,254}$`)
	// stackRef is a stack id, name, or "name/id".
	stackRef = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,254})?$`)
	// ResourceName is a Heat resource name as Tacker writes them (CPs,
	// volumes, group members); the request's names follow it too.
	ResourceName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,254}$`)
	// openstackID is a Nova server, Heat stack or Cinder volume id: a UUID
	// in practice; letters, digits and '-' in any case.
	openstackID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,254}$`)
	// devicePath is a device node under /dev: clean, no '..', no spaces,
	// quotes, globs or shell characters ("/dev/disk/by-path/pci-0000:00:05.0").
	devicePath = regexp.MustCompile(`^/dev(/[A-Za-z0-9_+:-][A-Za-z0-9_.+:-]*)+$`)
)

// Validate returns every problem in t, each naming its field.
func (t *Topology) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	q := redact.Quote
	switch {
	case t.Cluster == "":
		add("topology.cluster: is empty; set the cluster name")
	case !clusterName.MatchString(t.Cluster):
		add("topology.cluster: %s is not a Heat stack name; use a letter, then ASCII letters, digits, '_', '-' and '.' (at most 255)", q(t.Cluster))
	}
	if t.Stack != "" && !stackRef.MatchString(t.Stack) {
		add("topology.stack: %s is not a Heat stack name or id (NAME, ID or NAME/ID: ASCII letters, digits, '_', '-' and '.')", q(t.Stack))
	}
	if len(t.Nodes) == 0 {
		add("topology.nodes: is empty; a cluster needs at least one master")
	}
	seen := map[string]int{}
	masters := 0
	for i, n := range t.Nodes {
		p := fmt.Sprintf("topology.nodes[%d]", i)
		if !nodeName.MatchString(n.Name) {
			add("%s.name: %s is not a DNS-1123 label (lower-case letters, digits and '-', at most 63)", p, q(n.Name))
		} else if j, dup := seen[n.Name]; dup {
			add("%s.name: %s is also nodes[%d].name; node names must be unique", p, q(n.Name), j)
		}
		seen[n.Name] = i
		switch n.Role {
		case RoleMaster:
			masters++
		case RoleWorker, RoleStorage, RoleExternalLB:
		default:
			add("%s.role: %s is not one of master, worker, storage, external_lb", p, q(string(n.Role)))
		}
		checkAddress(add, p+".ssh_address", n.SSHAddress)
		checkAddress(add, p+".address", n.Address)
		if n.ServerID != "" && !openstackID.MatchString(n.ServerID) {
			add("%s.server_id: %s is not a Nova server id (a UUID: ASCII letters, digits and '-')", p, q(n.ServerID))
		}
		if n.Member != "" && !ResourceName.MatchString(n.Member) {
			add("%s.member: %s is not a Heat resource name (ASCII letters, digits, '_', '-', '.' and ':')", p, q(n.Member))
		}
		if n.MemberStackID != "" && !openstackID.MatchString(n.MemberStackID) {
			add("%s.member_stack_id: %s is not a Heat stack id (a UUID: ASCII letters, digits and '-')", p, q(n.MemberStackID))
		}
	}
	if len(t.Nodes) > 0 && masters == 0 {
		add("topology.nodes: has no node with role master")
	}
	for _, name := range sortedKeys(t.CPs) {
		p := "topology.cps." + name
		if !ResourceName.MatchString(name) {
			p = "topology.cps[" + q(name) + "]"
			add("%s: the CP name is not a Heat resource name (ASCII letters, digits, '_', '-', '.' and ':')", p)
		}
		checkAddress(add, p, t.CPs[name])
	}
	resources := map[string]int{}
	for i, v := range t.Volumes {
		p := fmt.Sprintf("topology.volumes[%d]", i)
		switch {
		case v.Resource == "":
			add("%s.resource: is empty; set the Heat resource name of the volume", p)
		case !ResourceName.MatchString(v.Resource):
			add("%s.resource: %s is not a Heat resource name (ASCII letters, digits, '_', '-', '.' and ':')", p, q(v.Resource))
		default:
			if j, dup := resources[v.Resource]; dup {
				add("%s.resource: %s is also volumes[%d].resource; list each volume once", p, q(v.Resource), j)
			}
			resources[v.Resource] = i
		}
		switch {
		case v.ID == "":
			add("%s.id: is empty; set the Cinder volume id", p)
		case !openstackID.MatchString(v.ID):
			add("%s.id: %s is not a Cinder volume id (a UUID: ASCII letters, digits and '-'); the storage server finds the disk by it", p, q(v.ID))
		}
		if v.Device != "" && (!devicePath.MatchString(v.Device) || hasDotDot(v.Device)) {
			add("%s.device: %s is not a /dev path (e.g. /dev/vdb: ASCII letters, digits, '_', '.', '+', ':' and '-', no '..')", p, q(v.Device))
		}
	}
	return errors.Join(errs...)
}

// checkAddress adds a problem when v is not an IP address or host name.
func checkAddress(add func(string, ...any), p, v string) {
	if msg := ZoneProblem(v); msg != "" {
		add("%s: %s", p, msg)
		return
	}
	if !ValidAddress(v) {
		add("%s: %s is not an IP address or host name", p, redact.Quote(v))
	}
}

func hasDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." || part == "." {
			return true
		}
	}
	return false
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

// Save writes t to path atomically, so a crash never leaves half a
// topology behind: through a temporary file created exclusively (O_EXCL,
// a random name, so never through a link someone planted) in path's
// directory, then renamed over path (replacing a link there, not writing
// through it).
func (t *Topology) Save(path string) error {
	data, err := t.Marshal()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".heatsible-*")
	if err != nil {
		return fmt.Errorf("saving topology: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
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
