package manifest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
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

// viewTricks are manifests that two YAML readers read differently, from
// issue 24 and its review: a second spec.nfs.server or kind written as a
// !!binary key, a quoted !!merge "<<" merging claimRef and mountOptions into
// spec, YAML 1.1 booleans as values and keys, timestamps, a non-specific
// tag, octal-looking numbers, a JSON manifest.
var viewTricks = []string{
	"apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec:\n  nfs:\n    server: 0.0.0.0\n    path: /v\n    ? !!binary c2VydmVy\n    : evil\n",
	"apiVersion: v1\nkind: PersistentVolume\n? !!binary a2luZA==\n: Pod\nmetadata: {name: pv}\nspec: {nfs: {server: 0.0.0.0, path: /v}}\n",
	"apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec:\n  nfs: {server: 0.0.0.0, path: /v}\n  !!merge \"<<\": {claimRef: {namespace: n, name: c}, mountOptions: [nolock]}\n",
	"apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec:\n  nfs: {server: 0.0.0.0, path: /v, readOnly: yes}\n",
	"apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv, labels: {on: x, y: z}}\nspec: {nfs: {server: 0.0.0.0, path: /v}}\n",
	"apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv, annotations: {o: 012, q: \"yes\", r: ! 12}}\nspec: {nfs: {server: 0.0.0.0, path: /v}}\n",
	"apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv, annotations: {t: 2001-01-01}}\nspec: {nfs: {server: 0.0.0.0, path: /v}}\n",
	"apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec: {nfs: {server: 0.0.0.0, path: !!str /v}}\n",
	"{\"apiVersion\": \"v1\", \"kind\": \"PersistentVolume\", \"metadata\": {\"name\": \"pv\"}, \"spec\": {\"nfs\": {\"server\": \"0.0.0.0\", \"path\": \"/v\"}, \"<<\": {\"a\": 1}}}\n",
	"apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\nspec: {csi: {driver: d, volumeAttributes: {a: on, b: 1.0, c: 0x10, d: 1e3}}}\n",
}

// FuzzViews is the differential check of issue 24: whatever Parse
// accepts, Prepare's output reads the same to heatsible (View, yaml.v3)
// and to kubectl's reader (KubectlView, sigs.k8s.io/yaml: yaml.v2 rules,
// then JSON), and kubectl sees the PersistentVolume heatsible checked: its
// kind, name, source, spec.nfs.server set to server (as a string) and the
// managed-by label. The seed corpus (f.Add below and testdata/fuzz/
// FuzzViews) holds the tricks, which Parse must refuse.
func FuzzViews(f *testing.F) {
	seeds, _ := filepath.Glob("../../testdata/package/Files/*/*.yaml")
	hostile, _ := filepath.Glob("../../testdata/hostile/package/Files/hostile/*.yaml")
	servers := []string{"10.10.0.45", "fd00::45", "nfs.example.com", "yes", "on", "n", "true", "null", "1e3", "0x1F"}
	for i, p := range append(seeds, hostile...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, servers[i%len(servers)])
		}
	}
	for i, s := range viewTricks {
		f.Add([]byte(s), servers[i%len(servers)])
	}
	f.Fuzz(func(t *testing.T, data []byte, server string) {
		pv, err := Parse(data)
		if err != nil {
			return
		}
		out, err := pv.Prepare(server)
		if err != nil {
			return // FuzzPrepare checks when Prepare may refuse
		}
		mine, err := View(out)
		if err != nil {
			t.Fatalf("heatsible does not read its own prepared manifest: %v\n%s", err, out)
		}
		theirs, err := KubectlView(out)
		if err != nil {
			t.Fatalf("kubectl's reader refuses the prepared manifest: %v\n%s", err, out)
		}
		if p, a, b, same := viewDiff(mine, theirs, ""); !same {
			t.Fatalf("the prepared manifest reads differently at %s: heatsible %s, kubectl %s\n--- input\n%s\n--- prepared\n%s", p, a, b, data, out)
		}
		k, _ := theirs.(map[string]any)
		meta, _ := k["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		spec, _ := k["spec"].(map[string]any)
		if k["kind"] != "PersistentVolume" || k["apiVersion"] != "v1" || meta["name"] != pv.Name || labels[ManagedByLabel] != ManagedByValue {
			t.Fatalf("kubectl reads kind %v, apiVersion %v, name %v, label %v; heatsible checked a PersistentVolume %s\n%s", k["kind"], k["apiVersion"], meta["name"], labels[ManagedByLabel], pv.Name, out)
		}
		if _, ok := spec[string(pv.Source)].(map[string]any); !ok {
			t.Fatalf("kubectl reads no spec.%s\n%s", pv.Source, out)
		}
		if pv.Source == SourceNFS {
			nfs := spec["nfs"].(map[string]any)
			if nfs["server"] != server || nfs["path"] != pv.NFSPath {
				t.Fatalf("kubectl reads spec.nfs.server %#v, path %#v; heatsible set %q, checked %q\n%s", nfs["server"], nfs["path"], server, pv.NFSPath, out)
			}
		}
	})
}

// TestViewTricksRefused: every trick of viewTricks on which the two readers
// differ is refused by Parse, on its own merits (not for some unrelated
// reason such as a missing field); the two they agree on are accepted.
func TestViewTricksRefused(t *testing.T) {
	wants := []string{"!!binary", "!!binary", "!!merge", `"spec.nfs.readOnly": heatsible reads "yes", kubectl true`, `key "on"`, `"metadata.annotations.r": heatsible reads 12, kubectl "12"`, "", `tag "!!str"`, "", `"spec.csi.volumeAttributes.a"`}
	for i, s := range viewTricks {
		_, err := Parse([]byte(s))
		switch {
		case wants[i] == "" && err != nil:
			t.Errorf("trick %d (both readers agree on it: a timestamp stays text, a JSON manifest's quoted \"<<\" is a key) refused: %v", i, err)
		case wants[i] != "" && (err == nil || !strings.Contains(err.Error(), wants[i])):
			t.Errorf("trick %d: %v; want an error with %q\n%s", i, err, wants[i], s)
		}
	}
}
