package lcm

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/topology"
)

// Tacker's Kubernetes VIM (docs/hooks.md, "Tacker's Kubernetes VIM"; the
// contract with contrib/tacker). instantiate-end and heal-end --cluster run
// the k8s_vim role on the first master: a ServiceAccount bound to
// cluster-admin and a long-lived token Secret for it. The role hands the
// token to heatsible through a 0600 file of the run bundle (VIMInfoFile),
// written by no_log tasks and read back before the bundle is removed
// (ansible.PlaybookOptions.Collect): it never travels in an event, so neither
// the progress lines nor the run record can show it. heatsible then builds
// the VIM here and adds the token to every masker before anything prints.
const (
	// VIMRole is the role (and its tag).
	VIMRole = "k8s_vim"
	// VIMInfoFile is the role's k8s_vim_info_file, relative to the bundle.
	VIMInfoFile = "vim-info.json"
	// VIMNamespace and VIMServiceAccount name the ServiceAccount (the
	// role's defaults).
	VIMNamespace      = "kube-system"
	VIMServiceAccount = "heatsible-tacker-vim"
	// VIMTokenSecret is its token Secret.
	VIMTokenSecret = "heatsible-tacker-vim-token"
)

// VIM is what Tacker's Kubernetes VIM needs: the object of -o json's "vim"
// and of the --vim-info file.
type VIM struct {
	// VimName is additionalParams.k8s_cluster_installation_param.vim_name,
	// nil (JSON null) when the request has none.
	VimName *string `json:"vim_name"`
	// Server is https:// + the endpoint's host + its port.
	Server string `json:"server"`
	// CACert is the cluster CA (PEM) when the API server's certificate
	// names the endpoint's host and is signed by it, else "" (Tacker then
	// connects without verifying TLS).
	CACert string `json:"ca_cert"`
	// BearerToken is the ServiceAccount's token: a secret.
	BearerToken    string     `json:"bearer_token"`
	ServiceAccount VIMAccount `json:"service_account"`
	// Cluster is heatsible's cluster name.
	Cluster string `json:"cluster"`
}

// VIMAccount names the VIM's ServiceAccount.
type VIMAccount struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// VIMEndpoint is where Tacker reaches the API server, as far as the request
// and the topology tell before anything runs.
type VIMEndpoint struct {
	// Host is an IP address or host name.
	Host string `json:"host"`
	// HostFrom says where Host comes from.
	HostFrom string `json:"host_from"`
	// Port is the load balancer's API frontend port; 0: the port of the
	// admin kubeconfig's server URL, found on the first master.
	Port     int    `json:"port,omitempty"`
	PortFrom string `json:"port_from"`
	// Note is what a reviewer should know about the choice, or "".
	Note string `json:"note,omitempty"`
	// Warning says the endpoint is one master of several rather than a
	// VIP in front of them (oneMasterOfSeveral), or "".
	Warning string `json:"warning,omitempty"`
}

// String is the server URL, with a placeholder for a port learned at run time.
func (e VIMEndpoint) String() string {
	if e.Port > 0 {
		return "https://" + net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
	}
	h := e.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return "https://" + h + ":<the admin kubeconfig's port>"
}

// preparesVIM reports whether op prepares Tacker's Kubernetes VIM.
func (op Op) preparesVIM() bool {
	return op.Name == OpInstantiateEnd || op.Name == OpHealEnd && op.Target == TargetCluster
}

// buildsCluster reports whether op sets up the cluster as a whole on VMs
// Heat created for it: instantiate-end, and heal-end --cluster (Tacker
// recreated every VM; its kubeadm driver would run script_path again).
// Without --tags they refuse a script_path that nothing would run
// (params.ScriptPathProblem). Not heal-start --cluster: it only removes
// heatsible's state, nothing runs on the VMs, and the shim's kubeadm
// variant runs it without --tags (before Tacker's heal of the whole VNF).
// They are the operations that prepare the VIM (preparesVIM).
func (op Op) buildsCluster() bool {
	return op.preparesVIM()
}

// vimLBAPIPort says whether the external load balancer that
// external_lb_param's script (read from the package in pkgDir) sets up
// fronts the Kubernetes API server, and on which port (from says how that
// is known): ExternalLBAPIPort, by the script's interface. A script of
// Tacker's contract (install_external_lb.sh) has "frontend
// kubernetes-apiserver", bind *:8383, in front of every master's 6443, and
// Tacker's kubespray driver registers its VIM there (kubespray_mgmt.py,
// _create_vim: https://<the LB's ssh_cp_name address>:8383, no
// ssl_ca_cert); heatsible's own interface (docs/external-lb.md) routes to
// the workers' NodePorts only. A script validate could not read fronts
// nothing (validate has refused it already). A variable: tests replace it.
var vimLBAPIPort = func(req *params.Request, pkgDir string) (port int, from string, ok bool) {
	port, err := ExternalLBAPIPort(req, pkgDir)
	if err != nil || port == 0 {
		return 0, "", false
	}
	return port, fmt.Sprintf("the frontend kubernetes-apiserver (bind *:%d) that a script of Tacker's contract (install_external_lb.sh) sets up, where Tacker's kubespray driver registers its VIM", port), true
}

// vimEndpoint works out the VIM's endpoint: the external load balancer's
// address and API frontend port when its script has one, else
// master_node.cluster_cp_name's address (the first master's when there is
// none) and the admin kubeconfig's port.
func vimEndpoint(req *params.Request, t *topology.Topology, pkgDir string) (VIMEndpoint, error) {
	c := req.Cluster
	var e VIMEndpoint
	if lb := c.ExternalLBParam; lb != nil {
		if port, from, ok := vimLBAPIPort(req, pkgDir); ok {
			addr := t.CPs[lb.SSHCPName]
			if addr == "" {
				for _, n := range t.ByRole(topology.RoleExternalLB) {
					addr = n.SSHAddress
					break
				}
			}
			if addr == "" {
				return e, fmt.Errorf("%s.external_lb_param.ssh_cp_name: %q has no address in the topology, so Tacker's Kubernetes VIM has no endpoint", params.Prefix, lb.SSHCPName)
			}
			if port <= 0 || port > 65535 {
				return e, fmt.Errorf("the external load balancer's API frontend port %d (%s) is not a TCP port", port, from)
			}
			e = VIMEndpoint{Host: addr, HostFrom: "the external load balancer (external_lb_param.ssh_cp_name " + lb.SSHCPName + ")", Port: port, PortFrom: from}
			return e, checkVIMHost(e)
		}
		e.Note = "the external load balancer's script (external_lb_param.script_path) follows heatsible's interface, " +
			"whose load balancer routes to the workers' NodePorts only, not to the API server: Tacker reaches the API server directly"
	}
	if m := c.MasterNode; m != nil && m.ClusterCPName != "" {
		e.Host, e.HostFrom = t.CPs[m.ClusterCPName], "master_node.cluster_cp_name "+m.ClusterCPName
		if e.Host == "" {
			return e, fmt.Errorf("%s.master_node.cluster_cp_name: %q has no address in the topology, so Tacker's Kubernetes VIM has no endpoint", params.Prefix, m.ClusterCPName)
		}
		e.Warning = oneMasterOfSeveral(m.ClusterCPName, e.Host, t)
	} else {
		masters := t.ByRole(topology.RoleMaster)
		if len(masters) == 0 {
			return e, errors.New("the cluster has no master: Tacker's Kubernetes VIM has no endpoint")
		}
		e.Host, e.HostFrom = masters[0].Address, "the first master's address (the request has no master_node.cluster_cp_name)"
	}
	e.PortFrom = "the admin kubeconfig's server URL"
	return e, checkVIMHost(e)
}

// oneMasterOfSeveral warns when cluster_cp_name's address is one master's
// own while the cluster has several: the seeds' bodies name a master
// member's CP (masterNode_CP1), which discovery resolves to the first
// master (internal/heat, memberCP); a VIP port of the top stack (Tacker's
// vip_CP) has an address of its own and gets no warning.
func oneMasterOfSeveral(cp, addr string, t *topology.Topology) string {
	masters := t.ByRole(topology.RoleMaster)
	if len(masters) < 2 {
		return ""
	}
	for _, n := range masters {
		if n.Address == addr || n.SSHAddress == addr {
			return fmt.Sprintf("master_node.cluster_cp_name %s is the address of the master %s, one of the cluster's %d masters, not a VIP: "+
				"Tacker reaches the API server through that master only, and loses it while that master is down or healed; "+
				"give the top stack a VIP port in front of every master (Tacker's guide: vip_CP) and name it in cluster_cp_name",
				cp, n.Name, len(masters))
		}
	}
	return ""
}

// checkVIMHost refuses a host that is neither an IP address nor a host
// name: it goes into a URL and, as a role variable, into a playbook.
func checkVIMHost(e VIMEndpoint) error {
	if !topology.ValidAddress(e.Host) {
		return fmt.Errorf("Tacker's Kubernetes VIM endpoint %q (%s) is not an IP address or host name", e.Host, e.HostFrom)
	}
	return nil
}

// vimInfo is what the k8s_vim role leaves in VIMInfoFile (its
// files/vim.py documents each field; it also holds "applied", kubectl
// apply's lines, which heatsible does not read).
type vimInfo struct {
	Server            string `json:"server"`
	Kubeconfig        string `json:"kubeconfig"`
	Token             string `json:"token"`
	CACrt             string `json:"ca_crt"`
	SecretUID         string `json:"secret_uid"`
	ServiceAccountUID string `json:"service_account_uid"`
	ServingCert       string `json:"serving_cert"`
	CertFrom          string `json:"cert_from"`
	CertError         string `json:"cert_error"`
}

// vimOutcome is the VIM and what heatsible says about it.
type vimOutcome struct {
	VIM *VIM
	// Summary is the progress line (no secret in it).
	Summary string
	// Warnings are printed as "warning: ...".
	Warnings []string
}

// buildVIM turns the role's VIM info into the VIM. Errors never quote the
// info (it holds the token).
func buildVIM(e VIMEndpoint, raw []byte, req *params.Request, cluster, master string, now time.Time) (*vimOutcome, error) {
	var info vimInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return nil, fmt.Errorf("the %s role's VIM info (%s) is not the JSON object it writes (%d bytes)", VIMRole, VIMInfoFile, len(raw))
	}
	tok, err := base64.StdEncoding.DecodeString(info.Token)
	if err != nil || len(tok) == 0 || !printableToken(tok) {
		return nil, fmt.Errorf("the token Secret %s/%s on %s holds no usable token (data.token is empty or not base64 of a bearer token)", VIMNamespace, VIMTokenSecret, master)
	}
	ca, err := base64.StdEncoding.DecodeString(info.CACrt)
	if err != nil || len(parsePEMCerts(ca)) == 0 {
		return nil, fmt.Errorf("the token Secret %s/%s on %s holds no CA certificate in data[\"ca.crt\"] (kube-controller-manager's --root-ca-file)", VIMNamespace, VIMTokenSecret, master)
	}
	port, portFrom := e.Port, e.PortFrom
	if port == 0 {
		p, err := serverPort(info.Server)
		if err != nil {
			return nil, fmt.Errorf("the admin kubeconfig %s on %s: %w", info.Kubeconfig, master, err)
		}
		port, portFrom = p, fmt.Sprintf("the port of %s in %s", info.Server, info.Kubeconfig)
	}
	v := &VIM{
		Server:         "https://" + net.JoinHostPort(e.Host, strconv.Itoa(port)),
		BearerToken:    string(tok),
		ServiceAccount: VIMAccount{Namespace: VIMNamespace, Name: VIMServiceAccount},
		Cluster:        cluster,
	}
	if n := req.Cluster.VimName; n != "" {
		v.VimName = &n
	}
	out := &vimOutcome{VIM: v}
	caWhy := ""
	if why := verifyServing([]byte(info.ServingCert), ca, e.Host, now); why == "" {
		v.CACert = string(ca)
		caWhy = fmt.Sprintf("the cluster CA (the API server's certificate, read at %s, names %s and is signed by it)", info.CertFrom, e.Host)
	} else {
		caWhy = "none"
		from := info.CertFrom
		if from == "" {
			from = "on " + master
		} else {
			from = "at " + from + " from " + master
		}
		out.Warnings = append(out.Warnings, fmt.Sprintf("Tacker will not verify the TLS certificate of %s: the API server's certificate (read %s) %s; "+
			"the VIM gets no CA (ca_cert \"\"), and Tacker connects without verifying. To have it verified, put %s into the API server's certificate: "+
			"with kubespray, supplementary_addresses_in_ssl_keys (heatsible sets it to master_node.cluster_cp_name's address when it runs kubespray); "+
			"with kubeadm, apiServer.certSANs in its ClusterConfiguration, then a new certificate (kubeadm init phase certs apiserver) and a restart of kube-apiserver",
			v.Server, from, why, e.Host))
	}
	if info.ServingCert != "" && info.CertError != "" {
		out.Warnings = append(out.Warnings, fmt.Sprintf("the endpoint did not answer %s (%s); the API server's certificate was read at %s instead: check that Tacker reaches %s",
			master, info.CertError, info.CertFrom, v.Server))
	}
	if e.Note != "" {
		out.Warnings = append(out.Warnings, e.Note)
	}
	if e.Warning != "" {
		out.Warnings = append(out.Warnings, e.Warning)
	}
	out.Summary = fmt.Sprintf("Tacker's Kubernetes VIM prepared: server %s (host: %s; port: %s), CA: %s, ServiceAccount %s/%s (uid %s) with token Secret %s (uid %s)",
		v.Server, e.HostFrom, portFrom, caWhy, VIMNamespace, VIMServiceAccount, info.ServiceAccountUID, VIMTokenSecret, info.SecretUID)
	return out, nil
}

// printableToken: a bearer token is printable ASCII without spaces (a JWT).
func printableToken(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// serverPort is the port of a kubeconfig's server URL (443 when it names
// none).
func serverPort(server string) (int, error) {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return 0, fmt.Errorf("its server %q is not an https URL", server)
	}
	if u.Port() == "" {
		return 443, nil
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil || p <= 0 || p > 65535 {
		return 0, fmt.Errorf("its server %q has no valid port", server)
	}
	return p, nil
}

func parsePEMCerts(b []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return out
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(blk.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// verifyServing says why Tacker's client, trusting only the CA ca, would
// not accept the serving certificate for host ("" when it would): as Go's
// (and urllib3's) verification does, the certificate must chain to ca, be
// valid now and name host (an IP SAN for an IP address, a DNS SAN
// otherwise).
func verifyServing(serving, ca []byte, host string, now time.Time) string {
	certs := parsePEMCerts(serving)
	if len(certs) == 0 {
		return "could not be read"
	}
	roots := x509.NewCertPool()
	for _, c := range parsePEMCerts(ca) {
		roots.AddCert(c)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	leaf := certs[0]
	if err := leaf.VerifyHostname(host); err != nil {
		return "does not name " + host + " (it names " + certNames(leaf) + ")"
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	var ua x509.UnknownAuthorityError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ua):
		return "is not signed by the cluster CA of the token Secret (its issuer: " + leaf.Issuer.String() + ")"
	}
	return "is not valid for the cluster CA: " + err.Error()
}

// certNames lists a certificate's subject alternative names.
func certNames(c *x509.Certificate) string {
	var n []string
	for _, ip := range c.IPAddresses {
		if a, ok := netip.AddrFromSlice(ip); ok {
			n = append(n, a.Unmap().String())
		}
	}
	n = append(n, c.DNSNames...)
	if len(n) == 0 {
		return "no subject alternative name"
	}
	return strings.Join(n, ", ")
}
