package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Tacker's v2 API (/vnflcm/v2, SOL003 v3) on the bed, driving heatsible
// through the v2 script the package carries (contrib/tacker/heatsible_vnflcm_v2.py,
// docs/tacker-v2.md): the requests go to Tacker's REST API as an operator's
// client sends them (a Keystone token, "Version: 2.0.0"). TestTacker
// (tacker_test.go) runs the scenario as its subtest v2_lifecycle.

// tackerV2 is a client of the bed's Tacker v2 API.
type tackerV2 struct {
	*tackerAPI
	tk *tackerBed
}

func (tk *tackerBed) v2(t *testing.T) *tackerV2 {
	t.Helper()
	return &tackerV2{tackerAPI: tk.newAPI(t, "2.0.0"), tk: tk}
}

// v2Op is a VnfLcmOpOcc of the v2 API.
type v2Op struct {
	ID        string `json:"id"`
	State     string `json:"operationState"`
	Operation string `json:"operation"`
	Error     *struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
	} `json:"error"`
}

func (o v2Op) errorDetail() string {
	if o.Error == nil {
		return ""
	}
	return o.Error.Detail
}

func (v *tackerV2) op(t *testing.T, id string) v2Op {
	t.Helper()
	var o v2Op
	v.get(t, "/vnflcm/v2/vnf_lcm_op_occs/"+id, &o)
	return o
}

// start POSTs a lifecycle request (202) and returns its operation's id.
func (v *tackerV2) start(t *testing.T, path string, body any) string {
	t.Helper()
	_, _, h := v.do(t, "POST", path, body, 202)
	loc := h.Get("Location")
	if i := strings.LastIndex(loc, "/"); i >= 0 && loc != "" {
		return loc[i+1:]
	}
	t.Fatalf("POST %s: no Location header", path)
	return ""
}

// wait waits for op id to end (COMPLETED, FAILED_TEMP, FAILED, ROLLED_BACK).
func (v *tackerV2) wait(t *testing.T, id string, timeout time.Duration) v2Op {
	t.Helper()
	waitState(t, "v2 operation "+id, func() string { return v.op(t, id).State }, timeout, false)
	return v.op(t, id)
}

// run starts a lifecycle request, waits for it and logs its wall time.
func (v *tackerV2) run(t *testing.T, what, path string, body any) v2Op {
	t.Helper()
	start := time.Now()
	o := v.wait(t, v.start(t, path, body), 15*time.Minute)
	t.Logf("v2 %s: %s after %s; error %s", what, o.State, time.Since(start).Round(time.Second), o.errorDetail())
	return o
}

// v2Inst is what the tests read of a v2 VnfInstance.
type v2Inst struct {
	ID    string                     `json:"id"`
	State string                     `json:"instantiationState"`
	VIMs  map[string]json.RawMessage `json:"vimConnectionInfo"`
	Info  struct {
		VNFCs    []vnfcInfo `json:"vnfcResourceInfo"`
		VnfcInfo []struct {
			ID       string `json:"id"`
			VDU      string `json:"vduId"`
			Resource string `json:"vnfcResourceInfoId"`
		} `json:"vnfcInfo"`
		Storages []struct {
			ID       string `json:"id"`
			Resource struct {
				ID string `json:"resourceId"`
			} `json:"storageResource"`
		} `json:"virtualStorageResourceInfo"`
		Scale []struct {
			Aspect string `json:"aspectId"`
			Level  int    `json:"scaleLevel"`
		} `json:"scaleStatus"`
		Metadata map[string]any `json:"metadata"`
	} `json:"instantiatedVnfInfo"`
}

func (v *tackerV2) inst(t *testing.T, id string) v2Inst {
	t.Helper()
	var i v2Inst
	v.get(t, "/vnflcm/v2/vnf_instances/"+id, &i)
	return i
}

// vnfcOf is the vnfcInfo id of the VNFC whose server is serverID, and the
// VNFC's volumes' Cinder ids.
func (i v2Inst) vnfcOf(serverID string) (vnfcInfo string, volumes []string) {
	for _, r := range i.Info.VNFCs {
		if r.Compute.ResourceID != serverID {
			continue
		}
		for _, c := range i.Info.VnfcInfo {
			if c.Resource == r.ID {
				vnfcInfo = c.ID
			}
		}
		for _, s := range i.Info.Storages {
			for _, id := range r.Storages {
				if s.ID == id {
					volumes = append(volumes, s.Resource.ID)
				}
			}
		}
	}
	return vnfcInfo, volumes
}

func (i v2Inst) workers() int {
	n := 0
	for _, r := range i.Info.VNFCs {
		if r.VDU == "workerNode" {
			n++
		}
	}
	return n
}

// v2Request is the v2 package's instantiate body
// (contrib/tacker/v2/requests/instantiate.json: the seeds' parameters) made
// to land on the bed as tackerRequest does for v1; k8s is its
// k8s_cluster_installation_param, which every later request carries.
func (tk *tackerBed) v2Request(t *testing.T, vimID string) (req, k8s map[string]any) {
	t.Helper()
	req = tk.readRequest(t, "contrib/tacker/v2/requests/instantiate.json")
	k8s = tk.landOnBed(t, req, pvNets)
	for _, v := range req["vimConnectionInfo"].(map[string]any) {
		v.(map[string]any)["vimId"] = vimID
	}
	return req, k8s
}

// createV2 creates a v2 VNF instance of vnfd; the cleanup, registered
// before, ends its failed operations, terminates it with k8s's parameters
// and deletes it (unless the test did: *id is "" then).
func (v *tackerV2) createV2(t *testing.T, vnfd string, k8s map[string]any) *string {
	t.Helper()
	id := new(string)
	t.Cleanup(func() { v.dropInstance(t, *id, k8s) })
	var created v2Inst
	_, out, _ := v.do(t, "POST", "/vnflcm/v2/vnf_instances", map[string]any{"vnfdId": vnfd, "vnfInstanceName": "heatsible-e2e-v2"}, 201)
	if err := json.Unmarshal(out, &created); err != nil {
		t.Fatal(err)
	}
	*id = created.ID
	return id
}

// dropInstance fails or rolls back what is FAILED_TEMP, terminates and
// deletes a v2 instance; for the cleanups: no t.Fatal.
func (v *tackerV2) dropInstance(t *testing.T, id string, k8s map[string]any) {
	if id == "" {
		return
	}
	endFailedTemp(t, v.tackerAPI, "/vnflcm/v2", id)
	code, _, _, err := v.raw("POST", "/vnflcm/v2/vnf_instances/"+id+"/terminate",
		map[string]any{"terminationType": "FORCEFUL", "additionalParams": map[string]any{"k8s_cluster_installation_param": k8s}})
	t.Logf("cleanup: v2 terminate %s: HTTP %d %v", id, code, err)
	for i := 0; i < 300; i++ {
		var inst v2Inst
		_, out, _, err := v.raw("GET", "/vnflcm/v2/vnf_instances/"+id, nil)
		if err != nil || json.Unmarshal(out, &inst) != nil || inst.State != "INSTANTIATED" {
			break
		}
		time.Sleep(time.Second)
	}
	if code, out, err := v.deleteInstance(id); err != nil || code != 204 {
		t.Errorf("cleanup: deleting v2 instance %s: %v HTTP %d: %s", id, err, code, out)
	}
}

// deleteInstance deletes a v2 instance (204). Tacker 16 shows a terminate
// COMPLETED before its conductor lets go of the instance's lock, and
// answers a DELETE in between with 409 "Other LCM operation of vnfInstance
// ... is in progress" (seen on the bed, 2026-11-28, right after the
// operation read COMPLETED): that answer is retried for up to 60 s.
func (v *tackerV2) deleteInstance(id string) (int, []byte, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, out, _, err := v.raw("DELETE", "/vnflcm/v2/vnf_instances/"+id, nil)
		if err != nil || code != 409 || !strings.Contains(string(out), "in progress") || time.Now().After(deadline) {
			return code, out, err
		}
		time.Sleep(time.Second)
	}
}

// tackerV2Lifecycle: the v2 PV package and the seeds' parameters
// through /vnflcm/v2 on the bed's Tacker, the v2 script running heatsible:
//
//   - instantiate: PVs Available with the storage CP's address, the
//     Kubernetes VIM appended to vimConnectionInfo (after the OpenStack one,
//     its token not in Tacker's answer);
//   - heal of one worker VNFC: a new server in the same member stack,
//     drained and deleted at heal_start, joined again with kubeadm at
//     heal_end;
//   - heal of the storage server with additionalParams.all = true (Tacker
//     would re-create its volume): FAILED_TEMP with the script's refusal,
//     nothing changed; `fail`;
//   - heal of the storage server with a Bound claim: FAILED_TEMP naming the
//     claim, nothing deleted; `fail`; the claim gone and the Released PV
//     acknowledged (heatsible_delete_released): COMPLETED, the same volume
//     attached to the new server, the PVs back, the data intact;
//   - scale-out and scale-in of the workers (the grants ask the Glance
//     stand-in for the instance's images);
//   - terminate with the parameters: COMPLETED.
func tackerV2Lifecycle(t *testing.T, tk *tackerBed, vimID string) {
	b := tk.b
	spare, spareIP := b.kubeadmWorkers(t)
	v := tk.v2(t)
	vnfd := tk.onboardV2(t)
	req, k8s := tk.v2Request(t, vimID)
	glanceBefore := len(tk.glanceCalls(t))
	idp := v.createV2(t, vnfd, k8s)
	id := *idp
	params := map[string]any{"k8s_cluster_installation_param": k8s}
	reqFile := writeJSON(t, req)

	// 1. Instantiate.
	op := v.run(t, "instantiate", "/vnflcm/v2/vnf_instances/"+id+"/instantiate", req)
	if op.State != "COMPLETED" {
		t.Fatalf("v2 instantiate ended %s: %s", op.State, op.errorDetail())
	}
	checkPVs(t, b, 2, "Available")
	_, raw, _ := v.do(t, "GET", "/vnflcm/v2/vnf_instances/"+id, nil, 200)
	inst := v.inst(t, id)
	kv, ok := inst.VIMs["kubernetes_vim"]
	if !ok || !strings.Contains(string(kv), "ETSINFV.KUBERNETES.V_1") || !strings.Contains(string(kv), "https://10.231.0.12:6443") {
		t.Errorf("vimConnectionInfo after instantiate: %s; want kubernetes_vim with the bed's API server", raw)
	}
	if strings.Contains(string(raw), "bearer_token") || strings.Contains(string(raw), b.env["BED_PASSWORD"]) {
		t.Errorf("Tacker's answer for the instance holds a secret")
	}
	stack := fmt.Sprint(inst.Info.Metadata["stack_id"])
	t.Logf("v2 instance %s, stack %s, vimConnectionInfo keys %v", id, stack, keys(inst.VIMs))

	// 2. Heal of the worker at 10.231.0.20 (Tacker's scripts joined it as worker20).
	b.tackerJoin(t, "worker-0", "worker20")
	b.tackerJoin(t, "worker-1", "worker21")
	w0, ok := nodeByAddress(tk.stackTopology(t, reqFile, stack), "10.231.0.20")
	if !ok {
		t.Fatal("Tacker's v2 stack has no worker at 10.231.0.20")
	}
	vnfc, _ := inst.vnfcOf(w0.ServerID)
	seq := lastRecordSeq(b.kubeadmRecords(t, "worker-0", 0))
	op = v.run(t, "heal of worker VNFC "+vnfc, "/vnflcm/v2/vnf_instances/"+id+"/heal",
		map[string]any{"vnfcInstanceId": []string{vnfc}, "cause": "e2e: a worker", "additionalParams": params})
	if op.State != "COMPLETED" {
		t.Fatalf("v2 heal of a worker ended %s: %s", op.State, op.errorDetail())
	}
	tk.checkWorkerHealed(t, reqFile, stack, w0, seq, "v2 heal")

	// 3. The storage server: what v2's heal would do to its volume.
	nonce := fmt.Sprintf("tacker-v2-e2e-%d", time.Now().UnixNano())
	b.exec(t, "storage", "sh", "-c", "printf %s "+nonce+" > /volume/nfs/pv1/keep.txt")
	st, ok := nodeByAddress(tk.stackTopology(t, reqFile, stack), "10.231.0.11")
	if !ok {
		t.Fatal("Tacker's v2 stack has no storage server at 10.231.0.11")
	}
	inst = v.inst(t, id)
	storageVNFC, vols := inst.vnfcOf(st.ServerID)
	if storageVNFC == "" || len(vols) != 1 {
		t.Fatalf("the storage server's VNFC %q, volumes %v in Tacker's view", storageVNFC, vols)
	}
	t.Logf("storage server VNFC %s, volume %s", storageVNFC, vols[0])
	healStorage := func(what string, extra map[string]any) v2Op {
		ap := map[string]any{"k8s_cluster_installation_param": k8s}
		for k, x := range extra {
			ap[k] = x
		}
		return v.run(t, what, "/vnflcm/v2/vnf_instances/"+id+"/heal",
			map[string]any{"vnfcInstanceId": []string{storageVNFC}, "cause": "e2e: the storage server", "additionalParams": ap})
	}
	fail := func(o v2Op) {
		if o.State == "FAILED_TEMP" {
			_, out, _ := v.do(t, "POST", "/vnflcm/v2/vnf_lcm_op_occs/"+o.ID+"/fail", nil, 200)
			var f v2Op
			if err := json.Unmarshal(out, &f); err != nil || f.State != "FAILED" {
				t.Errorf("POST .../fail of %s: %v, operationState %q, want FAILED: %s", o.ID, err, f.State, out)
			}
		}
	}
	op = healStorage("heal of the storage server, all=true", map[string]any{"all": true})
	if op.State != "FAILED_TEMP" || !strings.Contains(op.errorDetail(), "delete and re-create its volume") {
		t.Errorf("v2 heal of the storage server with all=true ended %s, want FAILED_TEMP with the script's refusal: %s", op.State, op.errorDetail())
	}
	tk.noSecretIn(t, "the all=true heal's error detail", op.errorDetail())
	fail(op)
	if _, v2vols := v.inst(t, id).vnfcOf(st.ServerID); len(v2vols) != 1 || v2vols[0] != vols[0] {
		t.Errorf("after the refused all=true heal the storage server has volumes %v, was %v", v2vols, vols)
	}
	checkPVs(t, b, 2, "Available")

	b.bindClaim(t)
	op = healStorage("heal of the storage server with a Bound claim", nil)
	if op.State != "FAILED_TEMP" || !strings.Contains(op.errorDetail(), tackerClaim) {
		t.Errorf("v2 heal with a Bound claim ended %s, want FAILED_TEMP naming %s: %s", op.State, tackerClaim, op.errorDetail())
	}
	tk.noSecretIn(t, "the Bound-claim heal's error detail", op.errorDetail())
	fail(op)
	waitPhase(t, b, "nfs-pv1", "Bound")
	b.releaseClaim(t)
	op = healStorage("heal of the storage server, Released acknowledged", map[string]any{"heatsible_delete_released": true})
	if op.State != "COMPLETED" {
		t.Fatalf("v2 heal of the storage server ended %s: %s", op.State, op.errorDetail())
	}
	checkPVs(t, b, 2, "Available")
	stNow, _ := nodeByAddress(tk.stackTopology(t, reqFile, stack), "10.231.0.11")
	_, volsNow := v.inst(t, id).vnfcOf(stNow.ServerID)
	if stNow.ServerID == st.ServerID || len(volsNow) != 1 || volsNow[0] != vols[0] {
		t.Errorf("after the v2 heal: storage server %s (was %s), volumes %v (was %v); want a new server with the same volume", stNow.ServerID, st.ServerID, volsNow, vols)
	}
	if got := b.exec(t, "storage", "cat", "/volume/nfs/pv1/keep.txt"); got != nonce {
		t.Errorf("after the v2 heal /volume/nfs/pv1/keep.txt holds %q, want %q", got, nonce)
	}

	// 4. Scale-out and scale-in of the workers.
	scale := func(kind string) v2Op {
		return v.run(t, strings.ToLower(kind), "/vnflcm/v2/vnf_instances/"+id+"/scale",
			map[string]any{"type": kind, "aspectId": "worker_instance", "numberOfSteps": 1, "additionalParams": params})
	}
	seq = lastRecordSeq(b.kubeadmRecords(t, spare, 0))
	op = scale("SCALE_OUT")
	if op.State != "COMPLETED" {
		t.Fatalf("v2 scale-out ended %s: %s", op.State, op.errorDetail())
	}
	if n, ok := b.nodeWithIP(t, spareIP); !ok || n.Name != spare {
		t.Errorf("after the v2 scale-out: Node %+v, want %s at %s", n, spare, spareIP)
	}
	if got := commandsOf(b.kubeadmRecords(t, spare, seq)); got != "join(0)" {
		t.Errorf("kubeadm on %s during the v2 scale-out: %q, want one join", spare, got)
	}
	if n := v.inst(t, id).workers(); n != 3 {
		t.Errorf("workers after the v2 scale-out: %d, want 3", n)
	}
	op = scale("SCALE_IN")
	if op.State != "COMPLETED" {
		t.Fatalf("v2 scale-in ended %s: %s", op.State, op.errorDetail())
	}
	b.checkScaleIn(t, tk.stackTopology(t, reqFile, stack), "10.231.0.20", "10.231.0.21", spareIP)
	if n := v.inst(t, id).workers(); n != 2 {
		t.Errorf("workers after the v2 scale-in: %d, want 2", n)
	}
	asked := tk.glanceCalls(t)[glanceBefore:]
	t.Logf("the Glance stand-in was asked:\n%s", strings.Join(asked, "\n"))
	listed := 0
	for _, c := range asked {
		var call struct {
			Method, Path string
			Query        map[string]string
			Status       int
		}
		if err := json.Unmarshal([]byte(c), &call); err != nil {
			t.Fatalf("the Glance stand-in's calls.log: %v: %s", err, c)
		}
		if call.Method == "GET" && call.Path == "/v2/images" && call.Query["tag"] == id && call.Status == 200 {
			listed++
		}
	}
	// one listing at the grant of each heal and scale-out (local_nfvo's
	// _handle_vim_assets; a scale-in has none): the worker heal, the three
	// storage heals (the grant comes before heal_start, where the script
	// refuses two of them) and the scale-out (seen on the bed: 5)
	if listed != 5 {
		t.Errorf("Tacker's v2 grants listed the instance's images in the Glance stand-in %d time(s), want 5 (4 heals, 1 scale-out)", listed)
	}

	// 5. Terminate, with the parameters (heatsible's clean-up runs).
	op = v.run(t, "terminate", "/vnflcm/v2/vnf_instances/"+id+"/terminate",
		map[string]any{"terminationType": "FORCEFUL", "additionalParams": params})
	if op.State != "COMPLETED" {
		t.Fatalf("v2 terminate ended %s: %s", op.State, op.errorDetail())
	}
	if s := v.inst(t, id); s.State != "NOT_INSTANTIATED" || len(s.VIMs) != 0 {
		t.Errorf("after the v2 terminate: %s, vimConnectionInfo %v", s.State, keys(s.VIMs))
	}
	if code, out, err := v.deleteInstance(id); err != nil || code != 204 {
		t.Fatalf("DELETE /vnflcm/v2/vnf_instances/%s: %v HTTP %d, want 204: %s", id, err, code, out)
	}
	*idp = ""
}
