package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io/fs"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/redact"
)

// fakeAnsiblePlaybook stands in for ansible-playbook in a --local run (its
// directory, FAKEDIR, is written into the script: heatsible gives
// ansible-playbook a clean environment): it records its arguments
// (FAKEDIR/calls), prints the jsonl events of FAKEDIR/events.jsonl, and,
// when the playbook has the k8s_vim play and --tags do not leave it out,
// leaves FAKEDIR/vim-info.json in the bundle as the role does (also in
// check mode, where heatsible must not take it), unless FAKEDIR/novim
// exists.
const fakeAnsiblePlaybook = `#!/bin/sh
d=FAKEDIR
printf '%s\n' "$*" >> "$d/calls"
pb= tags= prev=
for a in "$@"; do
  case $a in */playbook.yml) pb=$a ;; --tags=*) tags=${a#--tags=} ;; esac
  [ "$prev" = --tags ] && tags=$a
  prev=$a
done
if [ -n "$pb" ] && grep -q 'role: k8s_vim' "$pb" && [ ! -e "$d/novim" ]; then
  case ",$tags," in ,,|*,k8s_vim,*) cp "$d/vim-info.json" "$(dirname "$pb")/vim-info.json" ;; esac
fi
cat "$d/events.jsonl"
`

// fakeEvents is what the k8s_vim role prints, in jsonl (no token: its
// token tasks are no_log).
var fakeEvents = []string{
	`{"_event":"v2_playbook_on_play_start","_timestamp":"t","play":{"name":"Tacker's Kubernetes VIM - ServiceAccount and token","id":"1"},"tasks":[]}`,
	`{"_event":"v2_playbook_on_task_start","_timestamp":"t","hosts":{},"task":{"name":"k8s_vim : Apply the VIM's ServiceAccount, ClusterRoleBinding and token Secret, then read the token, the CA and the serving certificate","id":"2"}}`,
	`{"_event":"v2_runner_on_ok","_timestamp":"t","hosts":{"master-0":{"action":"ansible.builtin.raw","changed":false,"censored":"the output has been hidden due to the fact that 'no_log: true' was specified for this result"}},"task":{"name":"k8s_vim : Apply the VIM's ServiceAccount, ClusterRoleBinding and token Secret, then read the token, the CA and the serving certificate","id":"2"}}`,
	`{"_event":"v2_playbook_on_task_start","_timestamp":"t","hosts":{},"task":{"name":"k8s_vim : Report the VIM's ServiceAccount","id":"3"}}`,
	`{"_event":"v2_runner_on_ok","_timestamp":"t","hosts":{"master-0":{"action":"ansible.builtin.debug","changed":false,"msg":"master-0: ServiceAccount kube-system/heatsible-tacker-vim: unchanged; its token is ready"}},"task":{"name":"k8s_vim : Report the VIM's ServiceAccount","id":"3"}}`,
	`{"_event":"v2_playbook_on_stats","_timestamp":"t","stats":{"master-0":{"ok":2,"changed":0,"failures":0,"unreachable":0,"skipped":0,"rescued":0,"ignored":0}},"custom_stats":{},"global_custom_stats":{}}`,
}

const cliToken = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.cli-vim-test-sig&<>"

// testPKI is a cluster CA and a serving certificate for names.
func testPKI(t *testing.T, names ...string) (caPEM, servingPEM []byte) {
	t.Helper()
	ck, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ct := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "cluster-ca"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	cder, err := x509.CreateCertificate(rand.Reader, ct, ct, &ck.PublicKey, ck)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(cder)
	sk, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	st := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, n := range names {
		st.IPAddresses = append(st.IPAddresses, net.ParseIP(n))
	}
	sder, err := x509.CreateCertificate(rand.Reader, st, ca, &sk.PublicKey, ck)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cder}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: sder})
}

// fakeBed is a --local run's surroundings: the fake ansible-playbook first
// on PATH, the VIM info it hands over, a topology and known_hosts.
type fakeBed struct {
	dir, topo, kh, state string
	ca                   []byte
}

func newFakeBed(t *testing.T, servingNames ...string) *fakeBed {
	t.Helper()
	f := &fakeBed{dir: t.TempDir()}
	f.topo, f.kh, f.state = filepath.Join(f.dir, "topo.yaml"), filepath.Join(f.dir, "known_hosts"), filepath.Join(f.dir, "state")
	ca, serving := testPKI(t, servingNames...)
	f.ca = ca
	info, _ := json.Marshal(map[string]string{
		"server": "https://10.99.0.1:6443", "kubeconfig": "/etc/kubernetes/admin.conf",
		"token": base64.StdEncoding.EncodeToString([]byte(cliToken)), "ca_crt": base64.StdEncoding.EncodeToString(ca),
		"secret_uid": "3f0c", "service_account_uid": "9a1e", "serving_cert": string(serving), "cert_from": "127.0.0.2:6443", "cert_error": "",
	})
	bin := filepath.Join(f.dir, "bin")
	for name, content := range map[string]string{
		filepath.Join(bin, "ansible-playbook"): withFakeCore(t, strings.ReplaceAll(fakeAnsiblePlaybook, "FAKEDIR", "'"+f.dir+"'"), f.dir),
		filepath.Join(f.dir, "vim-info.json"):  string(info),
		filepath.Join(f.dir, "events.jsonl"):   strings.Join(fakeEvents, "\n") + "\n", f.topo: loopbackTopology, f.kh: "",
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("HEATSIBLE_STATE_DIR", f.state)
	return f
}

func (f *fakeBed) args(op string, extra ...string) []string {
	return append([]string{"-v", "run", op, "--local", "--known-hosts", f.kh, "--request", filepath.Join(td, "requests", "valid.json"),
		"--package", filepath.Join(td, "package"), "--topology", f.topo}, extra...)
}

// tokenHits names the outputs that hold any form of the token.
func tokenHits(t *testing.T, outputs map[string]string, dirs ...string) []string {
	t.Helper()
	forms := redact.Forms(cliToken)
	var hits []string
	look := func(where, s string) {
		for _, f := range forms {
			if strings.Contains(s, f) {
				hits = append(hits, where)
				return
			}
		}
	}
	for where, s := range outputs {
		look(where, s)
	}
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.Type().IsRegular() {
				b, _ := os.ReadFile(p)
				look(p, string(b))
			}
			return nil
		})
	}
	return hits
}

// TestRunVIM: the VIM the k8s_vim role hands over is in -o json's "vim"
// (server from cluster_cp_name's address and the kubeconfig's port, the CA,
// the token, vim_name) and in the --vim-info file (0600), and in nothing
// else: not stdout's other keys, not stderr, the review report, the run
// record; text output says the VIM was prepared without the token; check
// mode, --tags without k8s_vim and a --vim-info on another operation
// prepare or write nothing; a role that leaves no VIM info fails.
func TestRunVIM(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	t.Run("-o json and --vim-info", func(t *testing.T) {
		f := newFakeBed(t, "127.0.0.2")
		vi, rep := filepath.Join(f.dir, "out", "vim.json"), filepath.Join(f.dir, "review.json")
		os.Mkdir(filepath.Dir(vi), 0o755)
		code, out, errs := heatsible(t, append([]string{"-o", "json"}, f.args("instantiate-end", "--vim-info", vi, "--report", rep)...)...)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("stdout: %v\n%s", err, out)
		}
		var v struct {
			VimName        *string                          `json:"vim_name"`
			Server         string                           `json:"server"`
			CACert         string                           `json:"ca_cert"`
			BearerToken    string                           `json:"bearer_token"`
			ServiceAccount struct{ Namespace, Name string } `json:"service_account"`
			Cluster        string                           `json:"cluster"`
		}
		if err := json.Unmarshal(doc["vim"], &v); err != nil {
			t.Fatalf("no vim in -o json: %v\n%s", err, out)
		}
		if v.VimName == nil || *v.VimName != "kubernetes_vim" || v.Server != "https://127.0.0.2:6443" || v.CACert != string(f.ca) ||
			v.BearerToken != cliToken || v.ServiceAccount.Namespace != "kube-system" || v.ServiceAccount.Name != "heatsible-tacker-vim" || v.Cluster != "rep-test" {
			t.Errorf("vim %+v", v)
		}
		st, err := os.Stat(vi)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("--vim-info file: %v %v, want mode 0600", st, err)
		}
		file, _ := os.ReadFile(vi)
		var fromFile, fromDoc any
		_ = json.Unmarshal(file, &fromFile)
		_ = json.Unmarshal(doc["vim"], &fromDoc)
		if b1, _ := json.Marshal(fromFile); string(b1) != func() string { b, _ := json.Marshal(fromDoc); return string(b) }() {
			t.Errorf("--vim-info holds\n%s\nnot -o json's vim\n%s", file, doc["vim"])
		}
		delete(doc, "vim")
		rest, _ := json.Marshal(doc)
		if hits := tokenHits(t, map[string]string{"stdout without vim": string(rest), "stderr": errs}, filepath.Dir(rep), f.state); len(hits) > 0 {
			// The out/ directory holds the --vim-info file: searched apart.
			var leaks []string
			for _, h := range hits {
				if h != vi {
					leaks = append(leaks, h)
				}
			}
			if len(leaks) > 0 {
				t.Errorf("the token is in %v", leaks)
			}
		}
		if !strings.Contains(errs, "Tacker's Kubernetes VIM prepared: server https://127.0.0.2:6443 (host: master_node.cluster_cp_name masterNode_CP1; port: the port of https://10.99.0.1:6443 in /etc/kubernetes/admin.conf), CA: the cluster CA") {
			t.Errorf("stderr does not say the VIM was prepared:\n%s", errs)
		}
		if n := countRecords(t, f.state); n != 1 {
			t.Errorf("%d run records, want 1", n)
		}
	})

	t.Run("text output", func(t *testing.T) {
		f := newFakeBed(t, "10.0.0.99") // the certificate does not name 127.0.0.2
		vi := filepath.Join(f.dir, "vim.json")
		code, out, errs := heatsible(t, f.args("heal-end", "--cluster", "--vim-info", vi, "--report", filepath.Join(f.dir, "review.md"))...)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		for _, want := range []string{
			"heatsible: Tacker's Kubernetes VIM prepared: server https://127.0.0.2:6443",
			"CA: none",
			"heatsible: warning: Tacker will not verify the TLS certificate of https://127.0.0.2:6443: the API server's certificate (read at 127.0.0.2:6443 from master-0) does not name 127.0.0.2 (it names 10.0.0.99)",
			"heatsible: Tacker's Kubernetes VIM (server, CA, token) written to " + vi + " (mode 0600)",
		} {
			if !strings.Contains(errs, want) {
				t.Errorf("stderr does not say %q:\n%s", want, errs)
			}
		}
		var v map[string]any
		b, _ := os.ReadFile(vi)
		if err := json.Unmarshal(b, &v); err != nil || v["ca_cert"] != "" || v["bearer_token"] != cliToken {
			t.Errorf("--vim-info %s: %v", b, err)
		}
		if hits := tokenHits(t, map[string]string{"stdout": out, "stderr": errs}, filepath.Join(f.dir, "review.md"), f.state); len(hits) > 0 {
			t.Errorf("the token is in %v", hits)
		}
	})

	for _, tc := range []struct {
		name, op string
		extra    []string
		code     int
		stderr   string
		novim    bool
	}{
		{"check mode", "instantiate-end", []string{"--check", "--report", "REPORT"}, 0,
			"heatsible: check mode: Tacker's Kubernetes VIM is not prepared; the run creates (or keeps) ServiceAccount kube-system/heatsible-tacker-vim on master-0 and reports https://127.0.0.2:<the admin kubeconfig's port>", false},
		{"--tags without k8s_vim", "instantiate-end", []string{"--tags", "nfs_client"}, 0,
			"heatsible: Tacker's Kubernetes VIM: not prepared (--tags/--role leave k8s_vim out)", false},
		{"the role left nothing", "instantiate-end", nil, 1,
			"the k8s_vim role ran on master-0 but left no VIM info (vim-info.json): no VIM was prepared", true},
		{"--vim-info on heal-start", "heal-start", []string{"--storage-server"}, 2,
			"--vim-info: only instantiate-end and heal-end --cluster prepare Tacker's Kubernetes VIM, not heal-start --storage-server", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeBed(t, "127.0.0.2")
			if tc.novim {
				os.WriteFile(filepath.Join(f.dir, "novim"), nil, 0o600)
			}
			vi := filepath.Join(f.dir, "vim.json")
			extra := append([]string{"--vim-info", vi}, tc.extra...)
			for i, a := range extra {
				if a == "REPORT" {
					extra[i] = filepath.Join(f.dir, "review.json")
				}
			}
			code, out, errs := heatsible(t, append([]string{"-o", "json"}, f.args(tc.op, extra...)...)...)
			if code != tc.code || !strings.Contains(errs, tc.stderr) {
				t.Fatalf("exit %d, want %d saying %q\n%s\n%s", code, tc.code, tc.stderr, out, errs)
			}
			if strings.Contains(out, `"vim"`) {
				t.Errorf("-o json has a vim:\n%s", out)
			}
			if _, err := os.Stat(vi); err == nil {
				t.Error("--vim-info was written")
			}
			if hits := tokenHits(t, map[string]string{"stdout": out, "stderr": errs}, f.state, filepath.Join(f.dir, "review.json")); len(hits) > 0 {
				t.Errorf("the token is in %v", hits)
			}
		})
	}
}

func countRecords(t *testing.T, state string) int {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(state, "runs", "*", "*", "run.log"))
	return len(m)
}
