package lcm

import "github.com/heatsible/heatsible/internal/topology"

// knownHostsFor are the addresses Ansible connects to in a run on t: every
// node's SSH address (port 22; heatsible's inventories set no other). The
// run bundle carries the operator's known_hosts lines for these only.
func knownHostsFor(t *topology.Topology) []string {
	out := make([]string, 0, len(t.Nodes))
	for _, n := range t.Nodes {
		out = append(out, n.SSHAddress)
	}
	return out
}
