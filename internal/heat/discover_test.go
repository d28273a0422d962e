package heat

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/topology"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden/")

// tacker is the contract of the k8s MgmtDriver sample, as the test bed uses it.
func tacker() Contract {
	return Contract{
		MasterAspect: "master_instance", MasterSSHCP: "masterNode_CP1", MasterNICCP: "masterNode_CP1",
		WorkerAspect: "worker_instance", WorkerSSHCP: "workerNode_FloatingIP", WorkerNICCP: "workerNode_CP2",
		StorageSSHCP: "storage_server_CP", StorageNICCP: "storage_server_CP",
		Volumes: []string{"storage_server_volume"},
	}
}

func discover(t *testing.T, f *fixture, c Contract) (*topology.Topology, int, error) {
	t.Helper()
	client, srv := serve(t, f)
	topo, err := Discover(context.Background(), client, f.name, c)
	return topo, srv.count(), err
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// The recorded stack, as the real Heat answered: attachments is Cinder's list.
func TestDiscoverRecorded(t *testing.T) {
	f := recorded(t)
	topo, n, err := discover(t, f, tacker())
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	y, err := topo.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "recorded.yaml", y)
	// The same stack is found by id too.
	client, _ := serve(t, f)
	if _, err := Discover(context.Background(), client, f.id, tacker()); err != nil {
		t.Errorf("by id: %v", err)
	}
}

func wantVolume(t *testing.T, topo *topology.Topology, f *fixture) {
	t.Helper()
	id := f.row(t, "storage_server_volume", "")["physical_resource_id"]
	if len(topo.Volumes) != 1 || topo.Volumes[0].ID != id || topo.Volumes[0].Device != "/dev/vdb" {
		t.Errorf("volumes = %+v, want %s on /dev/vdb", topo.Volumes, id)
	}
}

// The volume attribute shapes Heat can return.
func TestDiscoverVolumeShapes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edit     func(f *fixture, vol map[string]any)
		requests int
	}{
		{"attachments list", func(*fixture, map[string]any) {}, 3},
		{"attachments repr string", func(f *fixture, vol map[string]any) {
			// what the real Heat's get_attr gave (stack output), as older Heats
			// return the attribute
			out := f.stack["outputs"].([]any)[0].(map[string]any)["output_value"].(string)
			if !strings.HasPrefix(out, "[{'id': ") {
				panic("recorded output is not a repr: " + out)
			}
			attrs(vol)["attachments"] = out
		}, 3},
		{"attachments repr string, python 2", func(f *fixture, vol map[string]any) {
			attrs(vol)["attachments"] = fmt.Sprintf("[{u'device': u'/dev/vdb', u'server_id': u'%s', u'attached_at': u'2020-01-01T00:00:00.000000', u'host_name': None, u'volume_id': u'%s'}]",
				f.row(nil, "storage_server", "")["physical_resource_id"], vol["physical_resource_id"])
		}, 3},
		{"attachments_list inline", func(f *fixture, vol map[string]any) {
			a := attrs(vol)
			a["attachments_list"], a["attachments"] = a["attachments"], "[]"
		}, 3},
		{"only show", func(f *fixture, vol map[string]any) {
			vol["attributes"] = map[string]any{"show": attrs(vol)}
		}, 3},
		{"no attachments inline: one with_attr GET", func(f *fixture, vol map[string]any) {
			delete(attrs(vol), "attachments")
		}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := recorded(t)
			tc.edit(f, f.row(t, "storage_server_volume", ""))
			topo, n, err := discover(t, f, tacker())
			if err != nil {
				t.Fatal(err)
			}
			wantVolume(t, topo, f)
			if n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
		})
	}
}

// Every row's attributes only under "show" (Heat resolving attributes one
// by one): addresses are still found.
func TestDiscoverShowShape(t *testing.T) {
	f := recorded(t)
	want, _, err := discover(t, f, tacker())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.rows {
		if a := attrs(r); a != nil {
			r["attributes"] = map[string]any{"show": a}
		}
	}
	got, _, err := discover(t, f, tacker())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := want.Marshal()
	b, _ := got.Marshal()
	if string(a) != string(b) {
		t.Errorf("show shape gave\n%s\nwant\n%s", b, a)
	}
}

func TestDiscoverFloatingIPs(t *testing.T) {
	t.Run("ssh CP is the port: no floating IP used", func(t *testing.T) {
		c := tacker()
		c.WorkerSSHCP = "workerNode_CP2"
		topo, _, err := discover(t, recorded(t), c)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range topo.ByRole(topology.RoleWorker) {
			if n.SSHAddress != n.Address || !strings.HasPrefix(n.Address, "10.231.240.") {
				t.Errorf("worker %s: ssh %s, internal %s", n.Name, n.SSHAddress, n.Address)
			}
		}
	})
	t.Run("floating IP resource missing in one member", func(t *testing.T) {
		f := recorded(t)
		m := f.members("worker_instance")[1]["resource_name"].(string)
		f.remove(f.row(t, "workerNode_FloatingIP", m))
		_, _, err := discover(t, f, tacker())
		if err == nil || !strings.Contains(err.Error(), `"workerNode_FloatingIP"`) || !strings.Contains(err.Error(), m) ||
			!strings.Contains(err.Error(), `"worker_instance"`) {
			t.Errorf("err = %v, want one naming the aspect, member %s and the CP", err, m)
		}
	})
	t.Run("floating IP without address", func(t *testing.T) {
		f := recorded(t)
		m := f.members("worker_instance")[0]["resource_name"].(string)
		attrs(f.row(t, "workerNode_FloatingIP", m))["floating_ip_address"] = nil
		_, _, err := discover(t, f, tacker())
		if err == nil || !strings.Contains(err.Error(), "no floating_ip_address") || !strings.Contains(err.Error(), m) {
			t.Errorf("err = %v, want no floating_ip_address for member %s", err, m)
		}
	})
}

func TestDiscoverOutputsContract(t *testing.T) {
	doc := `cluster: from-output
nodes:
  - {name: m0, role: master, ssh_address: 192.0.2.10, address: 192.0.2.10}
  - {name: s0, role: storage, ssh_address: 192.0.2.11, address: 192.0.2.11}
volumes:
  - {resource: storage_server_volume, id: 11111111-2222-3333-4444-555555555555, device: /dev/vdb}
`
	for name, value := range map[string]any{
		"yaml string": doc,
		"map": map[string]any{"cluster": "from-output", "nodes": []any{
			map[string]any{"name": "m0", "role": "master", "ssh_address": "192.0.2.10", "address": "192.0.2.10"},
			map[string]any{"name": "s0", "role": "storage", "ssh_address": "192.0.2.11", "address": "192.0.2.11"}},
			"volumes": []any{map[string]any{"resource": "storage_server_volume", "id": "11111111-2222-3333-4444-555555555555", "device": "/dev/vdb"}}},
	} {
		t.Run(name, func(t *testing.T) {
			f := recorded(t)
			f.stack["outputs"] = append(f.stack["outputs"].([]any), map[string]any{
				"output_key": TopologyOutput, "output_value": value, "description": "x"})
			topo, n, err := discover(t, f, tacker())
			if err != nil {
				t.Fatal(err)
			}
			if topo.Cluster != "from-output" || len(topo.Nodes) != 2 || topo.Nodes[0].Address != "192.0.2.10" ||
				topo.Stack != f.name+"/"+f.id || topo.Volumes[0].Device != "/dev/vdb" {
				t.Errorf("topology = %+v", topo)
			}
			if n != 2 {
				t.Errorf("%d requests, want 2 (no listing)", n)
			}
		})
	}
	t.Run("invalid document", func(t *testing.T) {
		f := recorded(t)
		f.stack["outputs"] = []any{map[string]any{"output_key": TopologyOutput, "output_value": "cluster: x\nnodes: []\nbogus: 1\n"}}
		_, _, err := discover(t, f, tacker())
		if err == nil || !strings.Contains(err.Error(), TopologyOutput) {
			t.Errorf("err = %v, want one naming the output", err)
		}
	})
	t.Run("output error", func(t *testing.T) {
		f := recorded(t)
		f.stack["outputs"] = []any{map[string]any{"output_key": TopologyOutput, "output_error": "The Referenced Attribute (x y) is incorrect."}}
		_, _, err := discover(t, f, tacker())
		if err == nil || !strings.Contains(err.Error(), "Referenced Attribute") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestDiscoverErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Contract)
		want []string
	}{
		{"missing master ASG", func(c *Contract) { c.MasterAspect = "master_group" }, []string{`"master_group"`, "master_instance, worker_instance"}},
		{"missing worker ASG", func(c *Contract) { c.WorkerAspect = "worker_group" }, []string{`worker aspect_id "worker_group"`}},
		{"missing master CP", func(c *Contract) { c.MasterNICCP = "masterNode_CP9" }, []string{`"masterNode_CP9"`, "nic_cp_name", `"master_instance"`}},
		{"missing worker ssh CP", func(c *Contract) { c.WorkerSSHCP = "workerNode_FIP" }, []string{`"workerNode_FIP"`, "ssh_cp_name"}},
		{"missing storage CP", func(c *Contract) { c.StorageNICCP = "storage_CP" }, []string{`"storage_CP"`, "storage server"}},
		{"missing extra CP", func(c *Contract) { c.ExtraCPs = []string{"nfs_server_cp"} }, []string{`"nfs_server_cp"`}},
		{"missing volume", func(c *Contract) { c.Volumes = []string{"storage_server_volume", "storage_server_volume2"} }, []string{`"storage_server_volume2"`}},
		{"volume is not a volume", func(c *Contract) { c.Volumes = []string{"storage_server_CP"} }, []string{`"storage_server_CP"`, "not an OS::Cinder::Volume"}},
		{"no master aspect", func(c *Contract) { c.MasterAspect = "" }, []string{"master aspect_id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tacker()
			tc.edit(&c)
			_, _, err := discover(t, recorded(t), c)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to contain %s", err, w)
				}
			}
		})
	}
	t.Run("stack not found", func(t *testing.T) {
		client, _ := serve(t, recorded(t))
		_, err := Discover(context.Background(), client, "nope", tacker())
		if err == nil || !strings.Contains(err.Error(), `stack "nope" not found`) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestDiscoverExtraCPsAndNoWorkers(t *testing.T) {
	c := tacker()
	c.WorkerAspect = ""
	c.ExtraCPs = []string{"storage_server_CP"}
	topo, _, err := discover(t, recorded(t), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.ByRole(topology.RoleWorker)) != 0 || topo.CPs["storage_server_CP"] != "10.231.240.11" {
		t.Errorf("topology = %+v", topo)
	}
}

// Tacker's samples name the master's own CP as cluster_cp_name: it lives in
// the member stack of a group of one. A CP in several members is refused.
func TestDiscoverMemberCP(t *testing.T) {
	c := tacker()
	c.ExtraCPs = []string{c.MasterNICCP}
	topo, _, err := discover(t, recorded(t), c)
	if err != nil {
		t.Fatal(err)
	}
	m := topo.ByRole(topology.RoleMaster)[0]
	if topo.CPs[c.MasterNICCP] != m.Address {
		t.Errorf("CPs[%s] = %q, want the master's address %s", c.MasterNICCP, topo.CPs[c.MasterNICCP], m.Address)
	}
	c.ExtraCPs = []string{c.WorkerNICCP}
	if _, _, err := discover(t, recorded(t), c); err == nil || !strings.Contains(err.Error(), "group members") {
		t.Errorf("a worker CP as an extra CP: got %v, want an error about group members", err)
	}
}

// Synthetic stacks grown from the recorded shape: the number of requests
// must not depend on the number of nodes.
func TestDiscoverScale(t *testing.T) {
	for _, total := range []int{5, 50, 500} {
		t.Run(fmt.Sprint(total), func(t *testing.T) {
			f := recorded(t)
			f.grow(t, total)
			topo, n, err := discover(t, f, tacker())
			if err != nil {
				t.Fatal(err)
			}
			if len(topo.Nodes) != total {
				t.Errorf("%d nodes, want %d", len(topo.Nodes), total)
			}
			if n != 3 {
				t.Errorf("%d requests for %d nodes, want 3", n, total)
			}
			seen := map[string]bool{}
			for _, nd := range topo.Nodes {
				if seen[nd.Address] {
					t.Errorf("address %s twice", nd.Address)
				}
				seen[nd.Address] = true
			}
		})
	}
}

func TestNodeNames(t *testing.T) {
	nodes := nameNodes([]found{
		{node: topology.Node{Role: topology.RoleMaster, Address: "10.0.0.1", Member: "aaaaaaaaaaaa"}, serverName: "masterNode"},
		{node: topology.Node{Role: topology.RoleWorker, Address: "10.0.0.3", Member: "cccccccccccc"}, serverName: "workerNode"},
		{node: topology.Node{Role: topology.RoleWorker, Address: "10.0.0.2", Member: "bbbbbbbbbbbb"}, serverName: "workerNode"},
		{node: topology.Node{Role: topology.RoleWorker, Address: "10.0.0.4", Member: "dddddddddddd"}, serverName: "vnf-" + strings.Repeat("x", 70)},
		{node: topology.Node{Role: topology.RoleStorage, Address: "10.0.0.9"}, serverName: "storage_server"},
	})
	var got []string
	for _, n := range nodes {
		got = append(got, n.Name)
	}
	// Group members always carry their member name, even a group of one
	// (scaling must never rename a node); a long base is cut, the member
	// name is kept whole.
	want := "masternode-aaaaaaaaaaaa workernode-bbbbbbbbbbbb workernode-cccccccccccc vnf-" + strings.Repeat("x", 46) + "-dddddddddddd storage-server"
	if strings.Join(got, " ") != want {
		t.Errorf("names = %v\nwant    %v", got, want)
	}
}

// BenchmarkDiscover discovers stacks of 5, 50 and 500 nodes from the
// fixture server, which counts the requests (requests/op).
func BenchmarkDiscover(b *testing.B) {
	for _, total := range []int{5, 50, 500} {
		b.Run(fmt.Sprintf("nodes=%d", total), func(b *testing.B) {
			f := recorded(b)
			f.grow(b, total)
			client, srv := serve(b, f)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				topo, err := Discover(ctx, client, f.name, tacker())
				if err != nil {
					b.Fatal(err)
				}
				if len(topo.Nodes) != total {
					b.Fatalf("%d nodes, want %d", len(topo.Nodes), total)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(srv.count())/float64(b.N), "requests/op")
		})
	}
}

// Only the storage server's own attachment gives the device: a volume
// attached to another server (multi-attach, a move in progress, a wrong
// volume_resource_id) must not lend that server's device name, which says
// nothing about the storage server's disks.
func TestDiscoverVolumeAttachment(t *testing.T) {
	const other = "0b7e3c55-1d4f-4a52-9a3e-000000000042"
	// otherAttachment is the recorded attachment moved to another server.
	otherAttachment := func(list []any, dev string) []any {
		a := deepCopy(list[0]).(map[string]any)
		a["server_id"], a["device"], a["attachment_id"] = other, dev, "5f2d6f0e-0000-4000-8000-000000000001"
		return []any{a}
	}
	for _, tc := range []struct {
		name     string
		edit     func(f *fixture, vol map[string]any)
		device   string   // want this device, or
		err      []string // want an error with all of these
		requests int
	}{
		{
			name: "another server's attachment first, then the storage server's",
			edit: func(f *fixture, vol map[string]any) {
				a := attrs(vol)
				list := a["attachments"].([]any)
				a["attachments"] = append(otherAttachment(list, "/dev/vdc"), list...)
			},
			device: "/dev/vdb", requests: 3,
		},
		{
			name: "listing: only another server's; the GET: the storage server's",
			edit: func(f *fixture, vol map[string]any) {
				a := attrs(vol)
				a["attachments"] = otherAttachment(a["attachments"].([]any), "/dev/vdc")
			},
			device: "/dev/vdb", requests: 4,
		},
		{
			name: "attached only to another server",
			edit: func(f *fixture, vol map[string]any) {
				a := attrs(vol)
				a["attachments"] = otherAttachment(a["attachments"].([]any), "/dev/vdc")
				g := attrs(f.volumeGet)
				g["attachments"] = otherAttachment(g["attachments"].([]any), "/dev/vdc")
				g["attachments_list"] = g["attachments"]
			},
			err: []string{`volume "storage_server_volume" (Cinder volume a62df5ac-0258-4af7-bff5-a1c8431821e9) is not attached to the storage server storage-server (Nova server 9754ee5b-a543-4ae3-87c5-47741be3f455)`,
				"attached only to other servers (" + other + ")"},
			requests: 4,
		},
		{
			name: "attached nowhere",
			edit: func(f *fixture, vol map[string]any) {
				attrs(vol)["attachments"] = []any{}
				g := attrs(f.volumeGet)
				g["attachments"], g["attachments_list"] = []any{}, "[]"
			},
			err:      []string{`volume "storage_server_volume"`, "is not attached to the storage server", "it has no attachment at all"},
			requests: 4,
		},
		{
			name: "repr string of another server's attachment only",
			edit: func(f *fixture, vol map[string]any) {
				attrs(vol)["attachments"] = fmt.Sprintf("[{u'device': u'/dev/vdc', u'server_id': u'%s', u'volume_id': u'%s'}]", other, vol["physical_resource_id"])
				g := attrs(f.volumeGet)
				g["attachments"], g["attachments_list"] = []any{}, []any{}
			},
			err:      []string{"is not attached to the storage server", "attached only to other servers (" + other + ")"},
			requests: 4,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := recorded(t)
			tc.edit(f, f.row(t, "storage_server_volume", ""))
			topo, n, err := discover(t, f, tacker())
			if n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			if tc.err != nil {
				if err == nil {
					t.Fatalf("no error; volumes %+v", topo.Volumes)
				}
				for _, w := range tc.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("err = %v\nwant it to contain %s", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if topo.Volumes[0].Device != tc.device {
				t.Errorf("device %q, want %q", topo.Volumes[0].Device, tc.device)
			}
		})
	}
}

// threeMasters is the recorded stack with the master group grown to three
// members (10.231.0.12, .14, .5 in member order, so the first member is
// not the first by address) and, with vip, a VIP port vip_CP of the top
// stack (10.231.0.9), as in the complex flavour of Tacker's guide.
func threeMasters(t *testing.T, vip bool) *fixture {
	t.Helper()
	f := recorded(t)
	ips := []string{"", "10.231.0.14", "10.231.0.5"}
	f.clone(t, "master_instance", 3, func(i int) (string, string) { return ips[i], "" })
	if vip {
		r := deepCopy(f.row(t, "storage_server_CP", "")).(map[string]any)
		r["resource_name"], r["logical_resource_id"] = "vip_CP", "vip_CP"
		r["physical_resource_id"] = "11111111-2222-4333-8444-555555555555"
		a := attrs(r)
		a["fixed_ips"].([]any)[0].(map[string]any)["ip_address"] = "10.231.0.9"
		a["device_id"] = ""
		f.rows = append(f.rows, r)
	}
	return f
}

// The recorded stack of three masters (testdata/recorded/three-masters/,
// the real Heat's answers, TestRealHeatThreeMasters -record): the seeds'
// cluster_cp_name masterNode_CP1, a CP in every master member's stack,
// is the first master's address (by address, not the first member Heat
// lists); vip_CP, the VIP port of the top stack, is its own address. The
// topology is the golden three-masters.yaml, which internal/lcm's
// TestVIMEndpointRecordedThreeMasters reads for the VIM's warning.
func TestDiscoverRecordedThreeMasters(t *testing.T) {
	f := recordedThreeMasters(t)
	c := tacker()
	c.ExtraCPs = []string{c.MasterNICCP, "vip_CP"}
	topo, n, err := discover(t, f, c)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	ms := topo.ByRole(topology.RoleMaster)
	var addrs []string
	for _, m := range ms {
		addrs = append(addrs, m.Address)
	}
	if strings.Join(addrs, " ") != "10.231.242.12 10.231.242.14 10.231.242.15" {
		t.Fatalf("masters at %v, want 10.231.242.12 .14 .15", addrs)
	}
	first := f.members("master_instance")[0]["resource_name"].(string)
	t.Logf("Heat lists master member %s first; the first master by address is %s (member %s)", first, ms[0].Name, ms[0].Member)
	if got := topo.CPs[c.MasterNICCP]; got != ms[0].Address {
		t.Errorf("CPs[%s] = %q, want the first master %s's address %s", c.MasterNICCP, got, ms[0].Name, ms[0].Address)
	}
	if got := topo.CPs["vip_CP"]; got != "10.231.242.9" {
		t.Errorf("CPs[vip_CP] = %q, want the VIP port's 10.231.242.9", got)
	}
	for _, m := range ms {
		if m.Address == topo.CPs["vip_CP"] {
			t.Errorf("vip_CP is master %s's address", m.Name)
		}
	}
	y, err := topo.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "three-masters.yaml", y)
}

// Several masters: the seeds' bodies name a master member's CP
// (masterNode_CP1) as cluster_cp_name. It resolves to the first master (by
// address, as t.ByRole orders them), not to the first member Heat lists; a
// VIP port of the top stack is used as is.
func TestDiscoverSeveralMasters(t *testing.T) {
	c := tacker()
	c.ExtraCPs = []string{c.MasterNICCP}
	topo, _, err := discover(t, threeMasters(t, false), c)
	if err != nil {
		t.Fatal(err)
	}
	ms := topo.ByRole(topology.RoleMaster)
	if len(ms) != 3 {
		t.Fatalf("%d masters, want 3: %+v", len(ms), ms)
	}
	if ms[0].Address != "10.231.0.5" || topo.CPs[c.MasterNICCP] != ms[0].Address {
		t.Errorf("CPs[%s] = %q, want the first master's address %s (masters %+v)", c.MasterNICCP, topo.CPs[c.MasterNICCP], ms[0].Address, ms)
	}

	c.ExtraCPs = []string{"vip_CP"}
	topo, _, err = discover(t, threeMasters(t, true), c)
	if err != nil {
		t.Fatal(err)
	}
	if topo.CPs["vip_CP"] != "10.231.0.9" {
		t.Errorf("CPs[vip_CP] = %q, want the VIP port's 10.231.0.9", topo.CPs["vip_CP"])
	}

	// A CP in masters' and workers' members has no single address.
	f := threeMasters(t, false)
	w := deepCopy(f.row(t, "masterNode_CP1", f.members("master_instance")[0]["resource_name"].(string))).(map[string]any)
	wm := f.members("worker_instance")[0]
	w["parent_resource"] = wm["resource_name"]
	w["physical_resource_id"] = "66666666-2222-4333-8444-555555555555"
	for _, l := range w["links"].([]any) {
		l := l.(map[string]any)
		if l["rel"] == "stack" {
			href := l["href"].(string)
			l["href"] = href[:strings.LastIndexByte(href, '/')+1] + wm["physical_resource_id"].(string)
		}
	}
	f.rows = append(f.rows, w)
	c.ExtraCPs = []string{c.MasterNICCP}
	if _, _, err := discover(t, f, c); err == nil || !strings.Contains(err.Error(), "not all of them masters") {
		t.Errorf("a CP in masters and a worker: got %v, want an error about group members not all masters", err)
	}
}
