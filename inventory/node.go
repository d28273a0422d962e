package inventory

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
)

// The nodes an inventory is built from are checked here, whoever hands
// them in: heatsible validates its topology first (with messages that name
// the topology's fields), so these are the inventory's own guarantees.

// nodeName is a DNS-1123 label, as Kubernetes node names are.
var nodeName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

var hostLabel = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

// checkNodes refuses a node whose name is not a DNS-1123 label, two nodes
// of one name, a role without a group, and an address that is neither an
// IP address (without an IPv6 zone) nor a host name.
func checkNodes(nodes []Node) error {
	seen := map[string]bool{}
	for _, n := range nodes {
		switch {
		case !nodeName.MatchString(n.Name):
			return fmt.Errorf("inventory: node %q: the name is not a DNS-1123 label (lower-case letters, digits and '-', at most 63)", n.Name)
		case seen[n.Name]:
			return fmt.Errorf("inventory: two nodes are called %s", n.Name)
		}
		seen[n.Name] = true
		switch n.Role {
		case Master, Worker, Storage, ExternalLB:
		default:
			return fmt.Errorf("inventory: node %s: the role %q is not one of %s, %s, %s, %s", n.Name, n.Role, Master, Worker, Storage, ExternalLB)
		}
		for _, a := range []struct{ what, v string }{{"SSH address", n.SSHAddress}, {"address", n.Address}} {
			if !validAddress(a.v) {
				return fmt.Errorf("inventory: node %s: the %s %q is not an IP address (without a zone) or a host name", n.Name, a.what, a.v)
			}
		}
	}
	return nil
}

func validAddress(s string) bool {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Zone() == ""
	}
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if !hostLabel.MatchString(l) {
			return false
		}
	}
	return true
}
