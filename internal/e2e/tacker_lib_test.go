package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// What the Tacker tests (tacker_test.go, tacker_v2_test.go) share: the
// bed's Tacker, its CLI and REST API, the operations' polling, the requests
// made to land on the bed, the packages onboarded, the bed's addresses
// taken for Tacker's stacks and given back.

// tackerBed is the bed's Tacker.
type tackerBed struct {
	b   *bed
	sh  string            // testbed/tacker/tacker.sh
	env map[string]string // testbed/run/tacker/env
	api *tackerAPI        // its v1 API (the v2 tests make their own client)
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
	tk.api = tk.newAPI(t, "")
	return tk
}

// ---- the openstack CLI (what an operator types)

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

// ---- Tacker's REST API (v1: /vnflcm/v1, v2: /vnflcm/v2 with "Version: 2.0.0")

// tackerAPI is a client of the bed's Tacker with a Keystone token, as an
// operator's client calls it. The tests wait for operations through it:
// one `openstack` CLI call costs 2-3 s and 1.5 s of CPU on the bed's
// 2-core machine, a REST call a few milliseconds.
type tackerAPI struct {
	url     string
	version string // the Version header ("" for v1)
	c       *http.Client
	login   func() (string, error)
	token   string
}

func (tk *tackerBed) newAPI(t *testing.T, version string) *tackerAPI {
	t.Helper()
	c := &http.Client{Timeout: 60 * time.Second}
	a := &tackerAPI{url: strings.TrimRight(tk.env["TACKER_URL"], "/"), version: version, c: c}
	a.login = func() (string, error) {
		body := map[string]any{"auth": map[string]any{
			"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{"user": map[string]any{
				"name": tk.env["OS_USERNAME"], "password": tk.env["OS_PASSWORD"], "domain": map[string]any{"name": tk.env["OS_USER_DOMAIN_NAME"]}}}},
			"scope": map[string]any{"project": map[string]any{"name": tk.env["OS_PROJECT_NAME"], "domain": map[string]any{"name": tk.env["OS_PROJECT_DOMAIN_NAME"]}}}}}
		data, _ := json.Marshal(body)
		resp, err := c.Post(tk.env["OS_AUTH_URL"]+"/auth/tokens", "application/json", bytes.NewReader(data))
		if err != nil {
			return "", fmt.Errorf("Keystone token: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 || resp.Header.Get("X-Subject-Token") == "" {
			return "", fmt.Errorf("Keystone token: HTTP %d", resp.StatusCode)
		}
		return resp.Header.Get("X-Subject-Token"), nil
	}
	var err error
	if a.token, err = a.login(); err != nil {
		t.Fatal(err)
	}
	return a
}

// raw sends one request (once more with a new token if Tacker answers 401:
// Keystone's tokens expire after an hour); for the cleanups: no t.Fatal.
func (a *tackerAPI) raw(method, path string, body any) (int, []byte, http.Header, error) {
	code, out, h, err := a.send(method, path, body)
	if err == nil && code == 401 {
		if a.token, err = a.login(); err != nil {
			return 0, nil, nil, err
		}
		code, out, h, err = a.send(method, path, body)
	}
	return code, out, h, err
}

func (a *tackerAPI) send(method, path string, body any) (int, []byte, http.Header, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, nil, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("X-Auth-Token", a.token)
	if a.version != "" {
		req.Header.Set("Version", a.version)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, resp.Header, err
}

// do sends one request; want is the HTTP status expected (0: any).
func (a *tackerAPI) do(t *testing.T, method, path string, body any, want int) (int, []byte, http.Header) {
	t.Helper()
	code, out, h, err := a.raw(method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if want != 0 && code != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, code, want, out)
	}
	return code, out, h
}

// get GETs path into v (200 wanted).
func (a *tackerAPI) get(t *testing.T, path string, v any) {
	t.Helper()
	_, out, _ := a.do(t, "GET", path, nil, 200)
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, out)
	}
}

// apiOp is what the polling reads of a VnfLcmOpOcc (v1 and v2 alike).
type apiOp struct {
	ID        string `json:"id"`
	State     string `json:"operationState"`
	Operation string `json:"operation"`
	VNF       string `json:"vnfInstanceId"`
}

// opsOf lists the operation occurrences of VNF instance vnf (API is
// "/vnflcm/v1" or "/vnflcm/v2"); for the cleanups: no t.Fatal.
func (a *tackerAPI) opsOf(api, vnf string) ([]apiOp, error) {
	code, out, _, err := a.raw("GET", api+"/vnf_lcm_op_occs", nil)
	if err != nil {
		return nil, err
	}
	if code != 200 {
		return nil, fmt.Errorf("GET %s/vnf_lcm_op_occs: HTTP %d: %s", api, code, out)
	}
	var all, mine []apiOp
	if err := json.Unmarshal(out, &all); err != nil {
		return nil, err
	}
	for _, o := range all {
		if o.VNF == vnf {
			mine = append(mine, o)
		}
	}
	return mine, nil
}

// opState is an operation occurrence's state ("" when it cannot be read).
func (a *tackerAPI) opState(api, id string) string {
	_, out, _, err := a.raw("GET", api+"/vnf_lcm_op_occs/"+id, nil)
	if err != nil {
		return ""
	}
	var o apiOp
	json.Unmarshal(out, &o)
	return o.State
}

// opEnded: the states an operation occurrence stops in.
var opEnded = []string{"COMPLETED", "FAILED_TEMP", "FAILED", "ROLLED_BACK"}

// waitState polls state() every second until it is one of want (an
// operation's end when want is empty) and returns it. again: the operation
// was just retried or rolled back, so a FAILED_TEMP within the first 30 s
// is the state before Tacker took the request, not its end (an API that
// answered and changed nothing still shows as FAILED_TEMP after that).
func waitState(t *testing.T, what string, state func() string, timeout time.Duration, again bool, want ...string) string {
	t.Helper()
	if len(want) == 0 {
		want = opEnded
	}
	deadline := time.Now().Add(timeout)
	left := time.Now().Add(30 * time.Second)
	s := ""
	for time.Now().Before(deadline) {
		s = state()
		if again && s == "FAILED_TEMP" && time.Now().Before(left) {
			time.Sleep(time.Second)
			continue
		}
		again = false
		if slices.Contains(want, s) {
			return s
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("%s did not reach %v within %s (last %q); see testbed/run/tacker/logs/tacker-conductor.log", what, want, timeout, s)
	return ""
}

// ---- v1 operations: started with the CLI, waited for through the API, read with the CLI

// opOcc is `openstack vnflcm op show -f json`.
type opOcc struct {
	ID        string          `json:"ID"`
	State     string          `json:"Operation State"`
	Operation string          `json:"Operation"`
	Error     json.RawMessage `json:"Error"`
}

func (o opOcc) errorDetail() string { return string(o.Error) }

// ops lists the v1 VNF instance's operation occurrences' ids.
func (tk *tackerBed) ops(t *testing.T, vnf string) map[string]bool {
	t.Helper()
	list, err := tk.api.opsOf("/vnflcm/v1", vnf)
	if err != nil {
		t.Fatalf("the operations of VNF %s: %v", vnf, err)
	}
	out := map[string]bool{}
	for _, o := range list {
		out[o.ID] = true
	}
	return out
}

// opShow is `vnflcm op show` of one operation occurrence: what the
// assertions read, as the operator sees it.
func (tk *tackerBed) opShow(t *testing.T, id string) opOcc {
	t.Helper()
	var o opOcc
	tk.cliJSON(t, &o, "vnflcm", "op", "show", id)
	return o
}

// waitOp waits for the operation occurrence of vnf not in before to end
// (COMPLETED, FAILED_TEMP, FAILED or ROLLED_BACK).
func (tk *tackerBed) waitOp(t *testing.T, vnf string, before map[string]bool, timeout time.Duration) opOcc {
	t.Helper()
	deadline := time.Now().Add(timeout)
	id := ""
	for id == "" {
		for o := range tk.ops(t, vnf) {
			if !before[o] {
				id = o
			}
		}
		if id != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new operation of VNF %s within %s; see testbed/run/tacker/logs/tacker-conductor.log", vnf, timeout)
		}
		time.Sleep(time.Second)
	}
	return tk.waitOpState(t, id, time.Until(deadline), false)
}

// waitOpState waits for one v1 operation occurrence to reach one of states
// (its end when none are given); again: it was just retried or rolled back
// (see waitState).
func (tk *tackerBed) waitOpState(t *testing.T, id string, timeout time.Duration, again bool, states ...string) opOcc {
	t.Helper()
	waitState(t, "operation "+id, func() string { return tk.api.opState("/vnflcm/v1", id) }, timeout, again, states...)
	return tk.opShow(t, id)
}

// start runs one v1 lifecycle command of the CLI and waits for the
// operation it starts to end.
func (tk *tackerBed) start(t *testing.T, vnf string, timeout time.Duration, args ...string) opOcc {
	t.Helper()
	before := tk.ops(t, vnf)
	tk.mustCLI(t, args...)
	return tk.waitOp(t, vnf, before, timeout)
}

// timed runs one Tacker operation step and logs its wall time.
func timed(t *testing.T, what string, f func() opOcc) opOcc {
	t.Helper()
	start := time.Now()
	op := f()
	t.Logf("%s: %s after %s; error %s", what, op.State, time.Since(start).Round(time.Second), op.errorDetail())
	return op
}

// heal heals one VNFC through Tacker and waits for the operation to end.
func (tk *tackerBed) heal(t *testing.T, vnf, vnfc string, params map[string]any) opOcc {
	t.Helper()
	args := []string{"vnflcm", "heal", "--vnfc-instance", vnfc}
	if len(params) > 0 {
		// the CLI merges the file into the request body: {"additionalParams": ...}
		args = append(args, "--additional-param-file", writeJSON(t, map[string]any{"additionalParams": params}))
	}
	return tk.start(t, vnf, 15*time.Minute, append(args, "--", vnf)...)
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

// rollbackVerb is how a FAILED_TEMP operation is ended so that its VNF can
// be terminated or deleted: Tacker rolls back instantiate and scale, and
// fails the others.
func rollbackVerb(operation string) string {
	if operation == "INSTANTIATE" || operation == "SCALE" {
		return "rollback"
	}
	return "fail"
}

// endFailedTemp rolls back or fails every FAILED_TEMP operation of vnf
// through the API (api: "/vnflcm/v1" or "/vnflcm/v2") and waits for each;
// for the cleanups: no t.Fatal.
func endFailedTemp(t *testing.T, a *tackerAPI, api, vnf string) {
	list, err := a.opsOf(api, vnf)
	if err != nil {
		t.Logf("cleanup: the operations of %s: %v", vnf, err)
		return
	}
	for _, o := range list {
		if o.State != "FAILED_TEMP" {
			continue
		}
		verb := rollbackVerb(o.Operation)
		code, out, _, err := a.raw("POST", api+"/vnf_lcm_op_occs/"+o.ID+"/"+verb, nil)
		t.Logf("cleanup: op %s %s: HTTP %d %v %s", verb, o.ID, code, err, bytes.TrimSpace(out))
		for i := 0; i < 300; i++ {
			time.Sleep(time.Second)
			if st := a.opState(api, o.ID); st != "ROLLING_BACK" && st != "PROCESSING" && (st != "FAILED_TEMP" || i > 15) {
				t.Logf("cleanup: op %s %s", o.ID, st)
				break
			}
		}
	}
}

// dropInstanceV1 ends what is FAILED_TEMP, terminates and deletes a v1 VNF
// instance (nothing when vnf is ""); for the cleanups: no t.Fatal.
func (tk *tackerBed) dropInstanceV1(t *testing.T, vnf string) {
	if vnf == "" {
		return
	}
	endFailedTemp(t, tk.api, "/vnflcm/v1", vnf)
	if out, err := tk.cli("vnflcm", "terminate", "--termination-type", "FORCEFUL", vnf); err != nil {
		t.Logf("cleanup: terminate %s: %v\n%s", vnf, err, out)
	}
	for i := 0; i < 300; i++ {
		var inst struct {
			State string `json:"instantiationState"`
		}
		_, out, _, err := tk.api.raw("GET", "/vnflcm/v1/vnf_instances/"+vnf, nil)
		if err == nil && json.Unmarshal(out, &inst) == nil && inst.State == "NOT_INSTANTIATED" {
			break
		}
		time.Sleep(time.Second)
	}
	if out, err := tk.deleteInstanceV1(vnf); err != nil {
		t.Errorf("cleanup: delete %s: %v\n%s", vnf, err, out)
	}
}

// deleteInstanceV1 deletes a v1 instance with the CLI. NOT_INSTANTIATED
// comes before the task state is cleared (seen: "in task_state
// TERMINATING. Cannot delete"): that answer is retried for up to 60 s.
func (tk *tackerBed) deleteInstanceV1(vnf string) (string, error) {
	for i := 0; ; i++ {
		out, err := tk.cli("vnflcm", "delete", vnf)
		if err == nil || i == 20 || !strings.Contains(out, "task_state") {
			return out, err
		}
		time.Sleep(3 * time.Second)
	}
}

// createV1 creates a v1 VNF instance of vnfd; the cleanup, registered
// before, ends its failed operations, terminates and deletes it (unless
// the test did: *vnf is "" then).
func (tk *tackerBed) createV1(t *testing.T, vnfd string) *string {
	t.Helper()
	vnf := new(string)
	t.Cleanup(func() { tk.dropInstanceV1(t, *vnf) })
	var inst map[string]any
	tk.cliJSON(t, &inst, "vnflcm", "create", vnfd)
	*vnf = fmt.Sprint(inst["ID"])
	return vnf
}

// terminateV1 terminates vnf through the CLI (its operation COMPLETED, else
// the test stops) and checks that no Kubernetes VIM is left.
func (tk *tackerBed) terminateV1(t *testing.T, vnf string) {
	t.Helper()
	op := timed(t, "terminate", func() opOcc { return tk.start(t, vnf, 10*time.Minute, "vnflcm", "terminate", vnf) })
	if op.State != "COMPLETED" {
		t.Fatalf("terminate ended %s: %s", op.State, op.errorDetail())
	}
	if v := tk.k8sVIMs(t); len(v) != 0 {
		t.Errorf("Kubernetes VIMs left after terminate: %v", v)
	}
}

// deleteV1 deletes a terminated v1 instance (the cleanup then has nothing to do).
func (tk *tackerBed) deleteV1(t *testing.T, vnf *string) {
	t.Helper()
	if out, err := tk.deleteInstanceV1(*vnf); err != nil {
		t.Fatalf("openstack vnflcm delete %s: %v\n%s", *vnf, err, out)
	}
	*vnf = ""
}

// ---- Tacker's view of a v1 instance

// vnfcInfo is one entry of vnfcResourceInfo in `vnflcm show`.
type vnfcInfo struct {
	ID       string   `json:"id"`
	VDU      string   `json:"vduId"`
	Storages []string `json:"storageResourceIds"`
	Compute  struct {
		ResourceID string `json:"resourceId"`
	} `json:"computeResource"`
}

// tackerShow is what the tests read of `vnflcm show -f json`.
type tackerShow struct {
	State string          `json:"Instantiation State"`
	VIMs  json.RawMessage `json:"VIM Connection Info"`
	Info  struct {
		VNFCs []vnfcInfo `json:"vnfcResourceInfo"`
		Scale []struct {
			Aspect string `json:"aspectId"`
			Level  int    `json:"scaleLevel"`
		} `json:"scaleStatus"`
		Storages []struct {
			ID       string `json:"id"`
			Resource struct {
				ID string `json:"resourceId"`
			} `json:"storageResource"`
		} `json:"virtualStorageResourceInfo"`
	} `json:"Instantiated Vnf Info"`
}

func (tk *tackerBed) show(t *testing.T, vnf string) tackerShow {
	t.Helper()
	var s tackerShow
	tk.cliJSON(t, &s, "vnflcm", "show", vnf)
	return s
}

func (s tackerShow) vnfcs(vdu string) []vnfcInfo {
	var out []vnfcInfo
	for _, c := range s.Info.VNFCs {
		if c.VDU == vdu {
			out = append(out, c)
		}
	}
	return out
}

func (s tackerShow) scaleLevel(aspect string) int {
	for _, a := range s.Info.Scale {
		if a.Aspect == aspect {
			return a.Level
		}
	}
	return -1
}

// storageVNFC is the storage server's VNFC id and its volume's Cinder id,
// from Tacker's view of the instance.
func (tk *tackerBed) storageVNFC(t *testing.T, vnf string) (vnfc, volume string) {
	t.Helper()
	show := tk.show(t, vnf)
	for _, c := range show.vnfcs("storage_server") {
		for _, s := range show.Info.Storages {
			if slices.Contains(c.Storages, s.ID) {
				return c.ID, s.Resource.ID
			}
		}
		return c.ID, ""
	}
	t.Fatalf("no storage_server VNFC in Tacker's view of %s: %+v", vnf, show.Info)
	return "", ""
}

// k8sVIMs are the ids of Tacker's Kubernetes VIMs.
func (tk *tackerBed) k8sVIMs(t *testing.T) []string {
	t.Helper()
	var vims []map[string]any
	tk.cliJSON(t, &vims, "vim", "list")
	var out []string
	for _, v := range vims {
		if v["Type"] == "kubernetes" {
			out = append(out, fmt.Sprint(v["ID"]))
			t.Logf("Kubernetes VIM: %v", v)
		}
	}
	return out
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

// ---- requests made to land on the bed

// readRequest reads a request body of the repository (path relative to it).
func (tk *tackerBed) readRequest(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tk.b.root, path))
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]any
	if err := json.Unmarshal(data, &req); err != nil {
		t.Fatal(err)
	}
	return req
}

// landOnBed makes a request's k8s_cluster_installation_param and
// extVirtualLinks land on the bed: no proxy (the bed's hosts reach only the
// apt proxy), the bed's user and password on the nodes, with a storage
// server nfs-ganesha (the bed has no nfsd) exporting to the bed's network;
// the networks the bed's Heat pools map to its hosts (nets: link id ->
// testbed/run/tacker/env key). It returns k8s_cluster_installation_param.
func (tk *tackerBed) landOnBed(t *testing.T, req map[string]any, nets map[string]string) map[string]any {
	t.Helper()
	k := req["additionalParams"].(map[string]any)["k8s_cluster_installation_param"].(map[string]any)
	delete(k, "proxy")
	for _, n := range []string{"master_node", "worker_node", "storage_server"} {
		if m, ok := k[n].(map[string]any); ok {
			m["username"] = tk.b.env["BED_USER"]
			m["password"] = tk.b.env["BED_PASSWORD"]
		}
	}
	if st, ok := k["storage_server"].(map[string]any); ok {
		st["nfs_server_impl"] = "ganesha"
		for _, e := range st["nfs_server_setup_params"].([]any) {
			e.(map[string]any)["export_to"] = "10.231.0.0/24"
		}
	}
	for _, l := range req["extVirtualLinks"].([]any) {
		vl := l.(map[string]any)
		key, ok := nets[fmt.Sprint(vl["id"])]
		if !ok || tk.env[key] == "" {
			t.Fatalf("extVirtualLinks %v: no bed network for it (testbed/run/tacker/env %s)", vl["id"], key)
		}
		vl["resourceId"] = tk.env[key]
	}
	return k
}

// pvNets are the PV guide's networks on the bed.
var pvNets = map[string]string{"net0_master": "TACKER_NET_MASTER", "net0_worker": "TACKER_NET_WORKER", "net0_storage": "TACKER_NET_STORAGE"}

// tackerRequest is the PV guide's instantiate body (testdata/seeds/pv-usage-guide.json)
// made to land on the bed (landOnBed), with this package's UserData class
// and the bed's VIM, and without script_path: the guide's
// Scripts/install_k8s_cluster.sh is Tacker's kubeadm install, which the
// native shim does not run (heatsible refuses the key at instantiate-end:
// the bed's cluster is installed already, as the request then says).
func (tk *tackerBed) tackerRequest(t *testing.T, vimID string) map[string]any {
	t.Helper()
	req := tk.readRequest(t, "testdata/seeds/pv-usage-guide.json")
	delete(tk.landOnBed(t, req, pvNets), "script_path")
	ap := req["additionalParams"].(map[string]any)
	ap["lcm-operation-user-data"] = "./UserData/heatsible_user_data.py"
	ap["lcm-operation-user-data-class"] = "HeatsibleUserData"
	req["vimConnectionInfo"].([]any)[0].(map[string]any)["vimId"] = vimID
	return req
}

// kubesprayRequest is the kubespray spec's body (testdata/seeds/kubespray-spec.json)
// made to land on the bed: the bed's Ansible host with the kubespray stand-in
// (/opt/kubespray), the bed's users and password, no proxy, the external LB's
// CP as this package names it (externalLB_CP1) with the package's
// Tacker-contract script, the bed's networks and VIM.
func (tk *tackerBed) kubesprayRequest(t *testing.T, vimID string) map[string]any {
	t.Helper()
	req := tk.readRequest(t, "testdata/seeds/kubespray-spec.json")
	k := tk.landOnBed(t, req, map[string]string{"net0_master": "TACKER_NET_MASTER", "net0_worker": "TACKER_NET_WORKER", "net0_externalLB": "TACKER_NET_LB"})
	user, pw := tk.b.env["BED_USER"], tk.b.env["BED_PASSWORD"]
	k["ansible"] = map[string]any{"ip_address": "10.231.0.10", "username": user, "password": pw,
		"kubespray_root_path":         tk.b.env["BED_KUBESPRAY_ROOT"],
		"transferring_inventory_path": tk.b.env["BED_KUBESPRAY_ROOT"] + "/inventory/tacker-e2e"}
	k["external_lb_param"] = map[string]any{"ssh_cp_name": "externalLB_CP1", "ssh_username": user,
		"ssh_password": pw, "script_path": "Scripts/install_external_lb.sh"}
	ap := req["additionalParams"].(map[string]any)
	ap["lcm-operation-user-data"] = "./UserData/heatsible_user_data.py"
	ap["lcm-operation-user-data-class"] = "HeatsibleUserData"
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

// ---- packages

// onboard uploads testbed/tacker/packages/NAME through Tacker's API and
// waits until it is ONBOARDED; the cleanup deletes it.
func (tk *tackerBed) onboard(t *testing.T, name string) (vnfdID string) {
	t.Helper()
	zip := filepath.Join(t.TempDir(), name+".zip")
	if out, err := exec.Command(tk.sh, "package", name, zip).CombinedOutput(); err != nil {
		t.Fatalf("tacker.sh package %s: %v\n%s", name, err, out)
	}
	return tk.upload(t, zip)
}

// onboardV2 builds the v2 PV package (contrib/tacker/v2/make_csar.py with
// a fresh VNFD id) and onboards it through Tacker's package API; the
// cleanup deletes it.
func (tk *tackerBed) onboardV2(t *testing.T) (vnfdID string) {
	t.Helper()
	zip := filepath.Join(t.TempDir(), "heatsible_pv_v2.zip")
	id := strings.TrimSpace(string(must(os.ReadFile("/proc/sys/kernel/random/uuid"))))
	out, err := exec.Command(filepath.Join(tk.env["TACKER_VENV"], "bin", "python"), filepath.Join(tk.b.root, "contrib", "tacker", "v2", "make_csar.py"), zip, "--vnfd-id", id).CombinedOutput()
	if err != nil {
		t.Fatalf("make_csar.py: %v\n%s", err, out)
	}
	if got := tk.upload(t, zip); got != id {
		t.Fatalf("the package onboarded with VNFD id %s, built with %s", got, id)
	}
	return id
}

// upload creates a VNF package, uploads zip into it and waits until it is
// ONBOARDED; the cleanup, registered before the upload, deletes it.
func (tk *tackerBed) upload(t *testing.T, zip string) (vnfdID string) {
	t.Helper()
	start := time.Now()
	var pkg map[string]any
	tk.cliJSON(t, &pkg, "vnf", "package", "create")
	pkgID := fmt.Sprint(pkg["ID"])
	t.Cleanup(func() {
		tk.cli("vnf", "package", "update", "--operational-state", "DISABLED", pkgID)
		if out, err := tk.cli("vnf", "package", "delete", pkgID); err != nil {
			t.Logf("cleanup: deleting VNF package %s: %v\n%s", pkgID, err, out)
		}
	})
	tk.mustCLI(t, "vnf", "package", "upload", "--path", zip, pkgID)
	var state struct {
		Onboarding string `json:"onboardingState"`
		VNFD       string `json:"vnfdId"`
	}
	waitState(t, "VNF package "+pkgID+" ONBOARDED", func() string {
		tk.api.get(t, "/vnfpkgm/v1/vnf_packages/"+pkgID, &state)
		return state.Onboarding
	}, 120*time.Second, false, "ONBOARDED")
	tk.cliJSON(t, &pkg, "vnf", "package", "show", pkgID)
	if pkg["Onboarding State"] != "ONBOARDED" || fmt.Sprint(pkg["VNFD ID"]) != state.VNFD {
		t.Fatalf("VNF package %s: the CLI shows %v", pkgID, pkg)
	}
	t.Logf("VNF package %s (%s) onboarded in %s", pkgID, filepath.Base(zip), time.Since(start).Round(time.Second))
	return state.VNFD
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// ---- the bed's addresses for Tacker's stacks

// takeBedAddresses deletes the bed's own stack so that its addresses (the
// Heat stand-ins' pools are shared) go to the stacks Tacker creates; the
// cleanup, registered first, removes the PVs and the claim the tests make
// and brings the bed back to its default shape with `bed up` (the stack
// re-created, storage with a fresh volume). The instances' own cleanups
// (createV1, the v2 test's) run before it.
func (tk *tackerBed) takeBedAddresses(t *testing.T) {
	t.Helper()
	b := tk.b
	t.Cleanup(func() {
		for _, pv := range []string{"nfs-pv1", "nfs-pv2"} {
			b.try("master-0", kubectlArgv("delete", "pv", pv, "--ignore-not-found", "--wait=false")...)
		}
		b.try("master-0", kubectlArgv("delete", "pvc", "-n", "default", tackerClaim, "--ignore-not-found", "--wait=false")...)
		start := time.Now()
		cmd := exec.Command(filepath.Join(b.root, "testbed", "bin", "bed"), "up")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("cleanup: bed up (the bed's default shape): %v\n%s", err, tail(string(out), 30))
		}
		t.Logf("cleanup: bed up (the bed's stack and storage back) in %s", time.Since(start).Round(time.Second))
	})
	start := time.Now()
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
	t.Logf("the bed's stack deleted and storage emptied in %s", time.Since(start).Round(time.Second))
}

// ---- on the hosts

// tackerClaim is the claim the storage heals bind to nfs-pv1.
const tackerClaim = "tacker-e2e-claim"

// bindClaim binds tackerClaim to nfs-pv1 and waits until the PV is Bound;
// the cleanup, registered first, deletes the claim.
func (b *bed) bindClaim(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		b.try("master-0", kubectlArgv("delete", "pvc", "-n", "default", tackerClaim, "--ignore-not-found", "--wait=true")...)
	})
	b.kubectlStdin(t, `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: `+tackerClaim+`, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: nfs-pv1
  resources: {requests: {storage: 1Gi}}
`, "apply", "-f", "-")
	waitPhase(t, b, "nfs-pv1", "Bound")
}

// releaseClaim deletes tackerClaim and waits until nfs-pv1 is Released.
func (b *bed) releaseClaim(t *testing.T) {
	t.Helper()
	b.kubectl(t, "delete", "pvc", "-n", "default", tackerClaim, "--wait=true")
	waitPhase(t, b, "nfs-pv1", "Released")
}

// kubeadmWorkers puts the kubeadm stand-in on master-0, worker-0, worker-1
// and the spare worker and takes the bed's worker Nodes out for the test
// (both undone by the cleanups); the spare worker and its address.
func (b *bed) kubeadmWorkers(t *testing.T) (spare, spareIP string) {
	t.Helper()
	spare, spareIP = b.env["BED_SPARE_WORKER"], b.env["BED_SPARE_WORKER_IP"]
	if spare == "" {
		t.Fatal("the bed has no spare worker (SPARE_WORKERS=0): the scale-out needs one")
	}
	b.kubeadmStandIn(t, "master-0", "worker-0", "worker-1", spare)
	b.isolateWorkerNodes(t)
	for _, h := range []string{"worker-0", "worker-1", spare} {
		b.ensureNFSClient(t, h)
	}
	return spare, spareIP
}

// checkScaleIn checks that each of the workers' addresses is both in
// Heat's stack and a Node, or neither (the removed worker), and returns
// the addresses Heat no longer has.
func (b *bed) checkScaleIn(t *testing.T, left []topoNode, addrs ...string) (freed []string) {
	t.Helper()
	for _, ip := range addrs {
		_, inHeat := nodeByAddress(left, ip)
		_, inK8s := b.nodeWithIP(t, ip)
		if inHeat != inK8s {
			t.Errorf("after the scale-in, %s: in Heat %v, a Node %v (the removed worker must be neither)", ip, inHeat, inK8s)
		}
		if !inHeat {
			freed = append(freed, ip)
		}
	}
	return freed
}

// stackTopology is heatsible's view of a stack Tacker made (req: the request file).
func (tk *tackerBed) stackTopology(t *testing.T, req, stack string) []topoNode {
	t.Helper()
	code, out, errs, _ := tk.b.heatsible(t, "-o", "json", "topology", "--request", req, "--stack", stack)
	if code != 0 {
		t.Fatalf("heatsible topology --stack %s: exit %d\n%s", stack, code, errs)
	}
	var doc struct {
		Nodes []topoNode `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("topology JSON: %v\n%s", err, out)
	}
	return doc.Nodes
}

// noSecretIn fails when text holds any form of the bed's password.
func (tk *tackerBed) noSecretIn(t *testing.T, where, text string) {
	t.Helper()
	for _, l := range searchText(where, text, searchForms([]string{tk.b.env["BED_PASSWORD"]})) {
		t.Errorf("secret leak: %s", l)
	}
}

// glanceCalls are the Glance stand-in's recorded requests.
func (tk *tackerBed) glanceCalls(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tk.b.dir, "tacker", "glance", "calls.log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
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

// nothingLeftOf fails when the conductor's heatsible state directory
// (conductor.env's HEATSIBLE_STATE_DIR) holds anything of VNF vnf but run
// records: a cluster lock file, a topology terminate_start saved.
func (tk *tackerBed) nothingLeftOf(t *testing.T, vnf string) {
	t.Helper()
	data, err := os.ReadFile(tk.env["TACKER_CONDUCTOR_ENV"])
	if err != nil {
		t.Fatal(err)
	}
	dir := ""
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "HEATSIBLE_STATE_DIR="); ok {
			dir = v
		}
	}
	if dir == "" {
		t.Fatalf("%s sets no HEATSIBLE_STATE_DIR", tk.env["TACKER_CONDUCTOR_ENV"])
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "runs" {
			return filepath.SkipDir
		}
		if strings.Contains(d.Name(), vnf) {
			t.Errorf("left in heatsible's state directory after terminate: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pvState is each PersistentVolume heatsible manages: name, uid,
// resourceVersion, phase (any change shows).
func pvState(t *testing.T, b *bed) string {
	t.Helper()
	return b.kubectl(t, "get", "pv", "-l", "app.kubernetes.io/managed-by=heatsible", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.metadata.resourceVersion} {.status.phase}{"\n"}{end}`)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// checkWorkerHealed checks a heal of the worker VNFC at 10.231.0.20 (Heat's
// server before it: was; the stand-in's kubeadm records before it: seq):
// the Node worker-0 is back at that address, heatsible's kubeadm joined it
// once, and Heat has a new server in the same member. what names the
// operation in the errors (v1 and v2 share it).
func (tk *tackerBed) checkWorkerHealed(t *testing.T, reqFile, stack string, was topoNode, seq int, what string) {
	t.Helper()
	b := tk.b
	if n, ok := b.nodeWithIP(t, "10.231.0.20"); !ok || n.Name != "worker-0" {
		t.Errorf("after the %s: Node %+v, want worker-0 (the new VM's hostname, joined by heatsible) at 10.231.0.20", what, n)
	}
	if got := commandsOf(b.kubeadmRecords(t, "worker-0", seq)); got != "join(0)" {
		t.Errorf("kubeadm on worker-0 during the %s: %q, want one join", what, got)
	}
	now, _ := nodeByAddress(tk.stackTopology(t, reqFile, stack), "10.231.0.20")
	if now.ServerID == was.ServerID || now.MemberStackID != was.MemberStackID {
		t.Errorf("Heat's worker at 10.231.0.20 after the %s: server %s (was %s), member %s (was %s): want a new server in the same member", what, now.ServerID, was.ServerID, now.MemberStackID, was.MemberStackID)
	}
}
