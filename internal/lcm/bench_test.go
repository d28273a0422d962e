package lcm

import (
	"bytes"
	"fmt"
	"io/fs"
	"testing"

	"github.com/heatsible/heatsible/collection"
	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/roles"
)

// synthetic returns the fixture topology grown to n nodes (1 master,
// n-2 workers, 1 storage server).
func synthetic(b testing.TB, n int) *topology.Topology {
	t, err := topology.Load("../../testdata/topology/k8s-a.yaml")
	if err != nil {
		b.Fatal(err)
	}
	nodes := []topology.Node{t.ByRole(topology.RoleMaster)[0], t.ByRole(topology.RoleStorage)[0]}
	for i := 0; len(nodes) < n; i++ {
		nodes = append(nodes, topology.Node{
			Name:       fmt.Sprintf("workernode-%012d", i),
			Role:       topology.RoleWorker,
			SSHAddress: fmt.Sprintf("192.0.%d.%d", 2+i/250, 1+i%250),
			Address:    fmt.Sprintf("10.10.%d.%d", i/250, 1+i%250),
		})
	}
	t.Nodes = nodes
	return t
}

// BenchmarkInventory500 builds and writes (INI and YAML) the inventory of a
// 500-node cluster.
func BenchmarkInventory500(b *testing.B) {
	req, _ := fixture(b, "valid")
	t := synthetic(b, 500)
	b.ReportAllocs()
	for b.Loop() {
		inv, err := Inventory(req, t)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		if err := inv.WriteINI(&buf); err != nil {
			b.Fatal(err)
		}
		if err := inv.WriteYAML(&buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderOp500 renders everything a run needs for 500 nodes:
// inventory, vars, prepared manifests and the playbook.
func BenchmarkRenderOp500(b *testing.B) {
	req, _ := fixture(b, "valid")
	t := synthetic(b, 500)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := RenderOp(req, t, "../../testdata/package", Op{Name: OpInstantiateEnd}, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBundle500 stages the run bundle (files, roles, 0600 secrets) on
// disk and removes it again.
func BenchmarkBundle500(b *testing.B) {
	req, _ := fixture(b, "valid")
	t := synthetic(b, 500)
	f, err := RenderOp(req, t, "../../testdata/package", Op{Name: OpInstantiateEnd}, "bench")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		bd, err := ansible.NewBundle(ansible.BundleSpec{Cluster: "bench", Operation: OpInstantiateEnd, BaseDir: dir,
			Inventory: f.Inventory, InventoryName: "hosts.yml", Playbook: f.Playbook, Roles: roles.FS, Collections: map[string]fs.FS{collection.FQCN: collection.FS},
			GroupVars: f.GroupVars, Secrets: f.Secrets, SecretValues: f.SecretValues, Files: f.BundleFiles()})
		if err != nil {
			b.Fatal(err)
		}
		bd.Close()
	}
}
