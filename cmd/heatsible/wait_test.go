package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestWaitFlag: a bad --wait is exit 2 naming the flag, before anything
// runs (run: before the cluster is read); plan notes a good one.
func TestWaitFlag(t *testing.T) {
	req := filepath.Join(td, "requests", "valid.json")
	topo := filepath.Join(td, "topology", "k8s-a.yaml")
	pkg := filepath.Join(td, "package")
	for _, tc := range []struct{ value, want string }{
		{"apiserver=300", `--wait apiserver=300: no wait is called "apiserver"; the names are apt, cloud-init, join, drain, api, pv, vim-token, lb`},
		{"api=0", "--wait api=0: 0: want whole seconds, at least 1"},
		{"api", `--wait "api": want NAME=DURATION`},
	} {
		for _, cmd := range []string{"run", "plan"} {
			args := []string{cmd, "instantiate-end", "--request", req, "--package", pkg, "--topology", topo, "--wait", tc.value}
			if cmd == "run" {
				args = append(args, "--local")
			}
			code, _, errs := heatsible(t, args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("%s --wait %q: exit %d, want 2 saying %q:\n%s", cmd, tc.value, code, tc.want, errs)
			}
			if strings.Contains(errs, "reading the cluster") {
				t.Errorf("%s --wait %q: the run started before the flag was refused:\n%s", cmd, tc.value, errs)
			}
		}
	}
	code, out, errs := heatsible(t, "plan", "instantiate-end", "--request", req, "--package", pkg, "--topology", topo, "--wait", "api=20,cloud-init=20m")
	if code != 0 {
		t.Fatalf("plan --wait: exit %d\n%s", code, errs)
	}
	for _, want := range []string{"--wait api=20: the run waits at most 20 s instead of 60 s", "--wait cloud-init=1200: the run waits at most 1200 s instead of 600 s"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan --wait: no %q in\n%s", want, out)
		}
	}
}
