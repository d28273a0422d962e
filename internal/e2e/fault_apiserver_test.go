package e2e

import (
	"strings"
	"testing"
	"time"
)

// apiRule makes the kube-apiserver's port unreachable from master-0 (an ip
// rule in master-0's network namespace: the API server is gone as far as
// kubectl there can tell, also through master-0's forward of it, which
// then closes every connection; nothing else on the bed is affected).
var apiRule = []string{"ip", "rule", "add", "to", "10.231.0.1/32", "ipproto", "tcp", "dport", "26443", "unreachable"}

func (b *bed) apiDown(t *testing.T) {
	t.Helper()
	t.Cleanup(b.apiUp)
	b.exec(t, "master-0", apiRule...)
	if _, err := b.try("master-0", kubectlArgv("get", "--raw", "/readyz", "--request-timeout=3s")...); err == nil {
		t.Fatal("master-0 still reaches the API server with the rule in place")
	}
}

// masterAPI is the API server's URL in master-0's admin kubeconfig: its
// forward https://10.231.0.12:6443 on a bed that has one (docs/testbed.md),
// else the machine's kube-apiserver, https://10.231.0.1:26443.
func (b *bed) masterAPI(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(b.kubectl(t, "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"))
}

// apiUp removes the rule (every copy of it).
func (b *bed) apiUp() {
	del := append([]string{"ip", "rule", "del"}, apiRule[3:]...)
	for i := 0; i < 5; i++ {
		if _, err := b.try("master-0", del...); err != nil {
			return
		}
	}
}

// TestAPIServerDown: kube-apiserver cannot be reached when pv_register
// starts. If it comes back within the bound (--wait api=20 here; 60 s by
// default) the run waits for it and completes; if it does not, the run
// fails after that bound with exit 4 and a message naming the API server
// and the --wait that bounds it, and no PV changed. The 20 s bound shows
// --wait reaching the role (and saves the suite 40 s of waiting).
func TestAPIServerDown(t *testing.T) {
	b := needBed(t)
	master := b.nodeAt(t, "10.231.0.12")
	want := len(b.request(t).AdditionalParams.K.PVs)
	args := b.runArgs("--role", "pv_register", "--wait", "api=20")

	t.Run("back within the bound", func(t *testing.T) {
		b.apiDown(t)
		r := b.start(t, "", args...)
		r.waitFor(t, "pv_register : Validating arguments against arg spec", 2*time.Minute)
		time.Sleep(8 * time.Second)
		b.apiUp()
		up := time.Now()
		code, _, errs, took := r.wait(t, 3*time.Minute)
		t.Logf("API server back 8 s after pv_register started: exit %d in %s (%s after it came back)", code, took.Round(time.Millisecond), time.Since(up).Round(time.Millisecond))
		if code != 0 {
			t.Fatalf("exit %d, want 0: pv_register should have waited for the API server\n%s", code, tail(errs, 30))
		}
		checkPVs(t, b, want, "Available")
	})

	t.Run("down for good", func(t *testing.T) {
		before := b.kubectl(t, "get", "pv", "-o", "jsonpath={range .items[*]}{.metadata.name} {.metadata.resourceVersion}{\"\\n\"}{end}")
		b.apiDown(t)
		r := b.start(t, "", args...)
		r.waitFor(t, "pv_register : Validating arguments against arg spec", 2*time.Minute)
		waitStart := time.Now()
		code, _, errs, took := r.wait(t, 3*time.Minute)
		waited := time.Since(waitStart)
		t.Logf("API server down for good: exit %d in %s, %s after pv_register started\n%s", code, took.Round(time.Millisecond), waited.Round(time.Millisecond), errorOf(errs))
		if code != 4 {
			t.Fatalf("exit %d, want 4 (a task failed)\n%s", code, tail(errs, 30))
		}
		wantMsg := "the Kubernetes API server " + b.masterAPI(t) + " did not answer " + master + " within 20 s"
		if !strings.Contains(errs, wantMsg) || !strings.Contains(errs, "Nothing was changed") || !strings.Contains(errs, "re-run (with --wait api=SECONDS for a longer wait)") {
			t.Errorf("the error does not say %q, that nothing was changed and how to wait longer:\n%s", wantMsg, tail(errs, 20))
		}
		// --wait api=20 + one probe (5) + one delay (3), plus Ansible's own
		// overhead for the tasks around it.
		if waited < 20*time.Second || waited > 50*time.Second {
			t.Errorf("waited %s for the API server, want 20 s to 50 s", waited.Round(time.Millisecond))
		}
		b.apiUp()
		if after := b.kubectl(t, "get", "pv", "-o", "jsonpath={range .items[*]}{.metadata.name} {.metadata.resourceVersion}{\"\\n\"}{end}"); after != before {
			t.Errorf("the PVs changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}
