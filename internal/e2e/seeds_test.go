package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The tests in this file check what an operator coming from Tacker's sample
// MgmtDrivers relies on: kubespray gets what the request says, in the
// inventory format its path names (issue 16.2, 16.3), and a Bound Manila CSI
// PV does not block the heal of the storage server (16.7).

// ksVarsRecord is what TestKubesprayStandInVars reads of a stand-in record
// (testbed/kubespray/standin/record.yml and its module).
type ksVarsRecord struct {
	Seq            int            `json:"seq"`
	Playbook       string         `json:"playbook"`
	KubesprayVars  map[string]any `json:"kubespray_vars"`
	Argv           []string       `json:"argv"`
	InventoryFiles []ksFile       `json:"inventory_files"`
	VarsFiles      []ksFile       `json:"vars_files"`
}

// ksFile is a file the stand-in was given: an inventory (with its format by
// name and by parsing) or a -e @ vars file.
type ksFile struct {
	Path   string `json:"path"`
	ByName string `json:"by_name"`
	Parsed string `json:"parsed"`
	Mode   string `json:"mode"`
}

// ksVarsRecords returns the stand-in's records with a sequence number above
// after, in order.
func (b *bed) ksVarsRecords(t *testing.T, after int) []ksVarsRecord {
	t.Helper()
	dir := b.env["BED_KUBESPRAY_ROOT"] + "/records"
	out := b.exec(t, "ansible", "sh", "-c", "for f in "+dir+"/[0-9]*.json; do [ -f \"$f\" ] && cat \"$f\"; done; true")
	dec := json.NewDecoder(strings.NewReader(out))
	var recs []ksVarsRecord
	for dec.More() {
		var r ksVarsRecord
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("stand-in records: %v", err)
		}
		if r.Seq > after {
			recs = append(recs, r)
		}
	}
	slices.SortFunc(recs, func(a, b ksVarsRecord) int { return a.Seq - b.Seq })
	return recs
}

// kubesprayRequestDoc is the bed's request-kubespray.json as a document to
// edit.
func (b *bed) kubesprayRequestDoc(t *testing.T) map[string]any {
	t.Helper()
	var req map[string]any
	data, err := os.ReadFile(filepath.Join(b.dir, "request-kubespray.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &req); err != nil {
		t.Fatal(err)
	}
	return req
}

func k8sParams(req map[string]any) map[string]any {
	return req["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)
}

// TestKubesprayStandInVars: with the kubespray spec's request fields
// (pod_cidr, cluster_cidr, a proxy with user:password, no_proxy,
// k8s_node_cidr, cluster_cp_name) and the spec's relative INI inventory
// path, the kubespray stand-in's cluster.yml records, as the first node sees
// them, the variables kubespray received; it was given an INI inventory
// (by name and by parsing, mode 0600) at kubespray_root_path/inventory/...,
// and the vars file (-e @, mode 0600); no secret was on its command line,
// in heatsible's output or in the run record. terminate-end removes that
// inventory.
func TestKubesprayStandInVars(t *testing.T) {
	b := needBed(t)
	ks := b.env["BED_KUBESPRAY_ROOT"]
	if ks == "" {
		t.Fatal("the bed has no BED_KUBESPRAY_ROOT (testbed/run/env): it needs the kubespray stand-in (docs/testbed.md)")
	}
	// The bed converged first with its own request: with the test's proxy,
	// which leads nowhere, an apt install that the NFS roles found needed
	// would fail for reasons of its own.
	b.ksRun(t, t.TempDir(), "instantiate-end")

	const secret1, secret2 = "e2e-proxy-secret-1", "e2e-proxy-secret-2"
	req := b.kubesprayRequestDoc(t)
	k := k8sParams(req)
	m := k["master_node"].(map[string]any)
	m["pod_cidr"], m["cluster_cidr"] = "192.168.3.0/16", "10.199.187.0/24"
	k["proxy"] = map[string]any{
		"http_proxy":    "http://user1:" + secret1 + "@10.231.0.1:3128",
		"https_proxy":   "https://user2:" + secret2 + "@10.231.0.1:3129",
		"no_proxy":      "192.168.246.0/24,10.0.0.1",
		"k8s_node_cidr": "10.231.0.0/24",
	}
	inv := "inventory/heatsible-e2e-ini/hosts.ini"
	k["ansible"].(map[string]any)["transferring_inventory_path"] = inv
	reqFile := writeRequest(t, req)
	invPath := ks + "/" + inv
	t.Cleanup(func() {
		b.try("ansible", "sh", "-c", "rm -f "+invPath+" && rmdir "+filepath.Dir(invPath)+" 2>/dev/null; true")
	})

	nodes := b.topology(t)
	seq := lastRecordSeq(b.ksRecords(t, 0))
	state := t.TempDir()
	args := []string{"-o", "json", "-v", "run", "instantiate-end", "--request", reqFile, "--package", filepath.Join(b.dir, "package"),
		"--stack", b.env["HEATSIBLE_STACK"], "--known-hosts", filepath.Join(b.dir, "known_hosts")}
	cmd := b.command(t, state, args...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("instantiate-end with the kubespray spec's fields: %v\n%s", err, tail(e.String(), 60))
	}
	t.Logf("instantiate-end with the kubespray spec's fields: %s", time.Since(start).Round(time.Millisecond))
	for _, s := range []string{secret1, secret2} {
		if strings.Contains(o.String()+e.String(), s) {
			t.Errorf("heatsible's output holds the proxy password %s", s)
		}
	}

	recs := b.ksVarsRecords(t, seq)
	if len(recs) != 1 || recs[0].Playbook != "cluster.yml" {
		t.Fatalf("the stand-in recorded %d runs, want cluster.yml once: %+v", len(recs), recs)
	}
	r := recs[0]
	if len(r.InventoryFiles) != 1 {
		t.Fatalf("inventory files %+v, want %s only", r.InventoryFiles, invPath)
	}
	if f := r.InventoryFiles[0]; f.Path != invPath || f.ByName != "ini" || f.Parsed != "ini" || f.Mode != "0600" {
		t.Errorf("kubespray's inventory %+v, want %s, INI by name and by parsing, mode 0600", f, invPath)
	}
	if len(r.VarsFiles) != 1 || !strings.HasSuffix(r.VarsFiles[0].Path, "/kubespray-vars.yml") || r.VarsFiles[0].Mode != "0600" {
		t.Errorf("-e @ files %+v, want the run bundle's kubespray-vars.yml only, mode 0600", r.VarsFiles)
	}
	argv := strings.Join(r.Argv, " ")
	if len(r.Argv) == 0 || strings.Contains(argv, "********") || strings.Contains(argv, "e2e-proxy-secret") || strings.Contains(argv, "secrets.yml") {
		t.Errorf("kubespray's command line %q: want one without secrets or secrets.yml", argv)
	}
	var np []string
	clusterCP := ""
	for _, n := range nodes {
		if n.Role == "master" || n.Role == "worker" {
			np = append(np, n.Address)
		}
		if n.Role == "master" && clusterCP == "" {
			clusterCP = n.Address // masterNode_CP1 is the first master's NIC
		}
	}
	want := map[string]any{
		"host":                                r.KubesprayVars["host"],
		"kube_pods_subnet":                    "192.168.0.0/16",
		"kube_service_addresses":              "10.199.187.0/24",
		"http_proxy":                          "http://********@10.231.0.1:3128",
		"https_proxy":                         "https://********@10.231.0.1:3129",
		"no_proxy":                            nil,
		"additional_no_proxy":                 "192.168.246.0/24,10.0.0.1,10.231.0.0/24," + strings.Join(np, ","),
		"supplementary_addresses_in_ssl_keys": []any{clusterCP},
		"proxy_env_defined":                   false,
		"heatsible_secrets_keys":              []any{"master_password", "worker_password"},
	}
	if !reflect.DeepEqual(r.KubesprayVars, want) {
		got, _ := json.MarshalIndent(r.KubesprayVars, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("kubespray got\n%s\nwant\n%s", got, exp)
	}
	// The file on the Ansible host and the run record.
	content := b.exec(t, "ansible", "cat", invPath)
	if !strings.Contains(content, "\n[all]\n") || !strings.Contains(content, "{{ heatsible_secrets.worker_password }}") || strings.Contains(content, b.env["BED_PASSWORD"]) {
		t.Errorf("the INI inventory on the Ansible host:\n%s", content)
	}
	vars, _ := filepath.Glob(filepath.Join(state, "runs", "*", "*", "bundle", "kubespray-vars.yml"))
	if len(vars) != 1 {
		t.Fatalf("the run record has %d kubespray-vars.yml, want 1", len(vars))
	}
	recorded, err := os.ReadFile(vars[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(recorded), `kube_pods_subnet: !unsafe "192.168.0.0/16"`) || strings.Contains(string(recorded), secret1) || strings.Contains(string(recorded), secret2) ||
		strings.Contains(string(recorded), b.env["BED_PASSWORD"]) {
		t.Errorf("the run record's kubespray-vars.yml:\n%s", recorded)
	}

	// terminate-end removes the inventory it wrote.
	args[4] = "terminate-end"
	if out, err := b.command(t, state, args...).CombinedOutput(); err != nil {
		t.Fatalf("terminate-end: %v\n%s", err, tail(string(out), 40))
	}
	if out, err := b.try("ansible", "test", "-e", invPath); err == nil {
		t.Errorf("terminate-end left %s on the Ansible host: %s", invPath, out)
	}
}

// TestHealStorageServerCSI: a Manila CSI PV registered along with the NFS
// ones (pv_registration_params without nfs_server_cp) and Bound to a claim
// does not block heal-start of the storage server, which unregisters the NFS
// PVs only; heal-end registers them again, and the CSI PV stays Bound all
// along. On the bed's real kube-apiserver (the claim binds without a CSI
// driver: binding is the control plane's).
func TestHealStorageServerCSI(t *testing.T) {
	b := needBed(t)
	csiPV, err := os.ReadFile("../../testdata/package/Files/kubernetes/manila-csi-pv.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const pv = "manila-share-pv"
	pkg := b.copyPackage(t)
	if err := os.WriteFile(filepath.Join(pkg, "Files", "kubernetes", pv+".yaml"), csiPV, 0o644); err != nil {
		t.Fatal(err)
	}
	req := b.requestDoc(t)
	k := k8sParams(req)
	regs := k["pv_registration_params"].([]any)
	nfs := len(regs)
	k["pv_registration_params"] = append(regs, map[string]any{"pv_manifest_file_path": "Files/kubernetes/" + pv + ".yaml"})
	reqFile := writeRequest(t, req)
	run := func(op string, extra ...string) (int, string) {
		args := append([]string{"-o", "json", "-v", "run", op, "--request", reqFile, "--package", pkg,
			"--stack", b.env["HEATSIBLE_STACK"], "--known-hosts", filepath.Join(b.dir, "known_hosts")}, extra...)
		code, _, errs, took := b.heatsible(t, args...)
		t.Logf("%s %s: exit %d in %s", op, strings.Join(extra, " "), code, took.Round(time.Millisecond))
		return code, errs
	}
	claim := fmt.Sprintf("csi-e2e-%d", time.Now().Unix())
	t.Cleanup(func() {
		// As root with admin.conf (kubectlArgv): the SSH user has no
		// kubeconfig in kubespray's layout, and a claim left behind fails
		// every later PV test on the bed ("3 PVs ..., want 2").
		for _, args := range [][]string{{"delete", "pvc", "-n", "default", claim, "--ignore-not-found", "--wait=true"}, {"delete", "pv", pv, "--ignore-not-found", "--wait=true"}} {
			if out, err := b.try("master-0", kubectlArgv(args...)...); err != nil {
				t.Errorf("cleanup: kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	})
	if code, errs := run("instantiate-end"); code != 0 {
		t.Fatalf("instantiate-end with a CSI PV: exit %d\n%s", code, tail(errs, 40))
	}
	waitPhase(t, b, pv, "Available")
	pvc := fmt.Sprintf(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":%q,"namespace":"default"},
"spec":{"accessModes":["ReadWriteMany"],"storageClassName":"","volumeName":%q,"resources":{"requests":{"storage":"1Gi"}}}}`, claim, pv)
	tmp := "/tmp/" + claim + ".json"
	b.exec(t, "master-0", "sh", "-c", fmt.Sprintf("cat > %s <<'EOF'\n%s\nEOF\nchmod 644 %s", tmp, pvc, tmp))
	b.kubectl(t, "apply", "-f", tmp)
	b.exec(t, "master-0", "rm", "-f", tmp)
	waitPhase(t, b, pv, "Bound")

	code, errs := run("heal-start", "--storage-server")
	if code != 0 {
		t.Fatalf("heal-start --storage-server with a Bound CSI PV: exit %d, want 0 (it is not the storage server's)\n%s", code, tail(errs, 40))
	}
	if got := nfsPVs(t, b); len(got) != 0 {
		t.Errorf("heal-start left the storage server's PVs %v", got)
	}
	if got := strings.TrimSpace(b.kubectl(t, "get", "pv", pv, "-o", "jsonpath={.status.phase} {.spec.claimRef.name}")); got != "Bound "+claim {
		t.Errorf("the CSI PV after heal-start: %q, want Bound to %s", got, claim)
	}
	if code, errs := run("heal-end", "--storage-server"); code != 0 {
		t.Fatalf("heal-end --storage-server: exit %d\n%s", code, tail(errs, 40))
	}
	if got := nfsPVs(t, b); len(got) != nfs {
		t.Errorf("after heal-end the storage server has the PVs %v, want %d", got, nfs)
	}
	if got := strings.TrimSpace(b.kubectl(t, "get", "pv", pv, "-o", "jsonpath={.status.phase} {.spec.claimRef.name}")); got != "Bound "+claim {
		t.Errorf("the CSI PV after heal-end: %q, want Bound to %s", got, claim)
	}
}

// nfsPVs are the names and phases of heatsible's NFS PVs.
func nfsPVs(t *testing.T, b *bed) []string {
	t.Helper()
	out := b.kubectl(t, "get", "pv", "-l", "app.kubernetes.io/managed-by=heatsible", "-o",
		`jsonpath={range .items[?(@.spec.nfs)]}{.metadata.name}={.status.phase} {end}`)
	return strings.Fields(out)
}
