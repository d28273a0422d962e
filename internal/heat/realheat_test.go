package heat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/heatsible/heatsible/internal/topology"
)

var record = flag.Bool("record", false, "with HEATSIBLE_HEAT_ENV: save the real Heat's responses under testdata/recorded/ (the fixtures of the fast tests)")

// counter is a RoundTripper that counts every request on the wire
// (redirects included) and can keep the response bodies.
type counter struct {
	rt     http.RoundTripper
	mu     sync.Mutex
	reqs   []string
	bodies map[string][]byte // by request URI, when keep is set
	keep   bool
}

func (c *counter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	code := 0
	if resp != nil {
		code = resp.StatusCode
	}
	c.reqs = append(c.reqs, fmt.Sprintf("%s %s %s -> %d", r.Method, r.URL.Host, r.URL.RequestURI(), code))
	if c.keep && err == nil && code == 200 && r.Method == "GET" {
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		if c.bodies == nil {
			c.bodies = map[string][]byte{}
		}
		c.bodies[r.URL.RequestURI()] = b
	}
	return resp, err
}

func (c *counter) reset() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.reqs
	c.reqs = nil
	return out
}

func loadEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("HEATSIBLE_HEAT_ENV: %v", err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export "))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		env[k] = strings.Trim(v, `"'`)
	}
	return env
}

// TestRealHeat creates a Tacker-shaped stack (1 master, 3 workers with
// floating IPs, storage server + port + volume) on the test bed's real
// Keystone + Heat (testbed/heat/heat.sh), discovers it, and checks every
// address, the volume and the number of HTTP requests.
func TestRealHeat(t *testing.T) {
	envPath := os.Getenv("HEATSIBLE_HEAT_ENV")
	if envPath == "" {
		t.Skip("HEATSIBLE_HEAT_ENV is unset: run `testbed/heat/heat.sh up` and set HEATSIBLE_HEAT_ENV=$PWD/testbed/run/heat/env to test against the real Keystone + Heat")
	}
	envPath, _ = filepath.Abs(envPath)
	for k, v := range loadEnvFile(t, envPath) {
		t.Setenv(k, v)
	}
	t.Setenv("OS_CLOUD", "")
	runDir := filepath.Dir(envPath)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	heatSh := filepath.Join(root, "testbed", "heat", "heat.sh")

	// Own networks and pools, so the bed's stack (if any) is not disturbed.
	pools := filepath.Join(runDir, "pools.d", "go-test.json")
	if err := os.MkdirAll(filepath.Dir(pools), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pools, []byte(`{"networks": {"hs_it_master": ["10.231.240.12"],
 "hs_it_worker": ["10.231.240.20-10.231.240.22"], "hs_it_storage": ["10.231.240.11"]},
 "floating": {"10.231.240.0/24": "10.231.241.0/24"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	const stackName = "hs-go-it"
	run := heatSH(t, heatSh)
	t0 := time.Now()
	out := run("stack-create", stackName, "3", "1", "--replace", "--no-state",
		"--networks", "hs_it_master,hs_it_worker,hs_it_storage")
	t.Logf("stack-create took %s", time.Since(t0).Round(100*time.Millisecond))
	t.Cleanup(func() {
		if os.Getenv("HEATSIBLE_KEEP_STACK") != "" {
			return
		}
		run("stack-delete", stackName)
		os.Remove(pools)
	})
	var created struct {
		ID      string `json:"id"`
		Volumes []struct {
			Resource, ID, Device string
		} `json:"volumes"`
	}
	if err := json.Unmarshal(out, &created); err != nil {
		t.Fatalf("stack-create output: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cnt := &counter{rt: http.DefaultTransport, keep: *record}
	client, err := NewClient(ctx, WithHTTPClient(&http.Client{Transport: cnt}))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	auth := cnt.reset()
	t.Logf("auth: %d request(s): %v", len(auth), auth)

	c := Contract{
		MasterAspect: "master_instance", MasterSSHCP: "masterNode_CP1", MasterNICCP: "masterNode_CP1",
		WorkerAspect: "worker_instance", WorkerSSHCP: "workerNode_FloatingIP", WorkerNICCP: "workerNode_CP2",
		StorageSSHCP: "storage_server_CP", StorageNICCP: "storage_server_CP",
		Volumes: []string{"storage_server_volume"},
	}
	t1 := time.Now()
	topo, err := Discover(ctx, client, stackName, c)
	took := time.Since(t1)
	reqs := cnt.reset()
	if err != nil {
		t.Fatalf("Discover: %v\nrequests: %v", err, reqs)
	}
	t.Logf("Discover: %d HTTP requests in %s:\n  %s", len(reqs), took.Round(time.Millisecond), strings.Join(reqs, "\n  "))
	y, _ := topo.Marshal()
	t.Logf("topology:\n%s", y)

	// 302 + stack GET + one listing; no Keystone request.
	if len(reqs) != 3 {
		t.Errorf("Discover made %d HTTP requests, want 3 (302, stack, listing): %v", len(reqs), reqs)
	}
	for _, r := range reqs {
		if strings.Contains(r, "/auth/") {
			t.Errorf("Discover talked to Keystone: %s", r)
		}
	}

	if topo.Cluster != stackName || topo.Stack != stackName+"/"+created.ID {
		t.Errorf("cluster/stack = %q/%q, want %q/%q", topo.Cluster, topo.Stack, stackName, stackName+"/"+created.ID)
	}
	byRole := map[topology.Role][]topology.Node{}
	for _, n := range topo.Nodes {
		byRole[n.Role] = append(byRole[n.Role], n)
		if n.ServerID == "" {
			t.Errorf("node %s: no server id", n.Name)
		}
	}
	if m := byRole[topology.RoleMaster]; len(m) != 1 || m[0].Address != "10.231.240.12" || m[0].SSHAddress != "10.231.240.12" ||
		m[0].Member == "" || m[0].Name != "masternode-"+m[0].Member || m[0].MemberStackID == "" {
		t.Errorf("masters = %+v, want one masternode-<member> at 10.231.240.12 with member and member stack", m)
	}
	w := byRole[topology.RoleWorker]
	if len(w) != 3 {
		t.Fatalf("workers = %+v, want 3", w)
	}
	for i, n := range w {
		addr := fmt.Sprintf("10.231.240.%d", 20+i)
		fip := fmt.Sprintf("10.231.241.%d", 20+i)
		if n.Address != addr || n.SSHAddress != fip {
			t.Errorf("worker %d = %s/%s, want internal %s, ssh %s", i, n.Address, n.SSHAddress, addr, fip)
		}
		if want := "workernode-" + n.Member; n.Name != want || len(n.Member) != 12 {
			t.Errorf("worker %d named %q (member %q), want %q", i, n.Name, n.Member, want)
		}
		if n.MemberStackID == "" {
			t.Errorf("worker %s: no member stack id", n.Name)
		}
	}
	s := byRole[topology.RoleStorage]
	if len(s) != 1 || s[0].Name != "storage-server" || s[0].Address != "10.231.240.11" || s[0].SSHAddress != "10.231.240.11" {
		t.Errorf("storage = %+v, want storage-server at 10.231.240.11", s)
	}
	if topo.CPs["storage_server_CP"] != "10.231.240.11" {
		t.Errorf("cps = %v, want storage_server_CP: 10.231.240.11", topo.CPs)
	}
	if len(created.Volumes) != 1 || len(topo.Volumes) != 1 {
		t.Fatalf("volumes: created %+v, discovered %+v", created.Volumes, topo.Volumes)
	}
	if v := topo.Volumes[0]; v.Resource != "storage_server_volume" || v.ID != created.Volumes[0].ID || v.Device != "/dev/vdb" || len(v.ID) != 36 {
		t.Errorf("volume = %+v, want storage_server_volume id %s on /dev/vdb", v, created.Volumes[0].ID)
	}

	if *record {
		recordFixtures(t, ctx, client, cnt, created.ID, stackName, filepath.Join("testdata", "recorded"))
	}
}

// realHeat is the bed's Keystone + Heat for a test (HEATSIBLE_HEAT_ENV,
// else the test skips): the OS_* variables set, and the run directory.
func realHeat(t *testing.T) (runDir, heatSh string) {
	t.Helper()
	envPath := os.Getenv("HEATSIBLE_HEAT_ENV")
	if envPath == "" {
		t.Skip("HEATSIBLE_HEAT_ENV is unset: run `testbed/heat/heat.sh up` and set HEATSIBLE_HEAT_ENV=$PWD/testbed/run/heat/env to test against the real Keystone + Heat")
	}
	envPath, _ = filepath.Abs(envPath)
	for k, v := range loadEnvFile(t, envPath) {
		t.Setenv(k, v)
	}
	t.Setenv("OS_CLOUD", "")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(envPath), filepath.Join(root, "testbed", "heat", "heat.sh")
}

// TestRealHeatThreeMasters creates a stack of three masters with a VIP
// port vip_CP in the top stack (heat.sh stack-create --masters 3 --vip,
// the complex flavour of Tacker's guide), 2 workers, the storage server
// and a volume on the real Keystone + Heat, on networks and pools of its
// own (the VIP on a network of its own, so its address is known: the
// masters' pool would give it any of theirs), and discovers it: three
// masters ordered by address, the master member's CP masterNode_CP1 as the
// first master's address, vip_CP as the VIP's. With -record it saves
// Heat's answers under testdata/recorded/three-masters/, the fixture of
// TestDiscoverRecordedThreeMasters.
func TestRealHeatThreeMasters(t *testing.T) {
	runDir, heatSh := realHeat(t)
	pools := filepath.Join(runDir, "pools.d", "go-test-three-masters.json")
	if err := os.MkdirAll(filepath.Dir(pools), 0o755); err != nil {
		t.Fatal(err)
	}
	// masters: three addresses given in an order that is not the address
	// order, so the members Heat lists first need not be the first master
	if err := os.WriteFile(pools, []byte(`{"networks": {"hs_it3_master": ["10.231.242.14", "10.231.242.12", "10.231.242.15"],
 "hs_it3_vip": ["10.231.242.9"], "hs_it3_worker": ["10.231.242.20-10.231.242.21"], "hs_it3_storage": ["10.231.242.11"]},
 "floating": {"10.231.242.0/24": "10.231.243.0/24"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	const stackName = "hs-go-it-three-masters"
	run := heatSH(t, heatSh)
	t.Cleanup(func() {
		if os.Getenv("HEATSIBLE_KEEP_STACK") == "" {
			run("stack-delete", stackName)
		}
		os.Remove(pools)
	})
	t0 := time.Now()
	out := run("stack-create", stackName, "2", "1", "--replace", "--no-state", "--masters", "3", "--vip", "--vip-network", "hs_it3_vip",
		"--networks", "hs_it3_master,hs_it3_worker,hs_it3_storage")
	t.Logf("stack-create took %s", time.Since(t0).Round(100*time.Millisecond))
	var created struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(out, &created); err != nil {
		t.Fatalf("stack-create output: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cnt := &counter{rt: http.DefaultTransport, keep: *record}
	client, err := NewClient(ctx, WithHTTPClient(&http.Client{Transport: cnt}))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	cnt.reset()
	c := Contract{
		MasterAspect: "master_instance", MasterSSHCP: "masterNode_CP1", MasterNICCP: "masterNode_CP1",
		WorkerAspect: "worker_instance", WorkerSSHCP: "workerNode_FloatingIP", WorkerNICCP: "workerNode_CP2",
		StorageSSHCP: "storage_server_CP", StorageNICCP: "storage_server_CP",
		Volumes:  []string{"storage_server_volume"},
		ExtraCPs: []string{"masterNode_CP1", "vip_CP"},
	}
	topo, err := Discover(ctx, client, stackName, c)
	reqs := cnt.reset()
	if err != nil {
		t.Fatalf("Discover: %v\nrequests: %v", err, reqs)
	}
	y, _ := topo.Marshal()
	t.Logf("Discover: %d HTTP requests; topology:\n%s", len(reqs), y)
	ms := topo.ByRole(topology.RoleMaster)
	var addrs []string
	for _, m := range ms {
		addrs = append(addrs, m.Address)
	}
	if strings.Join(addrs, " ") != "10.231.242.12 10.231.242.14 10.231.242.15" {
		t.Errorf("masters at %v, want 10.231.242.12 .14 .15 in that order", addrs)
	}
	if got := topo.CPs["masterNode_CP1"]; got != "10.231.242.12" {
		t.Errorf("CPs[masterNode_CP1] = %q, want the first master's 10.231.242.12", got)
	}
	if got := topo.CPs["vip_CP"]; got != "10.231.242.9" {
		t.Errorf("CPs[vip_CP] = %q, want the VIP port's 10.231.242.9", got)
	}
	if *record {
		recordFixtures(t, ctx, client, cnt, created.ID, stackName, filepath.Join("testdata", "recorded", "three-masters"))
	}
}

// recordFixtures saves what the real Heat answered to Discover, plus one
// GET of the volume with ?with_attr=attachments_list, as the fixtures of the
// fast tests (testdata/recorded/).
func recordFixtures(t *testing.T, ctx context.Context, client *gophercloud.ServiceClient, cnt *counter, id, name, dir string) {
	t.Helper()
	var vol json.RawMessage
	u := client.ServiceURL("stacks", name, id, "resources", "storage_server_volume") + "?with_attr=attachments_list"
	if _, err := client.Get(ctx, u, &vol, nil); err != nil {
		t.Fatalf("record: %v", err)
	}
	get := func(path string) []byte {
		for uri, b := range cnt.bodies {
			if strings.HasSuffix(uri, path) {
				return b
			}
		}
		return nil
	}
	files := map[string][]byte{
		"stack.json":            get("/stacks/" + name + "/" + id),
		"resources.json":        get("/stacks/" + name + "/" + id + "/resources?nested_depth=2&with_detail=true"),
		"volume_with_attr.json": vol,
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range files {
		if v == nil {
			keys := make([]string, 0, len(cnt.bodies))
			for k := range cnt.bodies {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			t.Fatalf("record: no response for %s among %v", k, keys)
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, v, "", " "); err != nil {
			t.Fatalf("record %s: %v", k, err)
		}
		buf.WriteByte('\n')
		if err := os.WriteFile(filepath.Join(dir, k), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s (%d bytes)", filepath.Join(dir, k), buf.Len())
	}
}

// heatSH runs the bed's testbed/heat/heat.sh (at path) with args, logs its
// stderr and fails the test when it fails; stdout is returned.
func heatSH(t *testing.T, path string) func(args ...string) []byte {
	return func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, path, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		t.Logf("heat.sh %s:\n%s", strings.Join(args, " "), stderr.String())
		if err != nil {
			t.Fatalf("heat.sh %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
}
