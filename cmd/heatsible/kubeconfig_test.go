package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubeconfigFlag: --kubeconfig is checked like the request's
// master_node.kubeconfig (a plain absolute path, or exit 2 naming the
// flag) and, when good, overrides it.
func TestKubeconfigFlag(t *testing.T) {
	req := filepath.Join(td, "requests", "valid_kubeconfig.json")
	topo := filepath.Join(td, "topology", "k8s-a.yaml")
	pkg := filepath.Join(td, "package")
	for _, tc := range []struct{ value, want string }{
		{"admin.conf", `--kubeconfig: "admin.conf" is not an absolute path; start it with /`},
		{"/etc/kubernetes/{{ lookup('pipe', 'id') }}", `--kubeconfig: "/etc/kubernetes/{{ lookup('pipe', 'id') }}" contains characters that are not allowed`},
		{"/etc/kubernetes/../shadow", `--kubeconfig: "/etc/kubernetes/../shadow" contains a '..' component`},
		{"/", `--kubeconfig: "/" is a directory`},
	} {
		for _, cmd := range []string{"run", "plan"} {
			code, _, errs := heatsible(t, cmd, "instantiate-end", "--request", req, "--package", pkg, "--topology", topo, "--local", "--kubeconfig", tc.value)
			if cmd == "plan" {
				code, _, errs = heatsible(t, cmd, "instantiate-end", "--request", req, "--package", pkg, "--topology", topo, "--kubeconfig", tc.value)
			}
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("%s --kubeconfig %q: exit %d, want 2 saying %q:\n%s", cmd, tc.value, code, tc.want, errs)
			}
		}
	}

	g := &globals{stdout: io.Discard, stderr: io.Discard}
	for _, tc := range []struct{ flag, want string }{
		{"", "/etc/kubernetes/admin.conf"}, // the request's
		{"/home/ubuntu/admin.conf", "/home/ubuntu/admin.conf"},
	} {
		in := inputs{request: req, pkg: pkg, kubeconfig: tc.flag}
		r, err := in.loadRequest(g, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Cluster.MasterNode.Kubeconfig; got != tc.want {
			t.Errorf("--kubeconfig %q: master_node.kubeconfig = %q, want %q", tc.flag, got, tc.want)
		}
	}
}
