package manifest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/heatsible/heatsible/internal/topology"
)

// FuzzPrepare feeds arbitrary manifests and server addresses to Parse and
// Prepare. Invariants: nothing panics; an NFS server that is not an IP
// address or host name is refused; whatever Parse accepts, Prepare turns
// into a manifest that Parse accepts again, with the same name and source,
// spec.nfs.server equal to server (as a string) for an NFS PV, the
// managed-by label, and no further change when prepared again.
func FuzzPrepare(f *testing.F) {
	seeds, _ := filepath.Glob("../../testdata/package/Files/*/*.yaml")
	if len(seeds) == 0 {
		f.Fatal("no seed manifests")
	}
	servers := []string{"10.10.0.45", "fd00::45", "::1", "nfs.example.com", "1e3", "true", "null", "~", "- x", "a: b", "#"}
	for i, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			// escape.yaml points outside the package on purpose; it may
			// still be readable, which is fine as a seed.
			continue
		}
		f.Add(b, servers[i%len(servers)])
	}
	f.Add([]byte("apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: a, labels: x}\nspec: {nfs: {path: /a}}\n"), "10.0.0.1")
	f.Add([]byte("apiVersion: v1\nkind: PersistentVolume\nmetadata: &m {name: a}\nspec: {csi: {driver: d}, x: *m}\n"), "10.0.0.1")
	f.Fuzz(func(t *testing.T, data []byte, server string) {
		pv, err := Parse(data)
		if err != nil {
			return
		}
		out, err := pv.Prepare(server)
		if pv.Source == SourceNFS && !topology.ValidAddress(server) {
			if err == nil {
				t.Fatalf("Prepare accepted the NFS server %q, which is not an address", server)
			}
			return
		}
		if err != nil {
			t.Fatalf("Prepare(%q) of an accepted manifest failed: %v", server, err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("Prepare's output does not parse: %v\n%s", err, out)
		}
		if again.Name != pv.Name || again.Source != pv.Source || again.NFSPath != pv.NFSPath {
			t.Fatalf("Prepare changed the PV: name %q->%q source %s->%s path %q->%q", pv.Name, again.Name, pv.Source, again.Source, pv.NFSPath, again.NFSPath)
		}
		var doc struct {
			Metadata struct {
				Labels map[string]any `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				NFS struct {
					Server any `yaml:"server"`
				} `yaml:"nfs"`
			} `yaml:"spec"`
		}
		if err := yaml.Unmarshal(out, &doc); err != nil {
			t.Fatalf("Prepare's output does not decode: %v\n%s", err, out)
		}
		if got := doc.Metadata.Labels[ManagedByLabel]; got != ManagedByValue {
			t.Fatalf("label %s = %#v, want %q\n%s", ManagedByLabel, got, ManagedByValue, out)
		}
		if pv.Source == SourceNFS && doc.Spec.NFS.Server != server {
			t.Fatalf("spec.nfs.server = %#v, want the string %q\n%s", doc.Spec.NFS.Server, server, out)
		}
		twice, err := again.Prepare(server)
		if err != nil {
			t.Fatalf("preparing the output again failed: %v", err)
		}
		if !bytes.Equal(out, twice) {
			t.Fatalf("Prepare is not idempotent:\n--- once\n%s--- twice\n%s", out, twice)
		}
	})
}
