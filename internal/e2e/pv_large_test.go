package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLargeManifests: pv_register applies the manifests as base64 on one
// command line, and Linux allows one argument of at most 128 KiB. Manifests
// whose base64 is over pv_register_raw_max (96 KiB) must take
// present-stdin.yml (kubectl apply on its stdin) and register the PVs all
// the same; the next run with the usual manifests takes the one-command
// path again.
func TestLargeManifests(t *testing.T) {
	b := needBed(t)
	want := len(b.request(t).AdditionalParams.K.PVs)

	req := b.requestDoc(t)
	k := req["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)
	first := k["pv_registration_params"].([]any)[0].(map[string]any)["pv_manifest_file_path"].(string)
	pkg := b.copyPackage(t)
	// 120 KiB of annotation (the API server allows 256 KiB): 160 KiB of
	// base64, over the 96 KiB bound and over the 128 KiB argument limit.
	path := filepath.Join(pkg, first)
	m, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 120<<10)
	big := strings.Replace(string(m), "metadata:\n", "metadata:\n  annotations:\n    heatsible.test/pad: "+pad+"\n", 1)
	if big == string(m) {
		t.Fatalf("%s has no \"metadata:\" line to annotate:\n%s", first, m)
	}
	if err := os.WriteFile(path, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}

	code, _, errs, took := b.heatsible(t, setFlag(b.runArgs("--role", "pv_register"), "--package", pkg)...)
	t.Logf("pv_register with a 120 KiB manifest: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, tail(errs, 40))
	}
	// present-stdin.yml's tasks, not present.yml's one command
	if lineWith(errs, "pv_register : Wait until every PersistentVolume is Available or Bound") == "" ||
		lineWith(errs, "pv_register : Apply the PersistentVolume manifests, then wait") != "" {
		t.Errorf("the big manifests did not take present-stdin.yml:\n%s", tail(errs, 30))
	}
	checkPVs(t, b, want, "")
	name := strings.TrimSuffix(filepath.Base(first), filepath.Ext(first))
	got := b.kubectl(t, "get", "pv", "-l", "app.kubernetes.io/managed-by=heatsible", "-o", `jsonpath={range .items[*]}{.metadata.annotations.heatsible\.test/pad}{end}`)
	if len(strings.TrimSpace(got)) != len(pad) {
		t.Errorf("no PV carries the %d-byte annotation of %s (got %d bytes)", len(pad), name, len(strings.TrimSpace(got)))
	}

	// The usual manifests again: one command, and the annotation is gone
	// (kubectl apply removes what the last applied configuration had).
	code, _, errs, took = b.heatsible(t, b.runArgs("--role", "pv_register")...)
	t.Logf("pv_register with the usual manifests: exit %d in %s", code, took.Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, tail(errs, 40))
	}
	if lineWith(errs, "pv_register : Apply the PersistentVolume manifests, then wait") == "" {
		t.Errorf("the usual manifests did not take present.yml's one command:\n%s", tail(errs, 30))
	}
	checkPVs(t, b, want, "Available")
	if got := b.kubectl(t, "get", "pv", "-l", "app.kubernetes.io/managed-by=heatsible", "-o", `jsonpath={range .items[*]}{.metadata.annotations.heatsible\.test/pad}{end}`); strings.TrimSpace(got) != "" {
		t.Errorf("the pad annotation is still there after applying the usual manifests (%d bytes)", len(strings.TrimSpace(got)))
	}
}
