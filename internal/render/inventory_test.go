package render

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/heatsible/heatsible/internal/topology"
	"github.com/heatsible/heatsible/inventory"
)

// TestInventoryMapping: the topology mapped onto package inventory's model
// writes package inventory's golden files byte for byte, in both formats,
// and Inventory refuses an invalid topology with the topology's own
// message before mapping it.
func TestInventoryMapping(t *testing.T) {
	topo, err := topology.Load("../../testdata/topology/k8s-a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := inventoryNodes(topo)
	if err != nil {
		t.Fatal(err)
	}
	// the users of inventory's own golden test
	inv, err := inventory.Build(nodes, inventory.Users{Master: "ubuntu", Worker: "ubuntu", Storage: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []inventory.Format{inventory.INI, inventory.YAML} {
		var buf bytes.Buffer
		if err := inv.Write(&buf, f); err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile("../../inventory/testdata/k8s-a." + string(f))
		if err != nil {
			t.Fatal(err)
		}
		if buf.String() != string(want) {
			t.Errorf("%s differs from inventory/testdata/k8s-a.%s:\n%s", f, f, buf.String())
		}
	}
	req := loadRequest(t, "valid")
	bad := *topo
	bad.Nodes = append([]topology.Node{}, topo.Nodes...)
	bad.Nodes[0].Name = "Master_0"
	if _, err := Inventory(req, &bad); err == nil || !strings.Contains(err.Error(), "topology.nodes[0].name") {
		t.Errorf("an invalid node name: %v, want the topology's message", err)
	}
	bad.Nodes[0].Name, bad.Nodes[0].Role = "master-0", "router"
	if _, err := inventoryNodes(&bad); err == nil || !strings.Contains(err.Error(), `"router"`) {
		t.Errorf("an unknown role: %v", err)
	}
}
