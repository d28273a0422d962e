package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bedScript runs this tree's testbed/bin/bed (its kubeconfig and first-boot
// subcommands; the bed's state is the shared one, through testbed/run) and
// returns its stdout.
func (b *bed) bedScript(t *testing.T, args ...string) string {
	t.Helper()
	path, err := filepath.Abs("../../testbed/bin/bed")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bed %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// kubeconfigLayout lays master-0's admin kubeconfig out as layout
// (kubespray, kubeadm or none: bed kubeconfig) until the test ends, then
// puts back the layout it found.
func (b *bed) kubeconfigLayout(t *testing.T, layout string) {
	t.Helper()
	was := b.bedScript(t, "kubeconfig")
	if was != "kubespray" && was != "kubeadm" && was != "none" {
		t.Fatalf("master-0's admin kubeconfig is laid out as %q: bring the bed up with this tree's testbed/bin/bed", was)
	}
	t.Cleanup(func() { b.bedScript(t, "kubeconfig", was) })
	b.bedScript(t, "kubeconfig", layout)
	if got := b.bedScript(t, "kubeconfig"); got != layout {
		t.Fatalf("bed kubeconfig %s left %q", layout, got)
	}
}

// TestKubeconfigLayouts: pv_register finds the admin kubeconfig where
// kubespray (root only: /etc/kubernetes/admin.conf, /root/.kube/config) and
// kubeadm scripts (the SSH user's ~/.kube/config) leave it, or where the
// request or --kubeconfig says; with none it fails at once (not after the
// 60 s API server wait) naming every path it tried and the setting, with
// no PV changed; a setting that names a missing file is never replaced by
// another file.
func TestKubeconfigLayouts(t *testing.T) {
	b := needBed(t)
	master := b.nodeAt(t, "10.231.0.12")
	user := b.env["BED_USER"]
	want := len(b.request(t).AdditionalParams.K.PVs)
	home := "/home/" + user + "/.kube/config"

	missing := b.requestDoc(t)
	missing["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)["master_node"].(map[string]any)["kubeconfig"] = "/etc/kubernetes/heatsible-e2e-missing.conf"
	missingReq := writeRequest(t, missing)

	const own = "/srv/heatsible-e2e/admin.conf"
	tests := []struct {
		name, layout string
		args         []string
		code         int
		msg          string
	}{
		{"kubespray: root only, through sudo", "kubespray", nil, 0,
			master + ": kubectl reads /etc/kubernetes/admin.conf through sudo (root only)"},
		{"kubeadm scripts: the SSH user's", "kubeadm", nil, 0,
			master + ": kubectl reads " + home + " as " + user},
		{"none: fails at once", "none", nil, 4,
			"no admin kubeconfig for kubectl on " + master + ": tried " + home + " (missing), /etc/kubernetes/admin.conf (missing), " +
				"/root/.kube/config (missing). Nothing was changed."},
		{"--kubeconfig", "none", []string{"--kubeconfig", own}, 0,
			master + ": kubectl reads " + own + " through sudo (root only)"},
		{"request master_node.kubeconfig: no fallback", "kubespray", []string{"--request", missingReq}, 4,
			"the admin kubeconfig /etc/kubernetes/heatsible-e2e-missing.conf given for kubectl is not usable on " + master +
				": /etc/kubernetes/heatsible-e2e-missing.conf (missing). Nothing was changed."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b.kubeconfigLayout(t, tc.layout)
			if strings.Contains(strings.Join(tc.args, " "), own) {
				// the bed's admin credentials (this machine's copy), root-only, where no search looks
				kc, err := os.ReadFile(b.env["KUBECONFIG"])
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.try("master-0", "rm", "-rf", filepath.Dir(own)) })
				b.exec(t, "master-0", "sh", "-c", `umask 077 && mkdir -p "$(dirname "$1")" && printf '%s' "$2" > "$1"`, "sh", own, string(kc))
			}
			before := b.pvVersions(t)
			args := b.runArgs("--role", "pv_register")
			for i := 0; i+1 < len(tc.args); i += 2 {
				args = setFlag(args, tc.args[i], tc.args[i+1])
			}
			r := b.start(t, "", args...)
			r.waitFor(t, "pv_register : Validating arguments against arg spec", 2*time.Minute)
			from := time.Now()
			code, _, errs, took := r.wait(t, 5*time.Minute)
			after := time.Since(from)
			t.Logf("%s: exit %d in %s (%s after pv_register started)\n%s", tc.layout, code, took.Round(time.Millisecond),
				after.Round(time.Millisecond), lineWith(errs, tc.msg))
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, tail(errs, 40))
			}
			if !strings.Contains(errs, tc.msg) {
				t.Errorf("the run does not say %q:\n%s", tc.msg, tail(errs, 40))
			}
			if code == 0 {
				phases := strings.Fields(b.machineKubectl(t, "get", "pv", "-l", "app.kubernetes.io/managed-by=heatsible", "-o", "jsonpath={.items[*].status.phase}"))
				if len(phases) != want || strings.Count(strings.Join(phases, " "), "Available") != want {
					t.Errorf("the PVs' phases are %v, want %d Available", phases, want)
				}
				return
			}
			if strings.Contains(errs, "did not answer") {
				t.Errorf("a missing kubeconfig reported as an API server that did not answer:\n%s", tail(errs, 20))
			}
			// At once: the probe is one round trip; the API server wait
			// (60 s) never starts.
			if after > 30*time.Second {
				t.Errorf("failed %s after pv_register started, want at once (< 30 s)", after.Round(time.Millisecond))
			}
			if got := b.pvVersions(t); got != before {
				t.Errorf("the PVs changed:\nbefore:\n%s\nafter:\n%s", before, got)
			}
		})
	}
}

// pvVersions lists every PV with its resourceVersion (any change shows).
func (b *bed) pvVersions(t *testing.T) string {
	t.Helper()
	return b.machineKubectl(t, "get", "pv", "-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.resourceVersion}{"\n"}{end}`)
}

// machineKubectl runs kubectl on this machine with the bed's admin
// kubeconfig (testbed/run/env's KUBECONFIG): master-0 may have none.
func (b *bed) machineKubectl(t *testing.T, args ...string) string {
	t.Helper()
	dir, err := exec.Command(filepath.Join(b.root, "testbed", "k8s", "k8s.sh"), "bin").Output()
	if err != nil {
		t.Fatalf("k8s.sh bin: %v", err)
	}
	out, err := exec.Command(filepath.Join(strings.TrimSpace(string(dir)), "kubectl"),
		append([]string{"--kubeconfig", b.env["KUBECONFIG"]}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s on this machine: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
