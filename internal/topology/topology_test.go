package topology

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadSaveRoundTrip(t *testing.T) {
	topo, err := Load("../../testdata/topology/k8s-a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Nodes) != 5 || topo.CPs["storage_server_CP"] != "10.10.0.45" || topo.Volumes[0].Device != "/dev/vdb" {
		t.Fatalf("unexpected topology: %+v", topo)
	}
	p := filepath.Join(t.TempDir(), "t.yaml")
	if err := topo.Save(p); err != nil {
		t.Fatal(err)
	}
	again, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := topo.Marshal()
	b, _ := again.Marshal()
	if string(a) != string(b) {
		t.Fatalf("round trip changed the topology:\n%s\n---\n%s", a, b)
	}
}

func TestParseRejects(t *testing.T) {
	ok := "cluster: c\nnodes:\n  - {name: m, role: master, ssh_address: 10.0.0.1, address: 10.0.0.1}\n"
	if _, err := Parse([]byte(ok)); err != nil {
		t.Fatalf("minimal topology: %v", err)
	}
	tests := []struct{ name, doc, want string }{
		{"empty", "", "empty"},
		{"unknown field", ok + "extra: 1\n", "field extra not found"},
		{"no master", "cluster: c\nnodes:\n  - {name: w, role: worker, ssh_address: 10.0.0.1, address: 10.0.0.1}\n", "no node with role master"},
		{"dup names", "cluster: c\nnodes:\n  - {name: m, role: master, ssh_address: 10.0.0.1, address: 10.0.0.1}\n  - {name: m, role: worker, ssh_address: 10.0.0.2, address: 10.0.0.2}\n", "must be unique"},
		{"bad name", "cluster: c\nnodes:\n  - {name: Master_0, role: master, ssh_address: 10.0.0.1, address: 10.0.0.1}\n", "DNS-1123"},
		{"bad role", "cluster: c\nnodes:\n  - {name: m, role: boss, ssh_address: 10.0.0.1, address: 10.0.0.1}\n", "not one of"},
		{"bad address", "cluster: c\nnodes:\n  - {name: m, role: master, ssh_address: '10.0.0.1; rm', address: 10.0.0.1}\n", "ssh_address"},
		{"bad device", ok + "volumes:\n  - {resource: v, id: x, device: 'vdb'}\n", "not a /dev path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{
		"workerNode":              "workernode",
		"workerNode-a1b2c3d4e5f6": "workernode-a1b2c3d4e5f6",
		"storage_server":          "storage-server",
		"--x__y--":                "x-y",
		strings.Repeat("a", 70):   strings.Repeat("a", 63),
	} {
		if got := SanitizeName(in); got != want {
			t.Errorf("SanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoadTooLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, make([]byte, MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("got %v", err)
	}
}
