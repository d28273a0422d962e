package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The tests in this file run heatsible with the bed's request.json, which
// has no kubespray: heatsible then joins workers with kubeadm. The bed has
// no kubelet, so they use the kubeadm STAND-IN (testbed/kubeadm,
// docs/testbed.md), which they install on the hosts themselves and take
// out again: it answers what heatsible uses of kubeadm as kubeadm v1.33
// does, makes real bootstrap-token Secrets through the real API server,
// checks the token and the CA pin on join against them, and registers the
// Node object the kubelet would. Its records (/var/lib/kubeadm-stand-in on
// each host) say what it was asked. The Nodes of a cluster built by
// Tacker's kubeadm scripts (named worker<last octet>) are made with the
// stand-in the way those scripts join (token and hash on the command line,
// --node-name).

// kubeadmRecord is one record of the stand-in.
type kubeadmRecord struct {
	Seq         int      `json:"seq"`
	Host        string   `json:"host"`
	Command     string   `json:"command"`
	Argv        []string `json:"argv"`
	EUID        int      `json:"euid"`
	ExitCode    int      `json:"exit_code"`
	Error       string   `json:"error"`
	TokenInArgv bool     `json:"token_in_argv"`
	TokenID     string   `json:"token_id"`
	TTL         int      `json:"ttl_seconds"`
	Description string   `json:"description"`
	Kubeconfig  string   `json:"kubeconfig"`
	Deleted     []string `json:"deleted"`
	Config      *struct {
		Path       string         `json:"path"`
		Mode       string         `json:"mode"`
		OwnerUID   int            `json:"owner_uid"`
		APIVersion string         `json:"api_version"`
		Content    map[string]any `json:"content"`
	} `json:"config"`
	Join *struct {
		TokenID  string   `json:"token_id"`
		Endpoint string   `json:"endpoint"`
		Pins     []string `json:"pins"`
	} `json:"join"`
	Discovery *struct {
		JWSVerified bool     `json:"jws_verified"`
		CAPins      []string `json:"ca_pins"`
	} `json:"discovery"`
	TLSBootstrap *struct {
		Matched bool `json:"token_secret_matched"`
	} `json:"tls_bootstrap"`
	Node *struct {
		Name string `json:"name"`
		IP   string `json:"internal_ip"`
	} `json:"node"`
}

// kubeadmDir is testbed/kubeadm of the source tree this test is part of
// (the bed's own scripts may be another checkout's).
func kubeadmDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs("../../testbed/kubeadm")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// hostRoot is a running bed host's root file system, seen from the machine.
func (b *bed) hostRoot(h string) string { return filepath.Join(b.dir, "bed", "hosts", h, "root") }

// standIn runs testbed/kubeadm/standin.sh CMD on host's root file system.
func (b *bed) standIn(t *testing.T, cmd, host string, args ...string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(kubeadmDir(t), "standin.sh"), append([]string{cmd, b.hostRoot(host)}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("standin.sh %s %s: %v\n%s", cmd, host, err, out)
	}
}

// kubeadmStandIn installs the kubeadm and kubelet stand-ins on hosts, with
// the bed's API credential, and on master-0 makes the cluster-info
// ConfigMap (as kubeadm init does). Everything goes again at the end of the
// test: the stand-ins, their records and join state, cluster-info and the
// bootstrap tokens left.
func (b *bed) kubeadmStandIn(t *testing.T, hosts ...string) {
	t.Helper()
	cred := filepath.Join(t.TempDir(), "bed.conf")
	kc, err := exec.Command(filepath.Join(b.root, "testbed", "k8s", "k8s.sh"), "kubeconfig", "kubeadm-stand-in").Output()
	if err != nil {
		t.Fatalf("k8s.sh kubeconfig kubeadm-stand-in: %v", err)
	}
	if err := os.WriteFile(cred, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, h := range hosts {
			b.standIn(t, "purge", h)
		}
		if slices.Contains(hosts, "master-0") {
			b.try("master-0", kubectlArgv("delete", "configmap", "-n", "kube-public", "cluster-info", "--ignore-not-found")...)
		}
		b.try("master-0", kubectlArgv("delete", "secrets", "-n", "kube-system", "--field-selector", "type=bootstrap.kubernetes.io/token", "--ignore-not-found")...)
	})
	for _, h := range hosts {
		b.standIn(t, "on", h, cred)
	}
	if slices.Contains(hosts, "master-0") {
		b.exec(t, "master-0", "kubeadm", "stand-in", "init", "--kubeconfig", "/etc/kubernetes/admin.conf")
	}
}

// kubeadmRecords are the stand-in's records on host with a seq above after.
func (b *bed) kubeadmRecords(t *testing.T, host string, after int) []kubeadmRecord {
	t.Helper()
	return standInRecords[kubeadmRecord](t, b, host, "/var/lib/kubeadm-stand-in/records", after)
}

func (r kubeadmRecord) seq() int { return r.Seq }

// commandsOf lists the kubeadm commands of recs with their exit codes, but
// "version" (heatsible's read-only probe asks it on every host it looks at).
func commandsOf(recs []kubeadmRecord) string {
	var out []string
	for _, r := range recs {
		if r.Command != "version" {
			out = append(out, fmt.Sprintf("%s(%d)", r.Command, r.ExitCode))
		}
	}
	return strings.Join(out, " ")
}

// recsOf are the records of command.
func recsOf(recs []kubeadmRecord, command string) []kubeadmRecord {
	var out []kubeadmRecord
	for _, r := range recs {
		if r.Command == command {
			out = append(out, r)
		}
	}
	return out
}

// tackerJoin joins host the way Tacker's kubeadm scripts do (install.sh
// add_worker_node): a token and the CA hash from the first master, kubeadm
// join with both on the command line, the node named worker<last octet>
// (install.sh sets that hostname; here --node-name).
func (b *bed) tackerJoin(t *testing.T, host, name string) {
	t.Helper()
	out, err := b.try("master-0", "kubeadm", "token", "create", "--print-join-command", "--ttl", "10m", "--description", "e2e: as Tacker's scripts")
	f := strings.Fields(out)
	if err != nil || len(f) < 7 || f[0] != "kubeadm" || f[3] != "--token" || f[5] != "--discovery-token-ca-cert-hash" {
		t.Fatalf("kubeadm token create --print-join-command on master-0: %v (%d words)", err, len(f))
	}
	// The pin is the real one: Tacker's own command (k8s.py 1753-1759) on
	// the CA of master-0's admin kubeconfig gives the same hash.
	tacker, err := b.try("master-0", "sh", "-c", `python3 -c 'import base64, yaml; d = yaml.safe_load(open("/etc/kubernetes/admin.conf")); print(base64.b64decode(d["clusters"][0]["cluster"]["certificate-authority-data"]).decode())' |
openssl x509 -pubkey | openssl rsa -pubin -outform der 2>/dev/null | openssl dgst -sha256 -hex | sed 's/^.* //'`)
	if err != nil || "sha256:"+strings.TrimSpace(tacker) != f[6] {
		t.Fatalf("the join command's CA hash %s is not what Tacker's openssl pipeline computes from the CA: %q (%v)", f[6], tacker, err)
	}
	if out, err := b.try(host, "kubeadm", "join", f[2], "--token", f[4], "--discovery-token-ca-cert-hash", f[6], "--node-name", name); err != nil {
		t.Fatalf("kubeadm join on %s: %v\n%s", host, err, redactTokens(out))
	}
}

// redactTokens masks bootstrap tokens in test output.
func redactTokens(s string) string {
	var out strings.Builder
	for _, w := range strings.SplitAfter(s, " ") {
		if len(strings.TrimSpace(w)) == 23 && strings.Count(w, ".") == 1 {
			w = w[:7] + "****************" + w[23:]
		}
		out.WriteString(w)
	}
	return out.String()
}

// clusterNode is what the tests read of a Node object.
type clusterNode struct {
	Name          string
	InternalIP    string
	Unschedulable bool
	Labels        map[string]string
}

func (b *bed) clusterNodes(t *testing.T) []clusterNode {
	t.Helper()
	var list struct {
		Items []struct {
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				Unschedulable bool `json:"unschedulable"`
			} `json:"spec"`
			Status struct {
				Addresses []struct{ Type, Address string } `json:"addresses"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(b.kubectl(t, "get", "nodes", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	var out []clusterNode
	for _, it := range list.Items {
		n := clusterNode{Name: it.Metadata.Name, Unschedulable: it.Spec.Unschedulable, Labels: it.Metadata.Labels}
		for _, a := range it.Status.Addresses {
			if a.Type == "InternalIP" {
				n.InternalIP = a.Address
			}
		}
		out = append(out, n)
	}
	return out
}

// nodeWithIP is the Node whose InternalIP is ip.
func (b *bed) nodeWithIP(t *testing.T, ip string) (clusterNode, bool) {
	t.Helper()
	for _, n := range b.clusterNodes(t) {
		if n.InternalIP == ip {
			return n, true
		}
	}
	return clusterNode{}, false
}

// kubectlStdin runs kubectl on master-0 (as bed.kubectl) with stdin.
func (b *bed) kubectlStdin(t *testing.T, stdin string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(b.root, "testbed", "bin", "bed"), append([]string{"exec", "master-0", "--"}, kubectlArgv(args...)...)...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// isolateWorkerNodes takes every Node object but the control plane's out of
// the cluster for the test (the kubespray stand-in's, named after
// heatsible's inventory, would stand for the same hosts as the test's), and
// puts them back afterwards, removing what the test registered.
func (b *bed) isolateWorkerNodes(t *testing.T) {
	t.Helper()
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(b.kubectl(t, "get", "nodes", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	var saved []map[string]any
	for _, n := range list.Items {
		meta := n["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		if _, cp := labels["node-role.kubernetes.io/control-plane"]; cp {
			continue
		}
		for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields"} {
			delete(meta, k)
		}
		saved = append(saved, n)
		b.kubectl(t, "delete", "node", meta["name"].(string), "--wait=true")
	}
	t.Cleanup(func() {
		for _, n := range b.clusterNodes(t) {
			if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; !cp {
				b.try("master-0", kubectlArgv("delete", "node", n.Name, "--ignore-not-found")...)
			}
		}
		if len(saved) > 0 {
			doc, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": saved})
			b.kubectlStdin(t, string(doc), "create", "-f", "-")
		}
	})
}

// ensureNFSClient puts back the NFS client a test took off host (the bed's
// hosts have it).
func (b *bed) ensureNFSClient(t *testing.T, host string) {
	t.Cleanup(func() {
		if !b.nfsClient(host) {
			out, err := b.try(host, "sh", "-c", `out=$(DEBIAN_FRONTEND=noninteractive apt-get -y -q install nfs-common 2>&1) || { printf '%s\n' "$out" | tail -5; exit 1; }`)
			if err != nil || !b.nfsClient(host) {
				t.Errorf("putting the NFS client back on %s: %v\n%s", host, err, out)
			}
		}
	})
}

// issuedTokens are the tokens the stand-in made on master-0 (its own
// root-only list), for the leak search.
func (b *bed) issuedTokens(t *testing.T) []string {
	t.Helper()
	out, _ := b.try("master-0", "sh", "-c", "cat /var/lib/kubeadm-stand-in/issued 2>/dev/null; true")
	return strings.Fields(out)
}

// noTokenAnywhere searches what the runs printed, the run records, the
// Ansible host's files and the joined node's for every form of every
// token the stand-in issued.
func (b *bed) noTokenAnywhere(t *testing.T, state string, outputs map[string]string, nodes ...string) {
	t.Helper()
	tokens := b.issuedTokens(t)
	if len(tokens) == 0 {
		t.Fatal("the stand-in issued no token (nothing to search for)")
	}
	var secrets []string
	for _, tok := range tokens {
		secrets = append(secrets, tok, strings.SplitN(tok, ".", 2)[1]) // the whole token and its secret part
	}
	forms := searchForms(secrets)
	var leaks []string
	for where, text := range outputs {
		leaks = append(leaks, searchText(where, text, forms)...)
	}
	found, n := searchDir(t, state, forms)
	leaks = append(leaks, found...)
	remote, err := b.searchAnsibleHost(forms)
	if err != nil {
		t.Fatalf("searching the Ansible host: %v", err)
	}
	leaks = append(leaks, remote...)
	bedBin := filepath.Join(b.root, "testbed", "bin", "bed")
	for _, h := range nodes {
		cmd := grepCmd([]string{bedBin, "exec", h, "--"}, forms, "/home", "/root", "/tmp", "/var/tmp", "/etc/kubernetes")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("searching %s: %v", h, err)
		}
		for _, f := range strings.Fields(string(out)) {
			leaks = append(leaks, h+"'s "+f)
		}
	}
	t.Logf("searched %d forms of %d token(s): outputs, %d files of the run records, the Ansible host, %s", len(forms), len(tokens), n, strings.Join(nodes, ", "))
	for _, l := range leaks {
		t.Errorf("token leak: %s", l)
	}
}

// runKubeadm runs "heatsible -o json -v run OP" with request.json (no
// kubespray), keeping its records in state.
func (b *bed) runKubeadm(t *testing.T, state, op string, extra ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := b.command(t, state, b.opArgs(op, extra...)...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("run %s %s: exit %d in %s", op, strings.Join(extra, " "), code, time.Since(start).Round(time.Millisecond))
	return code, o.String(), e.String()
}

// ranTask reports whether the newest run record of op in state has a
// result of a task whose name ends with task.
func ranTask(t *testing.T, state, op, task string) bool {
	t.Helper()
	return slices.ContainsFunc(taskStatuses(t, state, op, task), func(s string) bool { return s != "skipped" })
}

// TestKubeadmStandInWorkerHeal: a cluster built by Tacker's kubeadm scripts
// (Nodes worker20, worker21), a request without kubespray. heal-start of
// worker-0 with its sshd down (a dead VM) checks that the node can be
// joined again (the other worker stands for the image), then drains and
// deletes the Node it finds by InternalIP under the Tacker-style name (main
// reported it "not in the cluster" and succeeded without doing either); the
// VM is rebuilt from its image (kubeadm and kubelet, no join state, no NFS
// client); heal-end --check says what it would join and joins nothing;
// heal-end makes a join command on master-0, joins the node with
// kubeadm join --config (the token never on a command line), deletes the
// token, and installs the NFS client: the Node is back, under the VM's
// hostname. A second heal-end changes nothing. No token is anywhere in
// heatsible's output, its records, the Ansible host or the node.
func TestKubeadmStandInWorkerHeal(t *testing.T) {
	b := needBed(t)
	b.kubeadmStandIn(t, "master-0", "worker-0", "worker-1")
	b.isolateWorkerNodes(t)
	b.ensureNFSClient(t, "worker-0")
	b.tackerJoin(t, "worker-0", "worker20")
	b.tackerJoin(t, "worker-1", "worker21")
	if n, ok := b.nodeWithIP(t, "10.231.0.20"); !ok || n.Name != "worker20" {
		t.Fatalf("the Tacker-style join registered %+v, want Node worker20 with InternalIP 10.231.0.20", n)
	}
	victim, ok := nodeByAddress(b.topology(t), "10.231.0.20")
	if !ok {
		t.Fatal("Heat has no worker at 10.231.0.20")
	}
	t.Logf("healing %s (server %s), Node worker20", victim.Name, victim.ServerID)
	state := t.TempDir()
	outputs := map[string]string{}
	mseq := lastRecordSeq(b.kubeadmRecords(t, "master-0", 0))
	wseq := lastRecordSeq(b.kubeadmRecords(t, "worker-0", 0))

	// heal-start of a dead VM (its sshd stopped, the usual reason to heal):
	// the other worker, booted from the same image, shows that its
	// replacement can join; then drained, deleted; worker21 untouched.
	t.Cleanup(func() { b.try("worker-0", "systemctl", "start", "ssh.service") })
	b.exec(t, "worker-0", "systemctl", "stop", "ssh.socket", "ssh.service")
	b.try("ansible", "pkill", "-f", `\[mux\]`) // no SSH master connection left to reach it through
	code, out, errs := b.runKubeadm(t, state, "heal-start", "--node", victim.Name)
	outputs["heal-start stdout"], outputs["heal-start stderr"] = out, errs
	if code != 0 {
		t.Fatalf("heal-start with worker-0 down: exit %d\n%s", code, tail(errs, 40))
	}
	if !ranTask(t, state, "heal-start", "Look for kubeadm and a kubelet on the node and the other workers (read-only; they may be down)") {
		t.Errorf("heal-start did not look at worker-0 before removing it")
	}
	if peer, _ := nodeByAddress(b.topology(t), "10.231.0.21"); !strings.Contains(errs, victim.Name+" does not answer; the other workers (same image as its replacement) have kubeadm and a kubelet: "+peer.Name) {
		t.Errorf("heal-start does not say that worker-0 is down and %s stands for its image:\n%s", peer.Name, tail(errs, 40))
	}
	b.exec(t, "worker-0", "systemctl", "start", "ssh.service")
	if !drained(t, state, "heal-start") {
		t.Errorf("heal-start did not drain worker20 (no changed drain task in its run.log)")
	}
	if _, ok := b.nodeWithIP(t, "10.231.0.20"); ok {
		t.Errorf("a Node with InternalIP 10.231.0.20 is still there after heal-start")
	}
	if n, ok := b.nodeWithIP(t, "10.231.0.21"); !ok || n.Name != "worker21" || n.Unschedulable {
		t.Errorf("worker21 after heal-start: %+v, want it there and schedulable", n)
	}

	// Tacker rebuilds the VM from its image: kubeadm and a kubelet, nothing
	// joined, no NFS client.
	b.standIn(t, "reset", "worker-0")
	b.removeNFSClient(t, "worker-0")

	// A dry run first: it says what it would join and joins nothing.
	code, out, errs = b.runKubeadm(t, state, "heal-end", "--vnfc-resource-id", victim.ServerID, "--check")
	outputs["heal-end --check stdout"], outputs["heal-end --check stderr"] = out, errs
	if code != 0 || !strings.Contains(errs, "to join: "+victim.Name+" (join command from ") || !strings.Contains(errs, "(check mode: nothing joined)") {
		t.Errorf("heal-end --check: exit %d, want 0 saying what it would join\n%s", code, tail(errs, 30))
	}
	if got := commandsOf(b.kubeadmRecords(t, "master-0", mseq)) + commandsOf(b.kubeadmRecords(t, "worker-0", wseq)); got != "" {
		t.Errorf("heal-end --check ran kubeadm: %s", got)
	}
	if _, ok := b.nodeWithIP(t, "10.231.0.20"); ok {
		t.Errorf("heal-end --check registered a Node")
	}

	code, out, errs = b.runKubeadm(t, state, "heal-end", "--vnfc-resource-id", victim.ServerID)
	outputs["heal-end stdout"], outputs["heal-end stderr"] = out, errs
	if code != 0 {
		t.Fatalf("heal-end: exit %d\n%s", code, tail(errs, 60))
	}
	n, ok := b.nodeWithIP(t, "10.231.0.20")
	if !ok || n.Name != "worker-0" || n.Labels["heatsible.test/stand-in"] != "kubeadm" {
		t.Errorf("after heal-end: Node %+v, want worker-0 (the VM's hostname) with InternalIP 10.231.0.20, joined by the kubeadm stand-in", n)
	}
	if !b.nfsClient("worker-0") {
		t.Errorf("the NFS client was not installed on worker-0 by heal-end")
	}
	// What kubeadm was asked: on master-0 a token with a short TTL, deleted
	// after the join; on worker-0 one join, from a 0600 root-owned
	// JoinConfiguration, the token not on the command line.
	mrecs := b.kubeadmRecords(t, "master-0", mseq)
	if got := commandsOf(mrecs); got != "token create(0) token delete(0)" {
		t.Fatalf("kubeadm on master-0 during the heal: %s, want token create, then token delete", got)
	}
	created, deleted := recsOf(mrecs, "token create")[0], recsOf(mrecs, "token delete")[0]
	if v := recsOf(mrecs, "version"); len(v) != 3 || !slices.Equal(v[0].Argv, []string{"version", "-o", "short"}) {
		t.Errorf("kubeadm version on master-0: %d calls (%v), want one by each run's probe (heal-start, heal-end --check, heal-end): version -o short", len(v), v)
	}
	// With the admin kubeconfig heatsible's kubeconfig role picks: the SSH
	// user's (kubeadm scripts' layout) as that user, else admin.conf as root.
	kubeconfig, uid := "/etc/kubernetes/admin.conf", 0
	if b.env["BED_KUBECONFIG"] == "kubeadm" {
		kubeconfig, uid = "/home/"+b.env["BED_USER"]+"/.kube/config", -1
	}
	if created.TTL != 1800 || !strings.HasPrefix(created.Description, "heatsible: join "+victim.Name) || created.Kubeconfig != kubeconfig ||
		(uid == 0) != (created.EUID == 0) {
		t.Errorf("token create: ttl %d s, description %q, kubeconfig %q as uid %d; want 1800 s, %q, %s (layout %s)",
			created.TTL, created.Description, created.Kubeconfig, created.EUID, "heatsible: join "+victim.Name, kubeconfig, b.env["BED_KUBECONFIG"])
	}
	if !slices.Equal(deleted.Deleted, []string{created.TokenID}) {
		t.Errorf("token delete removed %v, want the token made for the join (%s)", deleted.Deleted, created.TokenID)
	}
	if s := b.kubectl(t, "get", "secrets", "-n", "kube-system", "-o", "name"); strings.Contains(s, "bootstrap-token-"+created.TokenID) {
		t.Errorf("the join token's Secret is still there")
	}
	wrecs := b.kubeadmRecords(t, "worker-0", wseq)
	if got := commandsOf(wrecs); got != "join(0)" {
		t.Fatalf("kubeadm on worker-0 during heal-end: %s, want one join", got)
	}
	j := recsOf(wrecs, "join")[0]
	if j.TokenInArgv || !slices.Equal(j.Argv[:2], []string{"join", "--config"}) || len(j.Argv) != 3 {
		t.Errorf("kubeadm join argv %q (token on the command line: %v), want join --config FILE only", j.Argv, j.TokenInArgv)
	}
	if j.EUID != 0 || j.Config == nil || j.Config.Mode != "0600" || j.Config.OwnerUID != 0 || j.Config.APIVersion != "kubeadm.k8s.io/v1beta4" {
		t.Errorf("kubeadm join ran as uid %d with config %+v, want root and a 0600 root-owned kubeadm.k8s.io/v1beta4 JoinConfiguration", j.EUID, j.Config)
	}
	// The endpoint: the server of master-0's admin kubeconfig, as kubeadm
	// token create --print-join-command takes it.
	server := strings.TrimSpace(b.exec(t, "master-0", "sh", "-c", "sed -n 's/^ *server: https:\\/\\///p' /etc/kubernetes/admin.conf | head -n 1"))
	if j.Join == nil || j.Join.TokenID != created.TokenID || j.Join.Endpoint != server || server == "" || j.Discovery == nil || !j.Discovery.JWSVerified ||
		!slices.Equal(j.Join.Pins, j.Discovery.CAPins) || j.TLSBootstrap == nil || !j.TLSBootstrap.Matched {
		t.Errorf("kubeadm join: %+v %+v %+v, want the token just made, the API server %s, the CA's pin, all verified", j.Join, j.Discovery, j.TLSBootstrap, server)
	}
	if left, _ := b.try("worker-0", "sh", "-c", "ls -d /tmp/*.heatsible-join 2>/dev/null; true"); strings.TrimSpace(left) != "" {
		t.Errorf("the JoinConfiguration's directory is still on worker-0: %s", left)
	}

	// Again: joined, nothing to do, no token made.
	code, out, errs = b.runKubeadm(t, state, "heal-end", "--vnfc-resource-id", victim.ServerID)
	outputs["second heal-end stdout"], outputs["second heal-end stderr"] = out, errs
	if code != 0 {
		t.Fatalf("second heal-end: exit %d\n%s", code, tail(errs, 40))
	}
	if r := parseRun(t, out); r.Changed != 0 {
		t.Errorf("second heal-end changed %d things, want 0", r.Changed)
	}
	if got := commandsOf(b.kubeadmRecords(t, "master-0", lastRecordSeq(mrecs))); got != "" {
		t.Errorf("second heal-end ran kubeadm on master-0: %s", got)
	}
	b.noTokenAnywhere(t, state, outputs, "worker-0", "master-0")
}

// TestKubeadmStandInScaleOutAndIn: without kubespray, a worker Heat adds
// (the spare host) joins with kubeadm at scale-end (Node under its
// hostname, NFS client), and scale-start drains and deletes it: its Node is
// found by InternalIP (heatsible names the member after Heat's), then Heat
// removes it.
func TestKubeadmStandInScaleOutAndIn(t *testing.T) {
	b := needBed(t)
	spare, spareIP := b.env["BED_SPARE_WORKER"], b.env["BED_SPARE_WORKER_IP"]
	if spare == "" {
		t.Fatal("the bed has no spare worker (SPARE_WORKERS=0)")
	}
	b.kubeadmStandIn(t, "master-0", spare)
	b.isolateWorkerNodes(t)
	b.ensureNFSClient(t, spare)
	b.removeNFSClient(t, spare)
	workers := workersOf(b.topology(t))
	n := b.scaleOutSpare(t, len(workers))
	state := t.TempDir()
	seq := lastRecordSeq(b.kubeadmRecords(t, spare, 0))
	code, out, errs := b.runKubeadm(t, state, "scale-end", "--nodes", n.MemberStackID)
	if code != 0 {
		t.Fatalf("scale-end: exit %d\n%s", code, tail(errs, 60))
	}
	if node, ok := b.nodeWithIP(t, spareIP); !ok || node.Name != spare {
		t.Errorf("after scale-end: Node %+v, want %s with InternalIP %s", node, spare, spareIP)
	}
	if got := commandsOf(b.kubeadmRecords(t, spare, seq)); got != "join(0)" {
		t.Errorf("kubeadm on %s: %s, want one join", spare, got)
	}
	if !b.nfsClient(spare) {
		t.Errorf("no NFS client on %s after scale-end", spare)
	}
	b.noTokenAnywhere(t, state, map[string]string{"scale-end stdout": out, "scale-end stderr": errs}, spare)

	code, _, errs = b.runKubeadm(t, state, "scale-start", "--nodes", n.Member)
	if code != 0 {
		t.Fatalf("scale-start: exit %d\n%s", code, tail(errs, 40))
	}
	if !drained(t, state, "scale-start") {
		t.Errorf("scale-start did not drain %s's Node", n.Name)
	}
	if ranTask(t, state, "scale-start", "Look for kubeadm and a kubelet (read-only)") {
		t.Errorf("scale-start looked for kubeadm: nothing joins after a scale-in")
	}
	if node, ok := b.nodeWithIP(t, spareIP); ok {
		t.Errorf("Node %s (InternalIP %s) is still there after scale-start", node.Name, spareIP)
	}
	b.stackScale(t, len(workers), n.Member)
}

// TestKubeadmStandInRefusals: without kubespray, heatsible refuses (exit 6)
// before anything changes what it could not bring back or join:
//   - heal-start of a worker whose VM has no kubeadm: its Node (a
//     Tacker-style worker21) is neither cordoned nor deleted, nothing runs
//     after the check (main drained and deleted it, and heal-end had
//     nothing to join it with);
//   - heal-end of that worker: no Node, no NFS client installed;
//   - heal-start of a master: refused at plan time, no host touched;
//
// and heal-end --tags nfs_client (the shim's kubeadm variant) installs the
// NFS client and nothing else, without kubeadm anywhere.
func TestKubeadmStandInRefusals(t *testing.T) {
	b := needBed(t)
	b.kubeadmStandIn(t, "master-0") // worker-1: an image without kubeadm
	b.isolateWorkerNodes(t)
	b.ensureNFSClient(t, "worker-1")
	b.kubectlStdin(t, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"worker21","labels":{"kubernetes.io/hostname":"worker21"}},
"status":{"addresses":[{"type":"InternalIP","address":"10.231.0.21"},{"type":"Hostname","address":"worker21"}]}}`, "create", "-f", "-")
	if _, ok := b.nodeWithIP(t, "10.231.0.21"); !ok {
		// kubectl create drops a Node's status on some versions: set it.
		b.kubectl(t, "patch", "node", "worker21", "--subresource=status", "--type=merge", "-p",
			`{"status":{"addresses":[{"type":"InternalIP","address":"10.231.0.21"},{"type":"Hostname","address":"worker21"}]}}`)
	}
	victim, ok := nodeByAddress(b.topology(t), "10.231.0.21")
	if !ok {
		t.Fatal("Heat has no worker at 10.231.0.21")
	}
	state := t.TempDir()

	code, _, errs := b.runKubeadm(t, state, "heal-start", "--node", victim.Name)
	if code != 6 {
		t.Fatalf("heal-start of a worker without kubeadm: exit %d, want 6 (refused)\n%s", code, tail(errs, 40))
	}
	if !strings.Contains(errs, victim.Name+" has neither kubeadm nor a kubelet: its replacement, booted from the same image, would have none either") ||
		!strings.Contains(errs, "cannot tell kubeadm and a kubelet that came with them from ones installed by hand after boot") ||
		!strings.Contains(errs, "Nothing was changed (not drained, not deleted)") {
		t.Errorf("the refusal does not say why:\n%s", tail(errs, 30))
	}
	t.Logf("refusal: %s", lineWith(errs, "has neither kubeadm"))
	if n, ok := b.nodeWithIP(t, "10.231.0.21"); !ok || n.Name != "worker21" || n.Unschedulable {
		t.Errorf("worker21 after the refused heal-start: %+v, want it there and schedulable (untouched)", n)
	}
	if ranTask(t, state, "heal-start", "Drain the nodes") || ranTask(t, state, "heal-start", "Delete the Node objects") {
		t.Errorf("the refused heal-start ran the drain or the delete")
	}

	b.removeNFSClient(t, "worker-1")
	code, _, errs = b.runKubeadm(t, state, "heal-end", "--vnfc-resource-id", victim.ServerID)
	// Two reasons: no kubeadm, and worker21 (heal-start was refused) still
	// has the address.
	if code != 6 || !strings.Contains(errs, "cannot join with kubeadm: Node worker21 has "+victim.Name+"'s name or address 10.231.0.21") ||
		!strings.Contains(errs, victim.Name+" has neither kubeadm nor a kubelet") {
		t.Errorf("heal-end of a worker without kubeadm: exit %d, want 6 saying why it cannot join\n%s", code, tail(errs, 30))
	}
	if b.nfsClient("worker-1") {
		t.Errorf("the refused heal-end installed the NFS client on worker-1")
	}

	// The shim's kubeadm variant: the NFS client only.
	code, _, errs = b.runKubeadm(t, state, "heal-end", "--vnfc-resource-id", victim.ServerID, "--tags", "nfs_client")
	if code != 0 {
		t.Errorf("heal-end --tags nfs_client: exit %d, want 0\n%s", code, tail(errs, 30))
	}
	if !b.nfsClient("worker-1") {
		t.Errorf("heal-end --tags nfs_client did not install the NFS client on worker-1")
	}
	if ranTask(t, state, "heal-end", "Look for kubeadm and a kubelet (read-only)") {
		t.Errorf("heal-end --tags nfs_client looked for kubeadm")
	}

	masters := 0
	for _, n := range b.topology(t) {
		if n.Role != "master" {
			continue
		}
		masters++
		start := time.Now()
		code, _, errs := b.runKubeadm(t, state, "heal-start", "--node", n.Name)
		if code != 6 || !strings.Contains(errs, "without kubespray heatsible joins workers only") {
			t.Errorf("heal-start of master %s: exit %d, want 6 refused at plan time\n%s", n.Name, code, tail(errs, 20))
		}
		t.Logf("master refusal after %s: %s", time.Since(start).Round(time.Millisecond), lineWith(errs, "joins workers only"))
	}
	if masters == 0 {
		t.Fatal("the bed's stack has no master")
	}
}

// TestKubeadmJoinCRISocket: kubeadm 1.24+ on a node with several CRI
// endpoints does not choose ("found multiple CRI endpoints on the host"),
// so a plain join fails after heatsible made a token. The spare worker
// gets two that answer (containerd's and cri-dockerd's sockets, listened
// on by stand-ins), and the stand-in kubeadm detects them as kubeadm
// does:
//   - the first master's kubelet names none: scale-end refuses (exit 6)
//     before any join, naming both endpoints;
//   - it names containerd's (/var/lib/kubelet/config.yaml, in the /run
//     spelling kubeadm writes): the JoinConfiguration carries criSocket
//     unix:///var/run/containerd/containerd.sock and the node joins.
func TestKubeadmJoinCRISocket(t *testing.T) {
	b := needBed(t)
	spare, spareIP := b.env["BED_SPARE_WORKER"], b.env["BED_SPARE_WORKER_IP"]
	if spare == "" {
		t.Fatal("the bed has no spare worker (SPARE_WORKERS=0)")
	}
	const kubeletConfig = "/var/lib/kubelet/config.yaml"
	if _, err := b.try("master-0", "test", "-e", kubeletConfig); err == nil {
		t.Fatalf("master-0 has %s already: the test would overwrite it", kubeletConfig)
	}
	b.kubeadmStandIn(t, "master-0", spare)
	b.isolateWorkerNodes(t)
	b.ensureNFSClient(t, spare)
	sockets := []string{"/run/containerd/containerd.sock", "/run/cri-dockerd.sock"}
	t.Cleanup(func() {
		b.try(spare, "systemctl", "stop", "hs-e2e-cri-0.service", "hs-e2e-cri-1.service")
		b.try(spare, "rm", "-f", sockets[0], sockets[1])
		b.try("master-0", "rm", "-f", kubeletConfig)
	})
	for i, s := range sockets {
		b.exec(t, spare, "sh", "-c", `mkdir -p "$(dirname "$1")" && systemd-run --quiet --unit "$2" python3 -c '
import os, socket, sys
p = sys.argv[1]
if os.path.exists(p):
    os.unlink(p)
s = socket.socket(socket.AF_UNIX)
s.bind(p)
s.listen(8)
while True:
    s.accept()[0].close()
' "$1" && for i in $(seq 50); do [ -S "$1" ] && exit 0; sleep 0.1; done; exit 1`, "sh", s, fmt.Sprintf("hs-e2e-cri-%d.service", i))
	}
	workers := workersOf(b.topology(t))
	n := b.scaleOutSpare(t, len(workers))
	state := t.TempDir()

	seq := lastRecordSeq(b.kubeadmRecords(t, spare, 0))
	code, _, errs := b.runKubeadm(t, state, "scale-end", "--nodes", n.MemberStackID)
	t.Logf("no endpoint named by the first master's kubelet: exit %d: %s", code, lineWith(errs, "several CRI endpoints"))
	if code != 6 {
		t.Fatalf("scale-end onto a node with two CRI endpoints: exit %d, want 6 (refused)\n%s", code, tail(errs, 40))
	}
	for _, want := range []string{
		"has several CRI endpoints (unix:///var/run/containerd/containerd.sock, unix:///var/run/cri-dockerd.sock), among which kubeadm 1.24+ does not choose",
		"kubelet names none (containerRuntimeEndpoint in /var/lib/kubelet/config.yaml",
		"Nothing was changed. Leave the node one CRI endpoint, the cluster's",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, tail(errs, 30))
		}
	}
	if got := commandsOf(b.kubeadmRecords(t, spare, seq)); got != "" {
		t.Errorf("kubeadm ran on %s after the refusal: %s", spare, got)
	}
	if node, ok := b.nodeWithIP(t, spareIP); ok {
		t.Errorf("Node %s joined after the refusal", node.Name)
	}

	b.exec(t, "master-0", "sh", "-c", `mkdir -p /var/lib/kubelet && printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/containerd/containerd.sock\n' > `+kubeletConfig)
	code, _, errs = b.runKubeadm(t, state, "scale-end", "--nodes", n.MemberStackID)
	if code != 0 {
		t.Fatalf("scale-end with the first master's kubelet naming containerd: exit %d\n%s", code, tail(errs, 40))
	}
	joins := recsOf(b.kubeadmRecords(t, spare, seq), "join")
	if len(joins) != 1 || joins[0].ExitCode != 0 || joins[0].Config == nil {
		t.Fatalf("kubeadm joins on %s: %+v, want one that succeeded with --config", spare, joins)
	}
	reg, _ := joins[0].Config.Content["nodeRegistration"].(map[string]any)
	if got, _ := reg["criSocket"].(string); got != "unix:///var/run/containerd/containerd.sock" {
		t.Errorf("the JoinConfiguration's nodeRegistration.criSocket: %q, want unix:///var/run/containerd/containerd.sock (%v)", got, joins[0].Config.Content)
	}
	if node, ok := b.nodeWithIP(t, spareIP); !ok || node.Name != spare {
		t.Errorf("after scale-end: Node %+v, want %s", node, spare)
	}
	if code, _, errs = b.runKubeadm(t, state, "scale-start", "--nodes", n.Member); code != 0 {
		t.Errorf("scale-start: exit %d\n%s", code, tail(errs, 30))
	}
	b.stackScale(t, len(workers), n.Member)
}
