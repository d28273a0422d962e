package render

import (
	"fmt"
	"net/netip"

	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/playbooks"
)

// TackerLBAPIPort is the port of the Kubernetes API frontend that a script
// of Tacker's contract (install_external_lb.sh) configures on the load
// balancer: "frontend kubernetes-apiserver", bind *:8383, forwarding to
// every master's 6443. Tacker registers its VIM at https://<LB>:8383.
const TackerLBAPIPort = 8383

// LBAPIPort is the port on which the external load balancer serves the
// Kubernetes API, by the interface of its script: TackerLBAPIPort for
// Tacker's contract, 0 (none) for heatsible's interface, whose scripts
// front the workers' NodePorts only (the sample has no API frontend).
func LBAPIPort(iface params.LBInterface) int {
	if iface == params.LBTacker {
		return TackerLBAPIPort
	}
	return 0
}

// ExternalLBAPIPort reads the request's load-balancer script from the VNF
// package (pkgDir) and returns LBAPIPort of its interface; 0 when the
// request has no external_lb_param. The error is the one validate reports
// for script_path.
func ExternalLBAPIPort(req *params.Request, pkgDir string) (int, error) {
	lb := req.Cluster.ExternalLBParam
	if lb == nil {
		return 0, nil
	}
	_, iface, err := params.ReadLBScript(pkgDir, lb.ScriptPath)
	if err != nil {
		return 0, fmt.Errorf("%s.external_lb_param.script_path: %w", params.Prefix, err)
	}
	return LBAPIPort(iface), nil
}

// tackerServerName is the haproxy server name Tacker's contract gives a
// node: prefix ("worker", "master") and the last octet of its IPv4
// address, e.g. worker21 for 10.10.0.21 (Tacker's script and driver both
// name them so; an operator's haproxy.cfg has these names).
func tackerServerName(prefix string, n topology.Node) (string, error) {
	a, err := netip.ParseAddr(n.Address)
	if err != nil || !a.Is4() {
		return "", fmt.Errorf("external load balancer: %s has the address %q; a script of Tacker's contract (-m/-w) takes IPv4 addresses and names servers by their last octet: give the topology's IPv4 addresses, or use a script with heatsible's interface (docs/external-lb.md)", n.Name, n.Address)
	}
	return fmt.Sprintf("%s%d", prefix, a.As4()[3]), nil
}

// addExternalLB puts the load balancer's script into the bundle and fills
// in what the external_lb play needs: the interface, the routes to add or
// remove (every worker at instantiate-end, the leaving or new ones
// otherwise), and for Tacker's contract the -m/-w addresses and each
// worker's server name. tmpl is the operation's template, nodes its nodes.
func (f *Files) addExternalLB(req *params.Request, t *topology.Topology, pkgDir, tmpl string, nodes []topology.Node, d *playbooks.Data) error {
	lb := req.Cluster.ExternalLBParam
	if lb == nil {
		return nil
	}
	script, iface, err := params.ReadLBScript(pkgDir, lb.ScriptPath)
	if err != nil {
		return fmt.Errorf("%s.external_lb_param.script_path: %w", params.Prefix, err)
	}
	f.LBInterface = iface
	if f.Extra == nil {
		f.Extra = map[string][]byte{}
	}
	f.Extra[ExternalLBScript] = script
	d.LB = true
	d.LBInterface = string(iface)
	d.LBInstall = tmpl == OpInstantiateEnd
	tacker := iface == params.LBTacker
	workers := t.ByRole(topology.RoleWorker)
	// Tacker's names are not unique across subnets (worker21 for 10.0.0.21
	// and 10.1.0.21): editing one line would then edit another worker's.
	byServer := map[string]string{}
	if tacker {
		for _, w := range workers {
			s, err := tackerServerName("worker", w)
			if err != nil {
				return err
			}
			if other, dup := byServer[s]; dup {
				return fmt.Errorf("external load balancer: workers %s and %s both get the server name %s in Tacker's naming (worker + last octet of the address); the backend's lines cannot tell them apart: use a script with heatsible's interface (docs/external-lb.md)", other, w.Name, s)
			}
			byServer[s] = w.Name
		}
		if d.LBInstall {
			for _, m := range t.ByRole(topology.RoleMaster) {
				if _, err := tackerServerName("master", m); err != nil {
					return err
				}
				d.LBMasters = append(d.LBMasters, m.Address)
			}
			for _, w := range workers {
				d.LBWorkers = append(d.LBWorkers, w.Address)
			}
		}
	}
	routeNodes := workers
	if tmpl != OpInstantiateEnd {
		routeNodes = nodes
	}
	for _, n := range routeNodes {
		if n.Role != topology.RoleWorker {
			continue
		}
		if _, err := netip.ParseAddr(n.Address); err != nil {
			return fmt.Errorf("external load balancer: worker %s has the address %q; the load balancer's script takes IP addresses (give the topology IPs)", n.Name, n.Address)
		}
		r := playbooks.Route{Name: n.Name, Address: n.Address}
		if tacker {
			if r.Server, err = tackerServerName("worker", n); err != nil {
				return err
			}
		}
		d.LBRoutes = append(d.LBRoutes, r)
	}
	return nil
}
