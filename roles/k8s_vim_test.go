package roles

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// vimKubectl stands in for kubectl as the k8s_vim role calls it: the API
// server's readiness ($API_DOWN: never ready), the kubeconfig's server URL
// ($SERVER), "apply -f -" (every document of the stream kept in
// $STATE/applied.json; "created" the first time, then "unchanged", as
// kubectl says; with --dry-run=server nothing is kept and the words carry
// "(server dry run)"), the ServiceAccount's uid and the token Secret, whose
// data the token controller fills ($TOKEN, base64 of $CA) from the
// $FILL_AFTER-th read on ("never": not at all). Every call is logged to
// $STATE/calls, one line of arguments each. It ignores --kubeconfig FILE.
const vimKubectl = `#!/usr/bin/python3
import json, os, sys, base64
a = sys.argv[1:]
if a[:1] == ["--kubeconfig"]:
    a = a[2:]
st = os.environ["STATE"]
with open(os.path.join(st, "calls"), "a") as f:
    f.write(" ".join(a) + "\n")
objs_path = os.path.join(st, "applied.json")
objs = json.load(open(objs_path)) if os.path.exists(objs_path) else {}
def key(o):
    return "%s/%s" % (o["kind"], o["metadata"]["name"])
words = {"ServiceAccount": "serviceaccount", "ClusterRoleBinding": "clusterrolebinding.rbac.authorization.k8s.io", "Secret": "secret"}
if a[:2] == ["get", "--raw"]:
    if os.environ.get("API_DOWN"):
        sys.stderr.write("The connection to the server was refused\n"); sys.exit(1)
    print("ok"); sys.exit(0)
if a[:2] == ["config", "view"]:
    sys.stdout.write(os.environ["SERVER"]); sys.exit(0)
if a[:3] == ["apply", "-f", "-"]:
    dry = "--dry-run=server" in a
    for doc in sys.stdin.read().split("\n---\n"):
        o = json.loads(doc)
        word = "unchanged" if key(o) in objs else "created"
        print("%s/%s %s%s" % (words[o["kind"]], o["metadata"]["name"], word, " (server dry run)" if dry else ""))
        if not dry:
            objs[key(o)] = o
    json.dump(objs, open(objs_path, "w"))
    sys.exit(0)
if a[:1] == ["-n"] and a[2:4] == ["get", "serviceaccount"]:
    if "ServiceAccount/" + a[4] not in objs:
        sys.stderr.write('Error from server (NotFound): serviceaccounts "%s" not found\n' % a[4]); sys.exit(1)
    sys.stdout.write("9a1e-sa"); sys.exit(0)
if a[:1] == ["-n"] and a[2:4] == ["get", "secret"]:
    k = "Secret/" + a[4]
    if k not in objs:
        sys.stderr.write('Error from server (NotFound): secrets "%s" not found\n' % a[4]); sys.exit(1)
    n = int(open(os.path.join(st, "reads")).read()) + 1 if os.path.exists(os.path.join(st, "reads")) else 1
    open(os.path.join(st, "reads"), "w").write(str(n))
    o = dict(objs[k])
    o["metadata"] = dict(o["metadata"], uid="3f0c-secret")
    fill = os.environ.get("FILL_AFTER", "1")
    if fill != "never" and n >= int(fill):
        o["metadata"]["annotations"] = dict(o["metadata"]["annotations"], **{"kubernetes.io/service-account.uid": "9a1e-sa"})
        o["data"] = {"token": base64.b64encode(os.environ["TOKEN"].encode()).decode(),
                     "ca.crt": base64.b64encode(open(os.environ["CA"], "rb").read()).decode(),
                     "namespace": base64.b64encode(b"kube-system").decode()}
    print(json.dumps(o)); sys.exit(0)
sys.stderr.write("fake kubectl: unexpected: %s\n" % " ".join(a)); sys.exit(3)
`

const vimTestToken = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.k8s-vim-role-test-signature"

type vimRoleRun struct {
	code  int
	out   string
	info  string // the info file's path
	state string
}

// playVIM runs the k8s_vim role on this machine (connection local) against
// vimKubectl and a TLS server standing in for the API server, with -vvv
// and the jsonl callback heatsible uses, so that the output is what a run
// record would hold.
func playVIM(t *testing.T, state string, env []string, vars map[string]any, check bool, more ...string) vimRoleRun {
	t.Helper()
	roles := needRootAnsible(t)
	dir := t.TempDir()
	kubectl := filepath.Join(dir, "kubectl")
	kubeconfig := filepath.Join(dir, "admin.conf")
	for name, content := range map[string]string{
		kubectl: vimKubectl, kubeconfig: "apiVersion: v1\nkind: Config\n",
		filepath.Join(dir, "site.yml"): "- hosts: localhost\n  gather_facts: false\n  roles:\n    - role: k8s_vim\n",
	} {
		if err := os.WriteFile(name, []byte(content), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	info := filepath.Join(dir, "vim-info.json")
	all := map[string]any{"kubectl_bin": kubectl, "kubectl_kubeconfig": kubeconfig, "k8s_vim_info_file": info,
		"k8s_vim_token_timeout": 4, "k8s_vim_token_delay": 1, "k8s_vim_api_timeout": 3, "k8s_vim_api_delay": 1}
	for k, v := range vars {
		all[k] = v
	}
	ev, _ := json.Marshal(all)
	args := []string{"-vvv", "-i", "localhost,", "-c", "local", "-e", string(ev), "site.yml"}
	if check {
		args = append(args, "--check", "--diff")
	}
	args = append(args, more...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ansible-playbook", args...)
	cmd.Dir = dir
	cmd.Env = append(append(ansibleEnv(t), "ANSIBLE_ROLES_PATH="+roles, "ANSIBLE_LOCALHOST_WARNING=false",
		"ANSIBLE_STDOUT_CALLBACK=ansible.posix.jsonl", "STATE="+state, "TOKEN="+vimTestToken), env...)
	out, err := cmd.CombinedOutput()
	r := vimRoleRun{out: string(out), info: info, state: state}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("ansible-playbook: %v\n%s", err, out)
	}
	return r
}

// changed is localhost's "changed" count of the run's stats (jsonl).
func (r vimRoleRun) changed(t *testing.T) int {
	t.Helper()
	for _, l := range strings.Split(r.out, "\n") {
		if !strings.Contains(l, `"v2_playbook_on_stats"`) {
			continue
		}
		var s struct {
			Stats map[string]struct{ Changed int } `json:"stats"`
		}
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatal(err)
		}
		return s.Stats["localhost"].Changed
	}
	t.Fatalf("no stats in the output:\n%s", r.out)
	return -1
}

// noToken fails if the output holds the token raw or base64-encoded.
func (r vimRoleRun) noToken(t *testing.T) {
	t.Helper()
	for _, f := range []string{vimTestToken, base64.StdEncoding.EncodeToString([]byte(vimTestToken)), "k8s-vim-role-test-signature"} {
		if strings.Contains(r.out, f) {
			t.Errorf("the output holds the token (%d bytes of it):\n%s", len(f), r.out)
		}
	}
}

// readVIMInfo reads the role's info file: its string fields, and
// "applied" (kubectl apply's lines) as its first line.
func readVIMInfo(t *testing.T, path string) map[string]string {
	t.Helper()
	var raw map[string]any
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("info file is not JSON: %v", err)
	}
	info := map[string]string{}
	for k, v := range raw {
		switch v := v.(type) {
		case string:
			info[k] = v
		case []any:
			if len(v) > 0 {
				info[k], _ = v[0].(string)
			}
		}
	}
	return info
}

// TestK8sVIMRole: the first run creates the ServiceAccount, its
// ClusterRoleBinding to cluster-admin and the token Secret (annotated for
// it), waits for the token controller and writes the token, the CA, the
// kubeconfig's server and the API server's certificate to the info file
// (0600); the output never holds the token (-vvv, jsonl); a re-run changes
// nothing; check mode applies with --dry-run=server and reads no token; a
// token that never comes fails within the bound; an endpoint that does not
// answer falls back to the kubeconfig's server for the certificate.
func TestK8sVIMRole(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	leaf := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte(leaf), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"SERVER=" + srv.URL, "CA=" + ca}
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]

	t.Run("check mode first: nothing created, no token read", func(t *testing.T) {
		state := t.TempDir()
		r := playVIM(t, state, env, map[string]any{"k8s_vim_endpoint_host": "127.0.0.1"}, true)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.out)
		}
		for _, want := range []string{"would apply: serviceaccount/heatsible-tacker-vim created (server dry run)", "check mode: no token read"} {
			if !strings.Contains(r.out, want) {
				t.Errorf("the output does not say %q:\n%s", want, r.out)
			}
		}
		if _, err := os.Stat(filepath.Join(state, "applied.json")); err == nil {
			if b, _ := os.ReadFile(filepath.Join(state, "applied.json")); string(b) != "{}" {
				t.Errorf("check mode stored objects: %s", b)
			}
		}
		if _, err := os.Stat(r.info); err == nil {
			t.Error("check mode wrote the info file")
		}
		if calls, _ := os.ReadFile(filepath.Join(state, "calls")); strings.Contains(string(calls), "get secret") {
			t.Errorf("check mode read the Secret:\n%s", calls)
		}
	})

	state := t.TempDir()
	t.Run("first run", func(t *testing.T) {
		r := playVIM(t, state, append(env, "FILL_AFTER=2"), map[string]any{"k8s_vim_endpoint_host": "127.0.0.1"}, false)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.out)
		}
		r.noToken(t)
		if c := r.changed(t); c != 1 {
			t.Errorf("changed=%d, want 1 (the apply)", c)
		}
		for _, want := range []string{
			"applied: serviceaccount/heatsible-tacker-vim created, clusterrolebinding.rbac.authorization.k8s.io/heatsible-tacker-vim created, secret/heatsible-tacker-vim-token created",
			"its token is ready; the admin kubeconfig's API server is " + srv.URL,
		} {
			if !strings.Contains(r.out, want) {
				t.Errorf("the output does not say %q:\n%s", want, r.out)
			}
		}
		// every call that talks to the API server is bounded
		calls, _ := os.ReadFile(filepath.Join(state, "calls"))
		for _, c := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
			if !strings.HasPrefix(c, "config view") && !strings.Contains(c, "--request-timeout=") {
				t.Errorf("kubectl %s: no --request-timeout", c)
			}
		}
		var objs map[string]map[string]any
		b, _ := os.ReadFile(filepath.Join(state, "applied.json"))
		if err := json.Unmarshal(b, &objs); err != nil || len(objs) != 3 {
			t.Fatalf("applied %s (%v)", b, err)
		}
		crb, _ := json.Marshal(objs["ClusterRoleBinding/heatsible-tacker-vim"])
		sec, _ := json.Marshal(objs["Secret/heatsible-tacker-vim-token"])
		for _, want := range []string{`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}`,
			`"subjects":[{"kind":"ServiceAccount","name":"heatsible-tacker-vim","namespace":"kube-system"}]`} {
			if !strings.Contains(string(crb), want) {
				t.Errorf("ClusterRoleBinding %s lacks %s", crb, want)
			}
		}
		for _, want := range []string{`"type":"kubernetes.io/service-account-token"`, `"annotations":{"kubernetes.io/service-account.name":"heatsible-tacker-vim"}`, `"namespace":"kube-system"`} {
			if !strings.Contains(string(sec), want) {
				t.Errorf("Secret %s lacks %s", sec, want)
			}
		}
		st, err := os.Stat(r.info)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("info file: %v %v, want mode 0600", st, err)
		}
		info := readVIMInfo(t, r.info)
		if info["applied"] != "serviceaccount/heatsible-tacker-vim created" {
			t.Errorf("info applied %q, want kubectl apply's first line", info["applied"])
		}
		if tok, _ := base64.StdEncoding.DecodeString(info["token"]); string(tok) != vimTestToken {
			t.Errorf("info token %q", info["token"])
		}
		if c, _ := base64.StdEncoding.DecodeString(info["ca_crt"]); string(c) != leaf || info["serving_cert"] != leaf {
			t.Errorf("info ca_crt/serving_cert are not the server's certificate: %+v", info)
		}
		if info["server"] != srv.URL || info["cert_from"] != "127.0.0.1:"+port || info["cert_error"] != "" ||
			info["service_account_uid"] != "9a1e-sa" || info["secret_uid"] != "3f0c-secret" {
			t.Errorf("info %+v", info)
		}
	})

	t.Run("re-run: nothing changes, same token", func(t *testing.T) {
		// --diff: the info file's content would show in the copy's diff
		// without no_log.
		r := playVIM(t, state, env, map[string]any{"k8s_vim_endpoint_host": "127.0.0.1"}, false, "--diff")
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.out)
		}
		r.noToken(t)
		if c := r.changed(t); c != 0 {
			t.Errorf("changed=%d, want 0\n%s", c, r.out)
		}
		if !strings.Contains(r.out, "applied: serviceaccount/heatsible-tacker-vim unchanged, clusterrolebinding.rbac.authorization.k8s.io/heatsible-tacker-vim unchanged, secret/heatsible-tacker-vim-token unchanged") {
			t.Errorf("the output does not say unchanged:\n%s", r.out)
		}
	})

	t.Run("the endpoint does not answer: the kubeconfig's server's certificate", func(t *testing.T) {
		r := playVIM(t, t.TempDir(), env, map[string]any{"k8s_vim_endpoint_host": "127.0.0.3"}, false)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.out)
		}
		info := readVIMInfo(t, r.info)
		if info["cert_from"] != "127.0.0.1:"+port || !strings.HasPrefix(info["cert_error"], "127.0.0.3:"+port+": ") || info["serving_cert"] != leaf {
			t.Errorf("info %+v", info)
		}
	})

	t.Run("no token within the bound", func(t *testing.T) {
		start := time.Now()
		r := playVIM(t, t.TempDir(), append(env, "FILL_AFTER=never"), map[string]any{"k8s_vim_endpoint_host": "127.0.0.1"}, false)
		if r.code != 2 {
			t.Fatalf("exit %d, want 2\n%s", r.code, r.out)
		}
		want := "the Secret kube-system/heatsible-tacker-vim-token has no token for ServiceAccount heatsible-tacker-vim after 4 s: the token controller of kube-controller-manager has not filled it (it needs --service-account-private-key-file and --root-ca-file)"
		if !strings.Contains(r.out, want) {
			t.Errorf("the output does not say %q:\n%s", want, r.out)
		}
		if _, err := os.Stat(r.info); err == nil {
			t.Error("the info file was written")
		}
		t.Logf("failed after %s", time.Since(start).Round(time.Second))
	})

	t.Run("API server down: nothing applied", func(t *testing.T) {
		state := t.TempDir()
		r := playVIM(t, state, append(env, "API_DOWN=1"), nil, false)
		if r.code != 2 || !strings.Contains(r.out, "the Kubernetes API server "+srv.URL+" did not answer localhost within 3 s (The connection to the server was refused). Nothing was changed.") {
			t.Fatalf("exit %d, want 2 and the API server's message\n%s", r.code, r.out)
		}
		if calls, _ := os.ReadFile(filepath.Join(state, "calls")); strings.Contains(string(calls), "apply") {
			t.Errorf("applied with the API server down:\n%s", calls)
		}
	})
}

// TestControllerFileAction: heatsible.nfv.controller_file (k8s_vim's action
// plugin) writes the content literally to a new 0600 file on the
// controller; a file or a symlink already at dest is replaced, never
// followed or reused; check mode writes nothing; a bad dest fails (no_log
// hides why) without showing the content.
func TestControllerFileAction(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook is not on PATH (CI installs Debian's ansible)")
	}
	const secret = `tok-{{ 7*7 }}-{% raw %}-'"\-$HOME-é`
	play := func(t *testing.T, dest string, check bool) (string, error) {
		dir := t.TempDir()
		vars, _ := json.Marshal(map[string]string{"d": dest})
		// The secret comes from a vars file, as heatsible's secrets do
		// (-e @secrets.yml), never from the play's source: ansible-core
		// 2.19 shows the lines around a failed task's origin in its error
		// (no_log or not), and heatsible's playbooks hold no secret.
		lit := "!unsafe '" + strings.ReplaceAll(secret, "'", "''") + "'"
		if err := os.WriteFile(filepath.Join(dir, "secret.yml"), []byte("s: "+lit+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		site := "- hosts: localhost\n  gather_facts: false\n  tasks:\n" +
			"    - heatsible.nfv.controller_file:\n        content: \"{{ s }}\"\n        dest: \"{{ d }}\"\n      no_log: true\n" +
			"    - heatsible.nfv.controller_file:\n        content: \"{{ {'token': s} | to_json }}\"\n        dest: \"{{ d }}.json\"\n      no_log: true\n"
		if err := os.WriteFile(filepath.Join(dir, "site.yml"), []byte(site), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"-i", "localhost,", "-c", "local", "-e", string(vars), "-e", "@secret.yml", "site.yml"}
		if check {
			args = append(args, "--check")
		}
		cmd := exec.Command("ansible-playbook", args...)
		cmd.Dir = dir
		cmd.Env = append(ansibleEnv(t), "ANSIBLE_LOCALHOST_WARNING=false") // the collection's action
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	dir := t.TempDir()
	dest := filepath.Join(dir, "vim-info")
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, dest); err != nil { // a symlink at dest: replaced, not followed
		t.Fatal(err)
	}
	if err := os.WriteFile(dest+".json", []byte("old"), 0o644); err != nil { // an old file: its mode is not kept
		t.Fatal(err)
	}

	if out, err := play(t, dest, true); err != nil || strings.Contains(out, "tok-") {
		t.Fatalf("check mode: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(dest + ".json"); string(b) != "old" {
		t.Errorf("check mode wrote %s.json: %q", dest, b)
	}

	out, err := play(t, dest, false)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(out, "tok-") {
		t.Errorf("the output holds the content:\n%s", out)
	}
	for _, f := range []string{dest, dest + ".json"} {
		st, err := os.Lstat(f)
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want a regular file with mode 0600", f, st.Mode(), err)
		}
	}
	if b, _ := os.ReadFile(dest); string(b) != secret {
		t.Errorf("content %q, want %q", b, secret)
	}
	var got map[string]string
	if b, _ := os.ReadFile(dest + ".json"); json.Unmarshal(b, &got) != nil || got["token"] != secret {
		t.Errorf("JSON content %q", b)
	}
	if b, _ := os.ReadFile(other); string(b) != "keep" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".vim-info*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	out, err = play(t, filepath.Join(dir, "no-such-dir", "f"), false)
	if err == nil || strings.Contains(out, "tok-") {
		t.Errorf("a dest in a missing directory: %v, want a failure that does not show the content\n%s", err, out)
	}
	// The failure is the action's own (ansible-core 2.19 shows it, no_log
	// or not), not Python's about a temporary file the run never made.
	if strings.Contains(out, "Errno") || strings.Contains(out, "/.f.") {
		t.Errorf("a dest in a missing directory: want the action's own message, not an OSError's:\n%s", out)
	}
}

// TestKubeconfigLookedUpOncePerRun: two roles on the same master in one
// run (pv_register then k8s_vim in instantiate-end) import the kubeconfig
// role; the second reuses what the first found (one probe, one report),
// and a lookup that finds nothing still fails the first play.
func TestKubeconfigLookedUpOncePerRun(t *testing.T) {
	for _, tc := range []struct {
		name       string
		kubeconfig bool
		code       int
		probes     int
	}{
		{"found: one probe for two plays", true, 0, 1},
		{"missing: the first play fails", false, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			kubectl, kubeconfig := filepath.Join(dir, "kubectl"), filepath.Join(dir, "admin.conf")
			if err := os.WriteFile(kubectl, []byte("#!/bin/sh\nexit 0\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.kubeconfig {
				if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			play := "- hosts: localhost\n  gather_facts: false\n  roles: [kubeconfig]\n"
			site := play + play + "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - debug:\n        msg: \"second play reads {{ kubeconfig_found.path }}\"\n"
			ev, _ := json.Marshal(map[string]string{"kubectl_bin": kubectl, "kubectl_kubeconfig": kubeconfig})
			code, out := playBook(t, site, string(ev), "ANSIBLE_STDOUT_CALLBACK=ansible.posix.jsonl")
			probes := 0
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "Look for the admin kubeconfig") &&
					(strings.Contains(l, `"v2_runner_on_ok"`) || strings.Contains(l, `"v2_runner_on_failed"`)) {
					probes++
				}
			}
			if code != tc.code || probes != tc.probes {
				t.Fatalf("exit %d, %d probes; want %d, %d\n%s", code, probes, tc.code, tc.probes, out)
			}
			if tc.kubeconfig && !strings.Contains(out, "second play reads "+kubeconfig) {
				t.Errorf("the later play does not have kubeconfig_found:\n%s", out)
			}
			if !tc.kubeconfig && !strings.Contains(out, kubeconfig+" (missing). Nothing was changed.") {
				t.Errorf("no failure message naming the kubeconfig:\n%s", out)
			}
		})
	}
}
