package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The bed's real Tacker (testbed/tacker, docs/testbed.md "Tacker") drives
// heatsible through the shim (contrib/tacker) installed as its MgmtDriver:
// a VNF package uploaded, instantiated, healed and terminated through
// Tacker's own v1 API (the openstack CLI of the bed's Tacker venv), and the
// effects checked on the hosts and in Tacker's view.

// tackerBed is the bed's Tacker.
type tackerBed struct {
	b   *bed
	sh  string            // testbed/tacker/tacker.sh
	env map[string]string // testbed/run/tacker/env
}

func needTacker(t *testing.T, b *bed) *tackerBed {
	t.Helper()
	if os.Getenv("BED_TACKER") == "0" {
		t.Skip("BED_TACKER=0: the bed has no Tacker")
	}
	tk := &tackerBed{b: b, sh: filepath.Join(b.root, "testbed", "tacker", "tacker.sh"), env: map[string]string{}}
	data, err := os.ReadFile(filepath.Join(b.dir, "tacker", "env"))
	if err != nil {
		t.Fatalf("the bed has no Tacker (testbed/run/tacker/env: %v): bring it up with testbed/bin/bed up (BED_TACKER=1, the default)", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			tk.env[k] = v
		}
	}
	// up: a no-op when healthy; installs the repository's shim (and restarts
	// the conductor) when the venv has another one; heat.sh up restarts
	// heat-all when the stand-in plugin changed
	if out, err := exec.Command(filepath.Join(b.root, "testbed", "heat", "heat.sh"), "up").CombinedOutput(); err != nil {
		t.Fatalf("heat.sh up: %v\n%s", err, out)
	}
	if out, err := exec.Command(tk.sh, "up").CombinedOutput(); err != nil {
		t.Fatalf("the bed's Tacker is not up (tacker.sh up: %v):\n%s", err, out)
	}
	// The conductor runs heatsible from here (conductor.env's HEATSIBLE_BIN):
	// the binary under test.
	dst := filepath.Join(b.dir, "tacker", "bin", "heatsible")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(b.bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst+".tmp", bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dst+".tmp", dst); err != nil {
		t.Fatal(err)
	}
	return tk
}

// cli runs the openstack CLI of the bed's Tacker venv as the bed's admin.
func (tk *tackerBed) cli(args ...string) (string, error) {
	cmd := exec.Command(tk.sh, append([]string{"openstack"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (tk *tackerBed) mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, err := tk.cli(args...)
	if err != nil {
		t.Fatalf("openstack %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (tk *tackerBed) cliJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out := tk.mustCLI(t, append(args, "-f", "json")...)
	// the CLI may print warnings before the document
	if i := strings.IndexAny(out, "[{"); i > 0 {
		out = out[i:]
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("openstack %s: not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// opOcc is `openstack vnflcm op show -f json`.
type opOcc struct {
	ID        string          `json:"ID"`
	State     string          `json:"Operation State"`
	Operation string          `json:"Operation"`
	Error     json.RawMessage `json:"Error"`
}

func (o opOcc) errorDetail() string { return string(o.Error) }

// ops lists the VNF instance's operation occurrences' ids.
func (tk *tackerBed) ops(t *testing.T, vnf string) map[string]bool {
	t.Helper()
	var list []map[string]any
	tk.cliJSON(t, &list, "vnflcm", "op", "list")
	out := map[string]bool{}
	for _, o := range list {
		if fmt.Sprint(o["VNF Instance ID"]) == vnf {
			out[fmt.Sprint(o["ID"])] = true
		}
	}
	return out
}

// waitOp waits for the operation occurrence of vnf not in before to end
// (COMPLETED, FAILED_TEMP, FAILED or ROLLED_BACK).
func (tk *tackerBed) waitOp(t *testing.T, vnf string, before map[string]bool, timeout time.Duration) opOcc {
	t.Helper()
	deadline := time.Now().Add(timeout)
	id := ""
	for time.Now().Before(deadline) {
		if id == "" {
			for o := range tk.ops(t, vnf) {
				if !before[o] {
					id = o
				}
			}
		}
		if id != "" {
			var o opOcc
			tk.cliJSON(t, &o, "vnflcm", "op", "show", id)
			switch o.State {
			case "COMPLETED", "FAILED_TEMP", "FAILED", "ROLLED_BACK":
				return o
			}
		}
		time.Sleep(3 * time.Second)
	}
	t.Fatalf("no operation of VNF %s ended within %s (op %q); see testbed/run/tacker/logs/tacker-conductor.log", vnf, timeout, id)
	return opOcc{}
}

// tackerRequest is the PV guide's instantiate body (testdata/seeds/pv-usage-guide.json)
// made to land on the bed: the bed's users and password, the networks the
// bed's Heat pools map to its hosts, exports to the bed's network, no proxy
// (the bed's hosts reach only the apt proxy), nfs-ganesha (the bed has no
// nfsd), this package's UserData class, the bed's VIM.
func (tk *tackerBed) tackerRequest(t *testing.T, vimID string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tk.b.root, "testdata", "seeds", "pv-usage-guide.json"))
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(data, &req); err != nil {
		t.Fatal(err)
	}
	ap := req["additionalParams"].(map[string]any)
	k := ap["k8s_cluster_installation_param"].(map[string]any)
	delete(k, "proxy")
	for _, n := range []string{"master_node", "worker_node", "storage_server"} {
		m := k[n].(map[string]any)
		m["username"] = tk.b.env["BED_USER"]
		m["password"] = tk.b.env["BED_PASSWORD"]
	}
	st := k["storage_server"].(map[string]any)
	st["nfs_server_impl"] = "ganesha"
	for _, e := range st["nfs_server_setup_params"].([]any) {
		e.(map[string]any)["export_to"] = "10.231.0.0/24"
	}
	ap["lcm-operation-user-data"] = "./UserData/heatsible_user_data.py"
	ap["lcm-operation-user-data-class"] = "HeatsibleUserData"
	nets := map[string]string{"net0_master": "TACKER_NET_MASTER", "net0_worker": "TACKER_NET_WORKER", "net0_storage": "TACKER_NET_STORAGE"}
	for _, l := range req["extVirtualLinks"].([]any) {
		vl := l.(map[string]any)
		key, ok := nets[fmt.Sprint(vl["id"])]
		if !ok || tk.env[key] == "" {
			t.Fatalf("extVirtualLinks %v: no bed network for it (testbed/run/tacker/env %s)", vl["id"], key)
		}
		vl["resourceId"] = tk.env[key]
	}
	req["vimConnectionInfo"].([]any)[0].(map[string]any)["vimId"] = vimID
	return req
}

func writeJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// bedVIM is the id of the bed's OpenStack VIM (Tacker's default).
func (tk *tackerBed) bedVIM(t *testing.T) string {
	t.Helper()
	var vims []map[string]any
	tk.cliJSON(t, &vims, "vim", "list")
	for _, v := range vims {
		if v["Name"] == "bed-openstack" {
			return fmt.Sprint(v["ID"])
		}
	}
	t.Fatalf("no VIM bed-openstack in Tacker: %v", vims)
	return ""
}

// onboard uploads testbed/tacker/packages/NAME through Tacker's API and
// waits until it is ONBOARDED; the cleanup deletes it.
func (tk *tackerBed) onboard(t *testing.T, name string) (pkgID, vnfdID string) {
	t.Helper()
	zip := filepath.Join(t.TempDir(), name+".zip")
	if out, err := exec.Command(tk.sh, "package", name, zip).CombinedOutput(); err != nil {
		t.Fatalf("tacker.sh package %s: %v\n%s", name, err, out)
	}
	var pkg map[string]any
	tk.cliJSON(t, &pkg, "vnf", "package", "create")
	pkgID = fmt.Sprint(pkg["ID"])
	t.Cleanup(func() {
		tk.cli("vnf", "package", "update", "--operational-state", "DISABLED", pkgID)
		if out, err := tk.cli("vnf", "package", "delete", pkgID); err != nil {
			t.Logf("cleanup: deleting VNF package %s: %v\n%s", pkgID, err, out)
		}
	})
	tk.mustCLI(t, "vnf", "package", "upload", "--path", zip, pkgID)
	deadline := time.Now().Add(120 * time.Second)
	for {
		tk.cliJSON(t, &pkg, "vnf", "package", "show", pkgID)
		if pkg["Onboarding State"] == "ONBOARDED" {
			return pkgID, fmt.Sprint(pkg["VNFD ID"])
		}
		if time.Now().After(deadline) {
			t.Fatalf("VNF package %s not ONBOARDED in 120 s: %v", pkgID, pkg)
		}
		time.Sleep(2 * time.Second)
	}
}

// takeBedAddresses deletes the bed's own stack so that its addresses (the
// Heat stand-ins' pools are shared) go to the stack Tacker creates; the
// cleanup, registered first, terminates and deletes what the test made and
// brings the bed back to its default shape with `bed up` (the stack
// re-created, storage with a fresh volume, the PVs gone).
func (tk *tackerBed) takeBedAddresses(t *testing.T, vnf *string) {
	t.Helper()
	tk.takeBedAddressesFor(t, func() { tk.dropInstanceV1(t, *vnf) })
}

// dropInstanceV1 terminates and deletes a v1 VNF instance (nothing when
// vnf is ""); for the cleanups: no t.Fatal.
func (tk *tackerBed) dropInstanceV1(t *testing.T, vnf string) {
	if vnf == "" {
		return
	}
	tk.rollbackFailedTemp(t, vnf)
	if out, err := tk.cli("vnflcm", "terminate", "--termination-type", "FORCEFUL", vnf); err != nil {
		t.Logf("cleanup: terminate %s: %v\n%s", vnf, err, out)
	}
	for i := 0; i < 100; i++ {
		out, _ := tk.cli("vnflcm", "show", vnf, "-f", "value", "-c", "Instantiation State")
		if strings.TrimSpace(out) == "NOT_INSTANTIATED" {
			break
		}
		time.Sleep(3 * time.Second)
	}
	// NOT_INSTANTIATED comes before the task state is cleared (seen:
	// "in task_state TERMINATING. Cannot delete")
	for i := 0; ; i++ {
		out, err := tk.cli("vnflcm", "delete", vnf)
		if err == nil {
			break
		}
		if i == 20 || !strings.Contains(out, "task_state") {
			t.Errorf("cleanup: delete %s: %v\n%s", vnf, err, out)
			break
		}
		time.Sleep(3 * time.Second)
	}
}

// takeBedAddressesFor is takeBedAddresses with the instance's own cleanup
// (dropInstance, run first).
func (tk *tackerBed) takeBedAddressesFor(t *testing.T, dropInstance func()) {
	t.Helper()
	b := tk.b
	t.Cleanup(func() {
		dropInstance()
		for _, pv := range []string{"nfs-pv1", "nfs-pv2"} {
			b.try("master-0", kubectlArgv("delete", "pv", pv, "--ignore-not-found", "--wait=false")...)
		}
		b.try("master-0", kubectlArgv("delete", "pvc", "-n", "default", "tacker-e2e-claim", "--ignore-not-found", "--wait=false")...)
		cmd := exec.Command(filepath.Join(b.root, "testbed", "bin", "bed"), "up")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("cleanup: bed up (the bed's default shape): %v\n%s", err, tail(string(out), 30))
		}
	})
	cmd := exec.Command(filepath.Join(b.root, "testbed", "heat", "heat.sh"), "stack-delete", "bed")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("heat.sh stack-delete bed: %v\n%s", err, out)
	}
	// storage as the new VM Tacker's stack stands for: the bed's own volume
	// (which earlier tests leave mounted on /volume and exported) is not
	// mounted there; heatsible refuses, rightly, to mount the new volume over
	// another disk. `bed up` recreates storage afterwards (new volume ids).
	b.exec(t, "storage", "sh", "-c", `systemctl stop nfs-ganesha nfs-server 2>/dev/null
for m in $(findmnt -rn -o TARGET | grep '^/volume' | sort -r); do umount "$m"; done
sed -i '\|[[:space:]]/volume|d' /etc/fstab
true`)
}

// TestTackerLifecycle: the PV guide's package and body through the bed's
// Tacker, every step asserted on Tacker's view and on the hosts:
//
//   - instantiate: Tacker's Heat stack lands on the bed's hosts and the
//     conductor runs heatsible through the shim at instantiate_end: PVs
//     Available with the storage CP's address, the cluster registered as
//     Tacker's Kubernetes VIM and appended to the instance's
//     vimConnectionInfo;
//   - heal of the storage server with Tacker's defaults (its volume would be
//     recreated): FAILED_TEMP with the shim's refusal, nothing changed;
//   - the same with tacker_extension_heal_include_block_storage false and a
//     Bound claim: FAILED_TEMP with heatsible's message naming the claim;
//   - the claim deleted (its PV Released), heatsible_delete_released true:
//     COMPLETED, the PVs back with the storage address, the volume the same
//     and the data on it intact;
//   - terminate: the Kubernetes VIM removed.
func TestTackerLifecycle(t *testing.T) {
	b := needBed(t)
	tk := needTacker(t, b)
	vim := tk.bedVIM(t)
	_, vnfd := tk.onboard(t, "heatsible_pv")
	var vnf string
	tk.takeBedAddresses(t, &vnf)
	var inst map[string]any
	tk.cliJSON(t, &inst, "vnflcm", "create", vnfd)
	vnf = fmt.Sprint(inst["ID"])
	before := tk.ops(t, vnf)
	req := writeJSON(t, tk.tackerRequest(t, vim))

	// First with a 5 s timeout for heatsible (the conductor's environment):
	// the shim stops heatsible (SIGTERM) inside the real conductor, the
	// operation ends FAILED_TEMP saying so; then, the timeout gone, Tacker's
	// retry runs instantiate_end again and completes.
	tk.conductorEnv(t, "HEATSIBLE_TIMEOUT=5\n")
	start := time.Now()
	tk.mustCLI(t, "vnflcm", "instantiate", vnf, req)
	op := tk.waitOp(t, vnf, before, 15*time.Minute)
	t.Logf("instantiate, heatsible's timeout 5 s: %s after %s; error %s", op.State, time.Since(start).Round(time.Second), op.errorDetail())
	if op.State != "FAILED_TEMP" || !strings.Contains(op.errorDetail(), "timed out after 5s and was stopped (SIGTERM)") {
		t.Fatalf("instantiate with a 5 s timeout ended %s, want FAILED_TEMP with the shim's timeout: %s", op.State, op.errorDetail())
	}
	if log := tk.conductorLog(t); !strings.Contains(log, "not eventlet-patched") {
		t.Errorf("the conductor's log does not say how the shim's process runs (want 'not eventlet-patched' for Tacker 16)")
	}
	tk.conductorEnv(t, "")
	start = time.Now()
	tk.mustCLI(t, "vnflcm", "op", "retry", op.ID)
	op = tk.waitOpID(t, op.ID, 15*time.Minute)
	t.Logf("instantiate, retried: %s after %s; error %s", op.State, time.Since(start).Round(time.Second), op.errorDetail())
	if op.State != "COMPLETED" {
		t.Fatalf("instantiate ended %s, want COMPLETED: %s", op.State, op.errorDetail())
	}
	checkPVs(t, b, 2, "Available")
	var show map[string]any
	tk.cliJSON(t, &show, "vnflcm", "show", vnf)
	vci, _ := json.Marshal(show["VIM Connection Info"])
	t.Logf("vimConnectionInfo: %s", vci)
	var vims []map[string]any
	tk.cliJSON(t, &vims, "vim", "list")
	var k8s string
	for _, v := range vims {
		if v["Type"] == "kubernetes" {
			k8s = fmt.Sprint(v["ID"])
			t.Logf("Kubernetes VIM: %v", v)
		}
	}
	if k8s == "" {
		t.Errorf("no Kubernetes VIM in Tacker after instantiate: %v", vims)
	} else if !strings.Contains(string(vci), k8s) {
		t.Errorf("the instance's vimConnectionInfo does not name the Kubernetes VIM %s: %s", k8s, vci)
	}
	if t.Failed() {
		return
	}

	// Data on the volume, through the export, to find after the heals.
	nonce := fmt.Sprintf("tacker-e2e-%d", time.Now().UnixNano())
	b.exec(t, "storage", "sh", "-c", "printf %s "+nonce+" > /volume/nfs/pv1/keep.txt")
	storageVNFC, volID := tk.storageVNFC(t, vnf)
	t.Logf("storage server VNFC %s, volume %s", storageVNFC, volID)

	// 1. Tacker's defaults would recreate the volume: refused by the shim.
	op = tk.heal(t, vnf, storageVNFC, map[string]any{})
	t.Logf("heal of the storage server, Tacker's defaults: %s; error %s", op.State, op.errorDetail())
	if op.State != "FAILED_TEMP" || !strings.Contains(op.errorDetail(), "would make Tacker delete and recreate its volume") ||
		!strings.Contains(op.errorDetail(), "heal_vnfc_block_storage = false") {
		t.Errorf("heal with Tacker's defaults ended %s, want FAILED_TEMP with the shim's refusal: %s", op.State, op.errorDetail())
	}
	tk.failOp(t, op)
	checkPVs(t, b, 2, "Available")
	if _, v := tk.storageVNFC(t, vnf); v != volID {
		t.Errorf("the storage server's volume is %s after the refused heal, was %s", v, volID)
	}

	// 2. A Bound claim: heatsible refuses, naming it; Tacker shows it.
	claim := "tacker-e2e-claim"
	b.kubectlStdin(t, `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: `+claim+`, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: nfs-pv1
  resources: {requests: {storage: 1Gi}}
`, "apply", "-f", "-")
	waitPhase(t, b, "nfs-pv1", "Bound")
	keep := map[string]any{"tacker_extension_heal_include_block_storage": false}
	op = tk.heal(t, vnf, storageVNFC, keep)
	t.Logf("heal of the storage server with a Bound claim: %s; error %s", op.State, op.errorDetail())
	if op.State != "FAILED_TEMP" || !strings.Contains(op.errorDetail(), claim) {
		t.Errorf("heal with a Bound claim ended %s, want FAILED_TEMP naming %s: %s", op.State, claim, op.errorDetail())
	}
	if strings.Contains(op.errorDetail(), b.env["BED_PASSWORD"]) {
		t.Errorf("the operation's error detail holds the bed's password")
	}
	tk.failOp(t, op)
	waitPhase(t, b, "nfs-pv1", "Bound")

	// 3. The claim gone (nfs-pv1 Released), acknowledged through the request.
	b.kubectl(t, "delete", "pvc", "-n", "default", claim, "--wait=true")
	waitPhase(t, b, "nfs-pv1", "Released")
	ack := map[string]any{"tacker_extension_heal_include_block_storage": false, "heatsible_delete_released": true}
	op = tk.heal(t, vnf, storageVNFC, ack)
	t.Logf("heal of the storage server, volume kept, Released acknowledged: %s; error %s", op.State, op.errorDetail())
	if op.State != "COMPLETED" {
		t.Fatalf("heal ended %s, want COMPLETED: %s", op.State, op.errorDetail())
	}
	checkPVs(t, b, 2, "Available")
	if _, v := tk.storageVNFC(t, vnf); v != volID {
		t.Errorf("the storage server's volume is %s after the heal, was %s: Tacker recreated it", v, volID)
	}
	if got := b.exec(t, "storage", "cat", "/volume/nfs/pv1/keep.txt"); got != nonce {
		t.Errorf("after the heal /volume/nfs/pv1/keep.txt holds %q, want %q", got, nonce)
	}

	// 4. Terminate: the cluster's Kubernetes VIM goes.
	before = tk.ops(t, vnf)
	tk.mustCLI(t, "vnflcm", "terminate", vnf)
	op = tk.waitOp(t, vnf, before, 10*time.Minute)
	t.Logf("terminate: %s; error %s", op.State, op.errorDetail())
	if op.State != "COMPLETED" {
		t.Fatalf("terminate ended %s: %s", op.State, op.errorDetail())
	}
	tk.cliJSON(t, &vims, "vim", "list")
	for _, v := range vims {
		if v["Type"] == "kubernetes" {
			t.Errorf("a Kubernetes VIM is left after terminate: %v", v)
		}
	}
	tk.mustCLI(t, "vnflcm", "delete", vnf)
	vnf = ""
}

// rollbackFailedTemp rolls back (instantiate, scale-out) or fails (the
// others) every FAILED_TEMP operation of vnf, so that it can be terminated
// or deleted; for the cleanups: no t.Fatal.
func (tk *tackerBed) rollbackFailedTemp(t *testing.T, vnf string) {
	out, err := tk.cli("vnflcm", "op", "list", "-f", "json")
	if err != nil {
		t.Logf("cleanup: vnflcm op list: %v\n%s", err, out)
		return
	}
	var list []map[string]any
	if i := strings.IndexAny(out, "["); i >= 0 {
		json.Unmarshal([]byte(out[i:]), &list)
	}
	for _, o := range list {
		if fmt.Sprint(o["VNF Instance ID"]) != vnf || o["Operation State"] != "FAILED_TEMP" {
			continue
		}
		id := fmt.Sprint(o["ID"])
		verb := "fail"
		if o["Operation"] == "INSTANTIATE" || o["Operation"] == "SCALE" {
			verb = "rollback"
		}
		out, err := tk.cli("vnflcm", "op", verb, id)
		t.Logf("cleanup: vnflcm op %s %s (%v): %s", verb, id, err, strings.TrimSpace(out))
		for i := 0; i < 100 && verb == "rollback"; i++ {
			out, _ := tk.cli("vnflcm", "op", "show", id, "-f", "value", "-c", "Operation State")
			if st := strings.TrimSpace(out); st == "ROLLED_BACK" || st == "FAILED_TEMP" && i > 3 {
				t.Logf("cleanup: op %s %s", id, st)
				break
			}
			time.Sleep(3 * time.Second)
		}
	}
}

// conductorEnv writes testbed/run/tacker/conductor.env.local (KEY=value
// lines; "" removes it) and restarts tacker-conductor with it; the cleanup
// removes it and restarts the conductor again.
func (tk *tackerBed) conductorEnv(t *testing.T, lines string) {
	t.Helper()
	f := filepath.Join(tk.b.dir, "tacker", "conductor.env.local")
	restart := func() error {
		out, err := exec.Command(tk.sh, "restart-conductor").CombinedOutput()
		if err != nil {
			return fmt.Errorf("tacker.sh restart-conductor: %v\n%s", err, out)
		}
		return nil
	}
	if lines == "" {
		os.Remove(f)
	} else {
		t.Cleanup(func() {
			if _, err := os.Stat(f); err == nil {
				os.Remove(f)
				if err := restart(); err != nil {
					t.Error(err)
				}
			}
		})
		if err := os.WriteFile(f, []byte(lines), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := restart(); err != nil {
		t.Fatal(err)
	}
}

func (tk *tackerBed) conductorLog(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tk.b.dir, "tacker", "logs", "tacker-conductor.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// waitOpID waits for one operation occurrence to end.
func (tk *tackerBed) waitOpID(t *testing.T, id string, timeout time.Duration) opOcc {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var o opOcc
		tk.cliJSON(t, &o, "vnflcm", "op", "show", id)
		switch o.State {
		case "COMPLETED", "FAILED_TEMP", "FAILED", "ROLLED_BACK":
			return o
		}
		time.Sleep(3 * time.Second)
	}
	t.Fatalf("operation %s did not end within %s", id, timeout)
	return opOcc{}
}

// storageVNFC is the storage server's VNFC id and its volume's Cinder id,
// from Tacker's view of the instance.
func (tk *tackerBed) storageVNFC(t *testing.T, vnf string) (vnfc, volume string) {
	t.Helper()
	var show struct {
		Info struct {
			VNFCs []struct {
				ID       string   `json:"id"`
				VDU      string   `json:"vduId"`
				Storages []string `json:"storageResourceIds"`
			} `json:"vnfcResourceInfo"`
			Storages []struct {
				ID       string `json:"id"`
				Resource struct {
					ID string `json:"resourceId"`
				} `json:"storageResource"`
			} `json:"virtualStorageResourceInfo"`
		} `json:"Instantiated Vnf Info"`
	}
	tk.cliJSON(t, &show, "vnflcm", "show", vnf)
	for _, c := range show.Info.VNFCs {
		if c.VDU != "storage_server" {
			continue
		}
		for _, s := range show.Info.Storages {
			for _, id := range c.Storages {
				if s.ID == id {
					return c.ID, s.Resource.ID
				}
			}
		}
		return c.ID, ""
	}
	t.Fatalf("no storage_server VNFC in Tacker's view of %s: %+v", vnf, show.Info)
	return "", ""
}

// heal heals one VNFC through Tacker and waits for the operation to end.
func (tk *tackerBed) heal(t *testing.T, vnf, vnfc string, params map[string]any) opOcc {
	t.Helper()
	args := []string{"vnflcm", "heal", "--vnfc-instance", vnfc}
	if len(params) > 0 {
		// the CLI merges the file into the request body: {"additionalParams": ...}
		args = append(args, "--additional-param-file", writeJSON(t, map[string]any{"additionalParams": params}))
	}
	before := tk.ops(t, vnf)
	tk.mustCLI(t, append(args, "--", vnf)...)
	return tk.waitOp(t, vnf, before, 15*time.Minute)
}

// failOp ends a FAILED_TEMP operation as FAILED (Tacker v1 rolls back only
// instantiate and scale-out), so the next operation can start.
func (tk *tackerBed) failOp(t *testing.T, op opOcc) {
	t.Helper()
	if op.State != "FAILED_TEMP" {
		return
	}
	tk.mustCLI(t, "vnflcm", "op", "fail", op.ID)
}

// kubesprayRequest is the kubespray spec's body (testdata/seeds/kubespray-spec.json)
// made to land on the bed: the bed's Ansible host with the kubespray stand-in
// (/opt/kubespray), the bed's users and password, no proxy, the external LB's
// CP as this package names it (externalLB_CP1) with the package's
// Tacker-contract script, the bed's networks and VIM.
func (tk *tackerBed) kubesprayRequest(t *testing.T, vimID string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tk.b.root, "testdata", "seeds", "kubespray-spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(data, &req); err != nil {
		t.Fatal(err)
	}
	ap := req["additionalParams"].(map[string]any)
	k := ap["k8s_cluster_installation_param"].(map[string]any)
	delete(k, "proxy")
	user, pw := tk.b.env["BED_USER"], tk.b.env["BED_PASSWORD"]
	k["ansible"] = map[string]any{"ip_address": "10.231.0.10", "username": user, "password": pw,
		"kubespray_root_path":         tk.b.env["BED_KUBESPRAY_ROOT"],
		"transferring_inventory_path": tk.b.env["BED_KUBESPRAY_ROOT"] + "/inventory/tacker-e2e"}
	for _, n := range []string{"master_node", "worker_node"} {
		m := k[n].(map[string]any)
		m["username"], m["password"] = user, pw
	}
	k["external_lb_param"] = map[string]any{"ssh_cp_name": "externalLB_CP1", "ssh_username": user,
		"ssh_password": pw, "script_path": "Scripts/install_external_lb.sh"}
	ap["lcm-operation-user-data"] = "./UserData/heatsible_user_data.py"
	ap["lcm-operation-user-data-class"] = "HeatsibleUserData"
	nets := map[string]string{"net0_master": "TACKER_NET_MASTER", "net0_worker": "TACKER_NET_WORKER", "net0_externalLB": "TACKER_NET_LB"}
	for _, l := range req["extVirtualLinks"].([]any) {
		vl := l.(map[string]any)
		vl["resourceId"] = tk.env[nets[fmt.Sprint(vl["id"])]]
	}
	req["vimConnectionInfo"].([]any)[0].(map[string]any)["vimId"] = vimID
	return req
}

// TestTackerKubespray: the kubespray sample's shape (Ansible host, external
// load balancer with a Tacker-contract script) instantiated and terminated
// through the bed's Tacker; kubespray's cluster.yml (the bed's stand-in)
// runs from the Ansible host, the script configures lb.
func TestTackerKubespray(t *testing.T) {
	b := needBed(t)
	tk := needTacker(t, b)
	if b.env["BED_LB"] == "" {
		t.Skip("EXTERNAL_LB=0: the bed has no lb host")
	}
	// lb as it was, afterwards (the Tacker-contract script appends to haproxy.cfg)
	const save = "/root/heatsible-e2e-tacker-lb.tar"
	b.exec(t, "lb", "sh", "-c", `set -e
cd /
set --
for p in etc/haproxy var/lib/heatsible-lb usr/local/lib/heatsible; do [ -e "$p" ] && set -- "$@" "$p"; done
tar -cpf `+save+` "$@"`)
	t.Cleanup(func() {
		b.try("ansible", "rm", "-rf", b.env["BED_KUBESPRAY_ROOT"]+"/inventory/tacker-e2e")
		out, err := b.try("lb", "sh", "-c", `set -e
rm -rf /etc/haproxy /var/lib/heatsible-lb /usr/local/lib/heatsible
tar -C / -xpf `+save+`
rm -f `+save+`
systemctl restart haproxy`)
		if err != nil {
			t.Errorf("putting lb back: %v\n%s", err, out)
		}
	})
	vim := tk.bedVIM(t)
	_, vnfd := tk.onboard(t, "heatsible_kubespray")
	var vnf string
	tk.takeBedAddresses(t, &vnf)
	var inst map[string]any
	tk.cliJSON(t, &inst, "vnflcm", "create", vnfd)
	vnf = fmt.Sprint(inst["ID"])
	before := tk.ops(t, vnf)
	seq := lastRecordSeq(b.ksRecords(t, 0))
	start := time.Now()
	tk.mustCLI(t, "vnflcm", "instantiate", vnf, writeJSON(t, tk.kubesprayRequest(t, vim)))
	op := tk.waitOp(t, vnf, before, 15*time.Minute)
	t.Logf("instantiate: %s after %s; error %s", op.State, time.Since(start).Round(time.Second), op.errorDetail())
	if op.State != "COMPLETED" {
		t.Fatalf("instantiate ended %s, want COMPLETED: %s", op.State, op.errorDetail())
	}
	ran := false
	for _, r := range b.ksRecords(t, seq) {
		ran = ran || r.Playbook == "cluster.yml" && r.Cwd == b.env["BED_KUBESPRAY_ROOT"]
	}
	if !ran {
		t.Errorf("no record of the kubespray stand-in's cluster.yml run from %s on the Ansible host", b.env["BED_KUBESPRAY_ROOT"])
	}
	cfg := b.exec(t, "lb", "cat", "/etc/haproxy/haproxy.cfg")
	if !strings.Contains(cfg, "backend kubernetes-nodeport") || !strings.Contains(cfg, "10.231.0.20") {
		t.Errorf("lb's haproxy.cfg has no kubernetes-nodeport backend with worker-0:\n%s", cfg)
	}
	before = tk.ops(t, vnf)
	tk.mustCLI(t, "vnflcm", "terminate", vnf)
	op = tk.waitOp(t, vnf, before, 10*time.Minute)
	t.Logf("terminate: %s; error %s", op.State, op.errorDetail())
	if op.State != "COMPLETED" {
		t.Fatalf("terminate ended %s: %s", op.State, op.errorDetail())
	}
	// nothing of heatsible's left on the Ansible host: the inventory it wrote
	// for kubespray (docs/cli.md, terminate-end) and its staging directories
	inv := b.env["BED_KUBESPRAY_ROOT"] + "/inventory/tacker-e2e"
	if left := b.exec(t, "ansible", "sh", "-c", "ls -A "+inv+" 2>/dev/null; ls -A ~"+b.env["BED_USER"]+"/.heatsible/runs 2>/dev/null | grep -v '^$' || true"); strings.TrimSpace(left) != "" {
		t.Errorf("left on the Ansible host after terminate (%s, ~/.heatsible/runs): %s", inv, left)
	}
	tk.mustCLI(t, "vnflcm", "delete", vnf)
	vnf = ""
}
