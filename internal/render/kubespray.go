package render

import (
	"slices"
	"strings"

	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/redact"
	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/inventory"
)

// KubesprayVarsFile is the run bundle's vars file that every kubespray run
// gets with -e @ (mode 0600): the variables heatsible hands kubespray (see
// kubesprayVars) and the passwords the kubespray inventory refers to. It
// replaces secrets.yml for those runs, so kubespray gets none of
// heatsible's own variables (heatsible's proxy_env would override
// kubespray's variable of that name).
const KubesprayVarsFile = "kubespray-vars.yml"

// kubesprayInventory is the inventory heatsible hands kubespray (see
// inventory.Kubespray), with the request's SSH users and passwords.
func kubesprayInventory(req *params.Request, t *topology.Topology, without []string, format inventory.Format) ([]byte, error) {
	var master, worker inventory.KubesprayConn
	if m := req.Cluster.MasterNode; m != nil {
		master = inventory.KubesprayConn{User: m.Username, Password: m.Password != ""}
	}
	if w := req.Cluster.WorkerNode; w != nil {
		worker = inventory.KubesprayConn{User: w.Username, Password: w.Password != ""}
	}
	nodes, err := inventoryNodes(t)
	if err != nil {
		return nil, err
	}
	return inventory.Kubespray(nodes, master, worker, without, format)
}

// kubesprayVars are the variables heatsible hands every kubespray run, from
// the request (variable names as kubespray's roles define them; which file
// of kubespray says so is in docs/kubespray.md). Only what the request
// gives is set: anything else stays as kubespray's defaults and the
// inventory's group_vars have it. Extra vars win over group_vars, so what
// the request says is what kubespray gets.
//
//   - master_node.pod_cidr: kube_pods_subnet; cluster_cidr:
//     kube_service_addresses (as networks: host bits cleared);
//   - proxy.http_proxy, https_proxy: http_proxy, https_proxy;
//   - proxy.no_proxy, k8s_node_cidr, every master's and worker's address and
//     cluster_cp_name's address: additional_no_proxy. kubespray builds
//     no_proxy from it and what it knows itself (nodes, localhost, the
//     service and pod networks, svc, the API load balancer); setting
//     no_proxy instead would switch that off;
//   - cluster_cp_name's address: supplementary_addresses_in_ssl_keys, the
//     extra names of the API server's certificate.
func kubesprayVars(req *params.Request, t *topology.Topology) map[string]any {
	c := req.Cluster
	vars := map[string]any{}
	clusterCP := ""
	if m := c.MasterNode; m != nil {
		if v := params.KubesprayCIDR(m.PodCIDR); v != "" {
			vars["kube_pods_subnet"] = v
		}
		if v := params.KubesprayCIDR(m.ClusterCIDR); v != "" {
			vars["kube_service_addresses"] = v
		}
		if m.ClusterCPName != "" {
			if clusterCP = t.CPs[m.ClusterCPName]; clusterCP != "" {
				vars["supplementary_addresses_in_ssl_keys"] = []string{clusterCP}
			}
		}
	}
	if p := c.Proxy; p != nil && (p.HTTPProxy != "" || p.HTTPSProxy != "" || p.NoProxy != "") {
		if p.HTTPProxy != "" {
			vars["http_proxy"] = p.HTTPProxy
		}
		if p.HTTPSProxy != "" {
			vars["https_proxy"] = p.HTTPSProxy
		}
		var np []string
		add := func(s string) {
			if s = strings.TrimSpace(s); s != "" && !slices.Contains(np, s) {
				np = append(np, s)
			}
		}
		for _, s := range strings.Split(p.NoProxy, ",") {
			add(s)
		}
		add(params.KubesprayCIDR(p.K8sNodeCIDR))
		for _, n := range t.Nodes {
			if n.Role == topology.RoleMaster || n.Role == topology.RoleWorker {
				add(n.Address)
			}
		}
		add(clusterCP)
		vars["additional_no_proxy"] = strings.Join(np, ",")
	}
	return vars
}

// kubesprayVarsFile is KubesprayVarsFile's content: vars, and the passwords
// the kubespray inventory refers to ("{{ heatsible_secrets.* }}").
func kubesprayVarsFile(req *params.Request, vars map[string]any) ([]byte, error) {
	secrets := map[string]string{}
	if m := req.Cluster.MasterNode; m != nil && m.Password != "" {
		secrets["master_password"] = m.Password
	}
	if w := req.Cluster.WorkerNode; w != nil && w.Password != "" {
		secrets["worker_password"] = w.Password
	}
	doc := map[string]any{"heatsible_secrets": secrets}
	for k, v := range vars {
		doc[k] = v
	}
	return inventory.Marshal(doc)
}

// MaskedKubesprayVars is vars as a reviewer may see them: the user
// information of proxy URLs (user:password@) masked.
func MaskedKubesprayVars(vars map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range vars {
		if s, ok := v.(string); ok && (k == "http_proxy" || k == "https_proxy") {
			v = maskUserinfo(s)
		}
		out[k] = v
	}
	return out
}

// maskUserinfo replaces the user information of URL u (scheme://user:pw@)
// with redact.Masked.
func maskUserinfo(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	end := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = i
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return u
	}
	return scheme + "://" + redact.Masked + rest[at:]
}
