package lcm

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/redact"
)

// testCA is a CA that signs serving certificates for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t testing.TB, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &testCA{cert: c, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// serving signs a kube-apiserver-like serving certificate for names (IP
// addresses or DNS names), valid until notAfter.
func (ca *testCA) serving(t testing.TB, notAfter time.Time, names ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestVerifyServing(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	other := newTestCA(t, "someone-else")
	later := time.Now().Add(time.Hour)
	tests := []struct {
		name    string
		serving []byte
		host    string
		want    string // "" accepted, else a part of the reason
	}{
		{"IP SAN of the endpoint", ca.serving(t, later, "10.231.0.1", "10.231.0.12", "kubernetes"), "10.231.0.12", ""},
		{"DNS SAN of the endpoint", ca.serving(t, later, "10.0.0.1", "api.example.com"), "api.example.com", ""},
		{"IPv6 endpoint", ca.serving(t, later, "fd00::12"), "fd00::12", ""},
		{"the endpoint not named (the bed before its reshape)", ca.serving(t, later, "10.231.0.1", "127.0.0.1", "kubernetes"), "10.231.0.12",
			"does not name 10.231.0.12 (it names 10.231.0.1, 127.0.0.1, kubernetes)"},
		{"an IP only as a DNS name does not count", ca.serving(t, later, "api.example.com"), "10.231.0.12", "does not name 10.231.0.12"},
		{"the LB's address not in the certificate", ca.serving(t, later, "10.10.0.10"), "192.0.2.50", "does not name 192.0.2.50"},
		{"signed by another CA", other.serving(t, later, "10.231.0.12"), "10.231.0.12", "is not signed by the cluster CA of the token Secret (its issuer: CN=someone-else)"},
		{"expired", ca.serving(t, time.Now().Add(-time.Minute), "10.231.0.12"), "10.231.0.12", "is not valid for the cluster CA"},
		{"no certificate read", nil, "10.231.0.12", "could not be read"},
		{"not PEM", []byte("garbage"), "10.231.0.12", "could not be read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := verifyServing(tt.serving, ca.pem, tt.host, time.Now())
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("verifyServing = %q, want %q", got, tt.want)
			}
		})
	}
}

const testToken = "eyJhbGciOiJSUzI1NiIsImtpZCI6InRlc3QifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6a3ViZS1zeXN0ZW06aGVhdHNpYmxlLXRhY2tlci12aW0ifQ.c2lnbmF0dXJl"

// vimInfoJSON is the role's VIM info as files/vim.py writes it.
func vimInfoJSON(t testing.TB, token string, ca, serving []byte, server, certFrom, certErr string) []byte {
	t.Helper()
	b, err := json.Marshal(vimInfo{
		Server: server, Kubeconfig: "/etc/kubernetes/admin.conf",
		Token: base64.StdEncoding.EncodeToString([]byte(token)), CACrt: base64.StdEncoding.EncodeToString(ca),
		SecretUID: "3f0c-secret", ServiceAccountUID: "9a1e-sa",
		ServingCert: string(serving), CertFrom: certFrom, CertError: certErr,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBuildVIM: the port from the kubeconfig's URL (or the LB's), the CA
// only when the serving certificate names the endpoint, a warning that
// says why not and how to fix it, vim_name null or the request's, and no
// message that holds the token.
func TestBuildVIM(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	later := time.Now().Add(time.Hour)
	good := ca.serving(t, later, "10.10.0.10")
	bad := ca.serving(t, later, "10.231.0.1")
	valid, _ := fixture(t, "valid")
	noName := loadRequest(t, "valid")
	noName.Cluster.VimName = ""
	cp := VIMEndpoint{Host: "10.10.0.10", HostFrom: "master_node.cluster_cp_name masterNode_CP1", PortFrom: "the admin kubeconfig's server URL"}
	lb := VIMEndpoint{Host: "192.0.2.50", HostFrom: "the external load balancer", Port: 8383, PortFrom: "Tacker's LB script"}
	tests := []struct {
		name     string
		e        VIMEndpoint
		req      *params.Request
		info     []byte
		server   string
		withCA   bool
		vimName  any
		warnings []string
		err      string
	}{
		{"kubespray: 6443, CA", cp, valid, vimInfoJSON(t, testToken, ca.pem, good, "https://127.0.0.1:6443", "10.10.0.10:6443", ""),
			"https://10.10.0.10:6443", true, "kubernetes_vim", nil, ""},
		{"Tacker's kubeadm HA: 16443 from the kubeconfig", cp, noName, vimInfoJSON(t, testToken, ca.pem, good, "https://10.10.0.10:16443", "10.10.0.10:16443", ""),
			"https://10.10.0.10:16443", true, nil, nil, ""},
		{"no port in the URL: 443", cp, valid, vimInfoJSON(t, testToken, ca.pem, good, "https://api.example.com", "10.10.0.10:443", ""),
			"https://10.10.0.10:443", true, "kubernetes_vim", nil, ""},
		{"certificate without the address: no CA, a warning", cp, valid, vimInfoJSON(t, testToken, ca.pem, bad, "https://10.231.0.1:26443", "10.231.0.1:26443", "10.10.0.10:26443: [Errno 111] Connection refused"),
			"https://10.10.0.10:26443", false, "kubernetes_vim", []string{
				"Tacker will not verify the TLS certificate of https://10.10.0.10:26443: the API server's certificate (read at 10.231.0.1:26443 from master-0) does not name 10.10.0.10 (it names 10.231.0.1)",
				"supplementary_addresses_in_ssl_keys", "apiServer.certSANs",
				"the endpoint did not answer master-0 (10.10.0.10:26443: [Errno 111] Connection refused); the API server's certificate was read at 10.231.0.1:26443 instead"}, ""},
		{"LB: its port, whatever the kubeconfig says", lb, valid, vimInfoJSON(t, testToken, ca.pem, good, "https://10.10.0.10:6443", "192.0.2.50:8383", ""),
			"https://192.0.2.50:8383", false, "kubernetes_vim", []string{"does not name 192.0.2.50"}, ""},
		{"no token", cp, valid, vimInfoJSON(t, "", ca.pem, good, "https://10.10.0.10:6443", "", ""), "", false, nil, nil, "holds no usable token"},
		{"token with a newline", cp, valid, vimInfoJSON(t, testToken+"\n", ca.pem, good, "https://10.10.0.10:6443", "", ""), "", false, nil, nil, "holds no usable token"},
		{"no CA", cp, valid, vimInfoJSON(t, testToken, []byte("not a cert"), good, "https://10.10.0.10:6443", "", ""), "", false, nil, nil, `holds no CA certificate in data["ca.crt"]`},
		{"kubeconfig server not https", cp, valid, vimInfoJSON(t, testToken, ca.pem, good, "http://10.10.0.10:8080", "", ""), "", false, nil, nil, `its server "http://10.10.0.10:8080" is not an https URL`},
		{"not JSON", cp, valid, []byte(`{"token": "` + testToken + `"`), "", false, nil, nil, "is not the JSON object it writes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := buildVIM(tt.e, tt.info, tt.req, "k8s-a", "master-0", time.Now())
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				if redact.New(testToken).Contains(err.Error()) {
					t.Errorf("the error holds the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			v := out.VIM
			if v.Server != tt.server || v.BearerToken != testToken || v.Cluster != "k8s-a" ||
				v.ServiceAccount != (VIMAccount{Namespace: "kube-system", Name: "heatsible-tacker-vim"}) {
				t.Errorf("VIM %+v", v)
			}
			if tt.withCA != (v.CACert == string(ca.pem)) || (!tt.withCA && v.CACert != "") {
				t.Errorf("ca_cert %q, want the CA: %v", v.CACert, tt.withCA)
			}
			doc, _ := json.Marshal(v)
			var m map[string]any
			_ = json.Unmarshal(doc, &m)
			if m["vim_name"] != tt.vimName {
				t.Errorf("vim_name %v, want %v", m["vim_name"], tt.vimName)
			}
			all := strings.Join(out.Warnings, "\n")
			for _, w := range tt.warnings {
				if !strings.Contains(all, w) {
					t.Errorf("the warnings do not say %q:\n%s", w, all)
				}
			}
			if tt.warnings == nil && all != "" {
				t.Errorf("unexpected warnings:\n%s", all)
			}
			if m := redact.New(testToken); m.Contains(all) || m.Contains(out.Summary) {
				t.Errorf("a message holds the token")
			}
			if !strings.Contains(out.Summary, "server "+tt.server) || !strings.Contains(out.Summary, "uid 9a1e-sa") {
				t.Errorf("summary %q", out.Summary)
			}
		})
	}
}
