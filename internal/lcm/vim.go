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
	"github.com/heatsible/heatsible/internal/render"
)

// Tacker's Kubernetes VIM, built from what the k8s_vim role left in the
// run bundle (render.VIMInfoFile) and the endpoint render worked out
// (render.VIMEndpoint; internal/render's vim.go tells the whole contract).

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

// vimInfo is what the k8s_vim role leaves in render.VIMInfoFile (its
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
func buildVIM(e render.VIMEndpoint, raw []byte, req *params.Request, cluster, master string, now time.Time) (*vimOutcome, error) {
	var info vimInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		return nil, fmt.Errorf("the %s role's VIM info (%s) is not the JSON object it writes (%d bytes)", render.VIMRole, render.VIMInfoFile, len(raw))
	}
	tok, err := base64.StdEncoding.DecodeString(info.Token)
	if err != nil || len(tok) == 0 || !printableToken(tok) {
		return nil, fmt.Errorf("the token Secret %s/%s on %s holds no usable token (data.token is empty or not base64 of a bearer token)", render.VIMNamespace, render.VIMTokenSecret, master)
	}
	ca, err := base64.StdEncoding.DecodeString(info.CACrt)
	if err != nil || len(parsePEMCerts(ca)) == 0 {
		return nil, fmt.Errorf("the token Secret %s/%s on %s holds no CA certificate in data[\"ca.crt\"] (kube-controller-manager's --root-ca-file)", render.VIMNamespace, render.VIMTokenSecret, master)
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
		ServiceAccount: VIMAccount{Namespace: render.VIMNamespace, Name: render.VIMServiceAccount},
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
		v.Server, e.HostFrom, portFrom, caWhy, render.VIMNamespace, render.VIMServiceAccount, info.ServiceAccountUID, render.VIMTokenSecret, info.SecretUID)
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
