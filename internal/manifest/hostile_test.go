package manifest

import (
	"strings"
	"testing"
)

// TestParseRefusesAmbiguousYAML covers what makes heatsible and Kubernetes
// read a manifest differently, or blows up whatever reads it next.
func TestParseRefusesAmbiguousYAML(t *testing.T) {
	const pv = "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: pv\nspec:\n  nfs:\n    server: 0.0.0.0\n    path: /v\n"
	if _, err := Parse([]byte(pv)); err != nil {
		t.Fatalf("the base manifest: %v", err)
	}
	for _, tt := range []struct{ name, doc, want string }{
		{"alias", pv + "  x: &a [1]\n  y: *a\n", "anchor or alias"},
		{"anchor only", strings.Replace(pv, "spec:", "spec: &s", 1), "anchor or alias"},
		{"merge key inline", strings.Replace(pv, "  nfs:", "  <<: {csi: {driver: d}}\n  nfs:", 1), "merge key"},
		{"kind twice", pv + "kind: Pod\n", `key "kind" twice`},
		{"server twice", pv + "    server: evil\n", `key "server" twice (at "spec.nfs")`},
		{"complex key", pv + "? [a]\n: b\n", "not a string"},
		{"newline in path", strings.Replace(pv, "path: /v", `path: "/v\n/x"`, 1), "control character"},
		{"long kind", strings.Replace(pv, "kind: PersistentVolume", "kind: "+strings.Repeat("K", 5000), 1), "(5000 bytes)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want an error with %q, got %v", tt.want, err)
			}
			if len(err.Error()) > 300 {
				t.Errorf("message of %d bytes", len(err.Error()))
			}
		})
	}
	// A quoted "<<" is an ordinary key.
	if _, err := Parse([]byte(pv + "  \"<<\": x\n")); err != nil {
		t.Errorf("quoted '<<' key: %v", err)
	}
}
