package lcm

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/render"
	"github.com/heatsible/heatsible/internal/topology"
)

// Clusters whose kubespray inventory names the nodes otherwise.
//
// kubespray registers each Kubernetes node under its inventory host name. A
// cluster built by Tacker's kubespray driver has an inventory at
// transferring_inventory_path/hosts.yaml that names the nodes master<last
// octet> and worker<last octet> (kubespray_mgmt.py, _create_hosts_yaml);
// heatsible names them after their Heat members (docs/topology.md). Run
// with heatsible's names, kubespray's scale.yml and cluster.yml would add
// those nodes a second time and remove-node.yml would remove nodes that do
// not exist, leaving the real ones registered. heatsible does not rename
// Kubernetes nodes, nor take another tool's names over: before anything
// changes (the inventory is read in the lock's round trip), it refuses such
// a cluster's kubespray steps (exit code 6), saying what it found and how
// to go on.

// invHost is a host of an existing inventory, with the addresses it names.
type invHost struct {
	Name                      string
	AnsibleHost, IP, AccessIP string
}

// inventoryHosts reads the hosts of an inventory file (INI if its name
// ends in .ini, else YAML) and the addresses of each.
func inventoryHosts(name string, data []byte) ([]invHost, error) {
	if path.Ext(name) == ".ini" {
		return iniHosts(data), nil
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("reading the inventory %s: %w", name, err)
	}
	hosts := map[string]*invHost{}
	var order []string
	var walk func(g map[string]any, depth int)
	walk = func(g map[string]any, depth int) {
		if depth > 32 {
			return
		}
		if hs, ok := g["hosts"].(map[string]any); ok {
			for _, n := range sortedNames(hs) {
				h := hosts[n]
				if h == nil {
					h = &invHost{Name: n}
					hosts[n] = h
					order = append(order, n)
				}
				vars, _ := hs[n].(map[string]any)
				str := func(k string) string { s, _ := vars[k].(string); return s }
				if h.AnsibleHost == "" {
					h.AnsibleHost = str("ansible_host")
				}
				if h.IP == "" {
					h.IP = str("ip")
				}
				if h.AccessIP == "" {
					h.AccessIP = str("access_ip")
				}
			}
		}
		if cs, ok := g["children"].(map[string]any); ok {
			for _, n := range sortedNames(cs) {
				if c, ok := cs[n].(map[string]any); ok {
					walk(c, depth+1)
				}
			}
		}
	}
	for _, n := range sortedNames(doc) {
		if g, ok := doc[n].(map[string]any); ok {
			walk(g, 0)
		}
	}
	out := make([]invHost, 0, len(order))
	for _, n := range order {
		out = append(out, *hosts[n])
	}
	return out, nil
}

func sortedNames(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// iniHosts reads the host lines of an INI inventory: "name k=v ..." in
// sections that are not :vars or :children.
func iniHosts(data []byte) []invHost {
	var out []invHost
	seen := map[string]bool{}
	section := ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			continue
		}
		if strings.HasSuffix(section, ":vars") || strings.HasSuffix(section, ":children") {
			continue
		}
		f := iniFields(line)
		if len(f) == 0 || seen[f[0]] {
			continue
		}
		seen[f[0]] = true
		h := invHost{Name: f[0]}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "ansible_host":
				h.AnsibleHost = v
			case "ip":
				h.IP = v
			case "access_ip":
				h.AccessIP = v
			}
		}
		out = append(out, h)
	}
	return out
}

// iniFields splits a host line on blanks outside quotes, dropping the quotes.
func iniFields(line string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	in := false
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// kubesprayPeek is the kubespray inventory to look at before anything
// changes: when the run writes it and runs kubespray (skip: why kubespray
// is left out, "" when it is not). A run that only removes it (heal-start
// --cluster, terminate-end: the cluster goes) does not look.
func kubesprayPeek(files *render.Files, skip string) []string {
	if skip != "" {
		return nil
	}
	for _, ph := range files.Phases {
		if ph.Kind == render.PhaseWriteInventory || ph.Kind == render.PhaseKubespray {
			return []string{files.KubesprayInventoryPath}
		}
	}
	return nil
}

// checkKubesprayNames refuses (exit code 6) when the kubespray inventory
// already at file (its content data; nil: there is none) names a master or
// worker of t otherwise than heatsible does.
func checkKubesprayNames(t *topology.Topology, file string, data []byte, where string) error {
	if data == nil {
		return nil
	}
	hosts, err := inventoryHosts(file, data)
	if err != nil {
		return fail.With(fail.Refused, fmt.Errorf("cluster %s: the kubespray inventory %s on %s cannot be read (%w); heatsible would replace it, and kubespray registered the nodes under its names: nothing was changed. Check the file (is it kubespray's inventory of this cluster?), then remove or fix it", t.Cluster, file, where, err))
	}
	var differ []string
	octet := true
	for _, n := range t.Nodes {
		if n.Role != topology.RoleMaster && n.Role != topology.RoleWorker {
			continue
		}
		for _, h := range hosts {
			if h.Name == n.Name {
				break
			}
			if (n.Address != "" && (h.IP == n.Address || h.AccessIP == n.Address)) || (n.SSHAddress != "" && h.AnsibleHost == n.SSHAddress) {
				differ = append(differ, fmt.Sprintf("%s (%s) is heatsible's %s", h.Name, n.Address, n.Name))
				last := n.Address[strings.LastIndex(n.Address, ".")+1:] // Tacker: nic_ip.split(".")[-1]
				octet = octet && (h.Name == "master"+last || h.Name == "worker"+last)
				break
			}
		}
	}
	if len(differ) == 0 {
		return nil
	}
	who := "another tool"
	if octet {
		who = "Tacker's kubespray driver, which names them master<last octet> and worker<last octet>"
	}
	return fail.With(fail.Refused, fmt.Errorf("cluster %s: the kubespray inventory %s on %s names the nodes otherwise than heatsible does: %s. "+
		"It was written by %s, and kubespray registered the Kubernetes nodes under its names: with heatsible's, cluster.yml and scale.yml would add them a second time "+
		"and remove-node.yml would remove nodes that do not exist, leaving these registered. Nothing was changed. heatsible does not rename Kubernetes nodes: "+
		"scale and heal this cluster with the tool that built it; heatsible's storage roles still run on it (--tags cinder_volume,nfs_server,nfs_client,pv_register leaves kubespray alone); "+
		"or rebuild it with heatsible (heal-start, then heal-end --cluster), which writes its own inventory",
		t.Cluster, file, where, strings.Join(differ, ", "), who))
}
