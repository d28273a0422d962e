package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/redact"
)

// vimDoc is -o json's "vim" and the --vim-info file.
type vimDoc struct {
	VimName        *string `json:"vim_name"`
	Server         string  `json:"server"`
	CACert         string  `json:"ca_cert"`
	BearerToken    string  `json:"bearer_token"`
	ServiceAccount struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"service_account"`
	Cluster string `json:"cluster"`
}

// vimObjects are the objects the k8s_vim role keeps on the cluster.
var vimObjects = [][]string{
	{"-n", "kube-system", "secret", "heatsible-tacker-vim-token"},
	{"clusterrolebinding", "heatsible-tacker-vim"},
	{"-n", "kube-system", "serviceaccount", "heatsible-tacker-vim"},
}

func (b *bed) deleteVIMObjects(t *testing.T) {
	t.Helper()
	for _, o := range vimObjects {
		b.machineKubectl(t, append([]string{"delete", "--ignore-not-found", "--wait=true"}, o...)...)
	}
}

// vimUIDs are the ServiceAccount's and the Secret's uids.
func (b *bed) vimUIDs(t *testing.T) string {
	t.Helper()
	return b.machineKubectl(t, "-n", "kube-system", "get", "serviceaccount/heatsible-tacker-vim", "secret/heatsible-tacker-vim-token",
		"-o", `jsonpath={range .items[*]}{.kind}/{.metadata.name} {.metadata.uid}{"\n"}{end}`)
}

// vimRun runs heatsible with a state directory of its own and returns the
// exit code, stdout and stderr.
func (b *bed) vimRun(t *testing.T, state string, args ...string) (int, string, string) {
	t.Helper()
	cmd := b.command(t, state, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("heatsible %s: exit %d in %s", strings.Join(args[:min(len(args), 5)], " "), code, time.Since(start).Round(time.Millisecond))
	return code, o.String(), e.String()
}

// kubectlAs runs this machine's kubectl with only the VIM's credentials (a
// 0600 kubeconfig: server, CA file, token; the token on no command line),
// as Tacker's client would use them.
func (b *bed) kubectlAs(t *testing.T, v vimDoc, args ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, []byte(v.CACert), 0o600); err != nil {
		t.Fatal(err)
	}
	kc, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Config", "current-context": "vim",
		"clusters": []any{map[string]any{"name": "vim", "cluster": map[string]any{"server": v.Server, "certificate-authority": ca}}},
		"users":    []any{map[string]any{"name": "vim", "user": map[string]any{"token": v.BearerToken}}},
		"contexts": []any{map[string]any{"name": "vim", "context": map[string]any{"cluster": "vim", "user": "vim"}}},
	})
	kf := filepath.Join(dir, "vim.kubeconfig")
	if err := os.WriteFile(kf, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	bin, err := exec.Command(filepath.Join(b.root, "testbed", "k8s", "k8s.sh"), "bin").Output()
	if err != nil {
		t.Fatalf("k8s.sh bin: %v", err)
	}
	cmd := exec.Command(filepath.Join(strings.TrimSpace(string(bin)), "kubectl"), append([]string{"--kubeconfig", kf, "--request-timeout=10s"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestVIMPrepared: instantiate-end prepares Tacker's Kubernetes VIM on the
// bed's master-0. The server is cluster_cp_name's address (master-0) at the
// port of master-0's admin kubeconfig, the CA is the cluster's (the API
// server's certificate names that address), and the token authenticates
// against the real kube-apiserver through exactly these (get pv, get
// namespaces as Tacker's registration does) while a wrong token is refused.
// A re-run (text output) keeps the same ServiceAccount and Secret (same
// uids) and token and changes nothing; a dry run prepares nothing. No form
// of the token is in any output but -o json's vim and the --vim-info file:
// not stderr, the review reports, the run records, the Ansible host's
// files, master-0's.
func TestVIMPrepared(t *testing.T) {
	b := needBed(t)
	want := b.env["BED_MASTER_API"]
	if want == "" {
		t.Fatal("testbed/run/env has no BED_MASTER_API: master-0 has no API server on its address; bring the bed up with this tree's testbed/bin/bed (docs/testbed.md)")
	}
	if got := b.masterAPI(t); got != want {
		t.Fatalf("master-0's admin kubeconfig points at %s, want %s (BED_MASTER_API)", got, want)
	}
	b.deleteVIMObjects(t)
	t.Cleanup(func() { b.deleteVIMObjects(t) })

	state, out := t.TempDir(), t.TempDir()
	vi := filepath.Join(out, "vim.json")
	code, stdout, stderr := b.vimRun(t, state, b.runArgs("--vim-info", vi, "--report", filepath.Join(out, "review.json"))...)
	if code != 0 {
		t.Fatalf("instantiate-end: exit %d\n%s", code, tail(stderr, 40))
	}
	var doc struct {
		runResult
		VIM *vimDoc `json:"vim"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.VIM == nil {
		t.Fatalf("-o json has no vim (%v):\n%s", err, stdout)
	}
	v := *doc.VIM
	ca, err := os.ReadFile(filepath.Join(b.dir, "k8s", "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Server != want || v.CACert != string(ca) || v.VimName == nil || *v.VimName != "kubernetes_vim" ||
		v.ServiceAccount.Namespace != "kube-system" || v.ServiceAccount.Name != "heatsible-tacker-vim" || v.Cluster == "" || len(v.BearerToken) < 100 {
		t.Errorf("vim: server %s, ca_cert %d bytes (the bed's CA: %v), vim_name %v, service_account %+v, cluster %q, token %d bytes",
			v.Server, len(v.CACert), v.CACert == string(ca), v.VimName, v.ServiceAccount, v.Cluster, len(v.BearerToken))
	}
	if doc.Changed == 0 {
		t.Errorf("the first run changed nothing (it created the ServiceAccount): %+v", doc.Recap)
	}
	st, err := os.Stat(vi)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("--vim-info: %v %v, want a file with mode 0600", st, err)
	}
	var file vimDoc
	if b, _ := os.ReadFile(vi); json.Unmarshal(b, &file) != nil || file.BearerToken != v.BearerToken || file.Server != v.Server || file.CACert != v.CACert {
		t.Errorf("--vim-info does not hold -o json's vim")
	}
	uids := b.vimUIDs(t)
	t.Logf("vim: server %s, ca_cert the bed's CA (%d bytes), token %d bytes; %s", v.Server, len(v.CACert), len(v.BearerToken), strings.ReplaceAll(strings.TrimSpace(uids), "\n", ", "))

	// The token against the real kube-apiserver, with the VIM's server and
	// CA (TLS verified against master-0's address).
	for _, args := range [][]string{{"get", "pv"}, {"get", "namespaces"}, {"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"}} {
		o, err := b.kubectlAs(t, v, args...)
		t.Logf("kubectl --server %s --certificate-authority <ca_cert> --token <vim token> %s: %v\n%s", v.Server, strings.Join(args, " "), err, o)
		if err != nil {
			t.Errorf("the VIM's credentials: kubectl %s: %v\n%s", strings.Join(args, " "), err, o)
		}
		if args[0] == "auth" && o != "system:serviceaccount:kube-system:heatsible-tacker-vim" {
			t.Errorf("the token is %q's, want the VIM's ServiceAccount", o)
		}
	}
	wrong := v
	wrong.BearerToken = v.BearerToken[:len(v.BearerToken)-8] + "AAAAAAAA"
	// 401: kubectl 1.33 says "the server has asked for the client to
	// provide credentials" (older ones "Unauthorized").
	if o, err := b.kubectlAs(t, wrong, "get", "pv"); err == nil || !(strings.Contains(o, "provide credentials") || strings.Contains(o, "Unauthorized")) {
		t.Errorf("a wrong token: %v, want a 401 from the API server\n%s", err, o)
	} else {
		t.Logf("a wrong token: %v: %s", err, lineWith(o, "error:"))
	}

	// Re-run, text output: nothing changes, same objects, same token.
	vi2 := filepath.Join(out, "vim2.json")
	args := setFlag(b.runArgs("--vim-info", vi2, "--report", filepath.Join(out, "review.md")), "-o", "text")
	code, stdout2, stderr2 := b.vimRun(t, state, args...)
	if code != 0 {
		t.Fatalf("re-run: exit %d\n%s", code, tail(stderr2, 40))
	}
	if !strings.Contains(stderr2, ": ok in ") || !strings.Contains(stderr2, ", 0 changes on 0 hosts\n") {
		t.Errorf("the re-run changed something:\n%s", tail(stderr2, 20))
	}
	for _, w := range []string{"heatsible: Tacker's Kubernetes VIM prepared: server " + want, "CA: the cluster CA", "written to " + vi2 + " (mode 0600)"} {
		if !strings.Contains(stderr2, w) {
			t.Errorf("the re-run does not say %q:\n%s", w, tail(stderr2, 20))
		}
	}
	var again vimDoc
	if b, _ := os.ReadFile(vi2); json.Unmarshal(b, &again) != nil || again.BearerToken != v.BearerToken || again.Server != v.Server ||
		again.CACert != v.CACert || again.VimName == nil || *again.VimName != *v.VimName || again.Cluster != v.Cluster {
		t.Errorf("the re-run's VIM differs: server %s, same token %v, same CA %v", again.Server, again.BearerToken == v.BearerToken, again.CACert == v.CACert)
	}
	if u := b.vimUIDs(t); u != uids {
		t.Errorf("the re-run changed the objects:\nbefore:\n%s\nafter:\n%s", uids, u)
	}

	// A dry run prepares and prints no VIM.
	vi3 := filepath.Join(out, "vim3.json")
	code, stdout3, stderr3 := b.vimRun(t, state, b.runArgs("--check", "--vim-info", vi3)...)
	if code != 0 {
		t.Fatalf("--check: exit %d\n%s", code, tail(stderr3, 40))
	}
	if strings.Contains(stdout3, `"vim"`) || !strings.Contains(stderr3, "check mode: Tacker's Kubernetes VIM is not prepared") {
		t.Errorf("--check printed a vim or did not say why not:\n%s\n%s", stdout3, tail(stderr3, 10))
	}
	if _, err := os.Stat(vi3); err == nil {
		t.Error("--check wrote --vim-info")
	}

	// No form of the token anywhere else.
	forms := searchForms([]string{v.BearerToken})
	var rest map[string]any
	_ = json.Unmarshal([]byte(stdout), &rest)
	delete(rest, "vim")
	restJSON, _ := json.Marshal(rest)
	var leaks []string
	for name, text := range map[string]string{"stdout (without vim)": string(restJSON), "stderr": stderr, "re-run stdout": stdout2, "re-run stderr": stderr2,
		"--check stdout": stdout3, "--check stderr": stderr3} {
		leaks = append(leaks, searchText(name, text, forms)...)
	}
	for _, dir := range []string{state} {
		found, n := searchDir(t, dir, forms)
		t.Logf("searched %d files under %s", n, dir)
		leaks = append(leaks, found...)
	}
	for _, f := range []string{"review.json", "review.md"} {
		data, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
		leaks = append(leaks, searchText(f, string(data), forms)...)
	}
	remote, err := b.searchAnsibleHost(forms)
	if err != nil {
		t.Fatal(err)
	}
	leaks = append(leaks, remote...)
	master, err := b.searchHost("master-0", forms, "/home", "/root", "/tmp", "/var/tmp")
	if err != nil {
		t.Fatal(err)
	}
	leaks = append(leaks, master...)
	t.Logf("searched for %d forms of the token: stdout, stderr, %s, the review reports, the Ansible host's %s, master-0's /home /root /tmp /var/tmp",
		len(forms), state, strings.Join(ansibleHostDirs, " "))
	for _, l := range leaks {
		t.Errorf("leak: %s", l)
	}
}

// searchHost greps a bed host's directories for the forms (on stdin) and
// names the files that hold one.
func (b *bed) searchHost(host string, forms []redact.Form, dirs ...string) ([]string, error) {
	cmd := grepCmd([]string{filepath.Join(b.root, "testbed", "bin", "bed"), "exec", host, "--"}, forms, dirs...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	var hits []string
	for _, f := range strings.Fields(string(out)) {
		hits = append(hits, host+"'s "+f)
	}
	return hits, nil
}
