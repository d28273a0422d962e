package manifest

import (
	"slices"
	"strings"
	"testing"
)

// TestNeedsStatd: which PVs' mounts need rpc.statd (and rpcbind) on the
// node, as mount.nfs decides it (issue 28, hardened nodes).
func TestNeedsStatd(t *testing.T) {
	tests := []struct {
		opts []string
		want bool
	}{
		{nil, false},                                      // no version: NFSv4 negotiated
		{[]string{"hard", "timeo=600"}, false},            // still no version
		{[]string{"nfsvers=3"}, true},                     // the PV
		{[]string{"vers=3"}, true},                        // vers is nfsvers
		{[]string{"nfsvers=3.0"}, true},                   // a minor number on 3
		{[]string{"v3"}, true},                            // the short form
		{[]string{"nfsvers=2"}, true},                     // NFSv2 as v3
		{[]string{"v2"}, true},                            //
		{[]string{"nfsvers=3", "nolock"}, false},          // locks kept local, no statd
		{[]string{"nfsvers=3,nolock"}, false},             // several options in one item
		{[]string{"nfsvers=3, nolock"}, false},            // with a space
		{[]string{"nolock", "nfsvers=3", "lock"}, true},   // the last of lock/nolock wins
		{[]string{"lock", "nfsvers=3", "nolock"}, false},  //
		{[]string{"nfsvers=3", "local_lock=all"}, true},   // mount.nfs still starts statd
		{[]string{"nfsvers=3", "local_lock=posix"}, true}, //
		{[]string{"nfsvers=4.1"}, false},
		{[]string{"nfsvers=4"}, false},
		{[]string{"vers=4.2"}, false},
		{[]string{"v4.1"}, false},
		{[]string{"v4"}, false},
		{[]string{"minorversion=1"}, false},
		{[]string{"nfsvers=4.1", "udp"}, false},         // a version given: no fallback
		{[]string{"mountvers=3"}, true},                 // mountd options make it NFSv3
		{[]string{"mountproto=tcp"}, true},              //
		{[]string{"mounthost=10.0.0.1"}, true},          //
		{[]string{"mountaddr=10.0.0.1"}, true},          //
		{[]string{"mountport=20048"}, false},            // not one of them
		{[]string{"udp"}, true},                         // NFSv4 has no UDP: falls back to v3
		{[]string{"proto=udp"}, true},                   //
		{[]string{"proto=udp6"}, true},                  //
		{[]string{"proto=tcp"}, false},                  //
		{[]string{"mountvers=3", "nfsvers=4.1"}, false}, // the version says 4
		{[]string{"nfsvers=4.1", "v3"}, true},           // two versions: taken at the 3
		{[]string{"nfsvers=x"}, false},                  // mount.nfs refuses it
		{[]string{"nfsvers"}, false},                    // no value: not a version
		{[]string{"vers3"}, false},                      // not an option mount.nfs knows
		{[]string{"NFSVERS=3"}, false},                  // options are case-sensitive
		{[]string{""}, false},
		{[]string{",,"}, false},
	}
	for _, tt := range tests {
		if got := NeedsStatd(tt.opts); got != tt.want {
			t.Errorf("NeedsStatd(%q) = %v, want %v", tt.opts, got, tt.want)
		}
	}
}

// TestMountOptions: Parse reads the mount options as the kubelet does (the
// beta annotation before spec.mountOptions) and refuses options that are
// not strings.
func TestMountOptions(t *testing.T) {
	const head = "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: a\n"
	const spec = "spec:\n  nfs: {server: 10.0.0.1, path: /a}\n"
	tests := []struct {
		name, doc string
		opts      []string
		field     string
	}{
		{"none", head + spec, nil, ""},
		{"spec", head + spec + "  mountOptions: [nfsvers=3, hard]\n", []string{"nfsvers=3", "hard"}, "spec.mountOptions"},
		{"null", head + spec + "  mountOptions:\n", nil, ""},
		{"empty", head + spec + "  mountOptions: []\n", []string{}, "spec.mountOptions"},
		{"annotation first", head + "  annotations:\n    volume.beta.kubernetes.io/mount-options: \"nfsvers=3,nolock\"\n" + spec + "  mountOptions: [nfsvers=4.1]\n",
			[]string{"nfsvers=3", "nolock"}, "metadata.annotations[volume.beta.kubernetes.io/mount-options]"},
		{"other annotation", head + "  annotations: {a: b}\n" + spec + "  mountOptions: [v3]\n", []string{"v3"}, "spec.mountOptions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pv, err := Parse([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(pv.MountOptions, tt.opts) || (pv.MountOptions == nil) != (tt.opts == nil) || pv.MountOptionsField != tt.field {
				t.Errorf("MountOptions %q (%s), want %q (%s)", pv.MountOptions, pv.MountOptionsField, tt.opts, tt.field)
			}
		})
	}
	for _, bad := range []struct{ doc, want string }{
		{head + spec + "  mountOptions: nfsvers=3\n", "spec.mountOptions is not a list of strings"},
		{head + spec + "  mountOptions: [nfsvers=3, 3]\n", `spec.mountOptions[1] "3" is not a string`},
		{head + spec + "  mountOptions: [[a]]\n", "spec.mountOptions[0]"},
		{head + "  annotations:\n    volume.beta.kubernetes.io/mount-options: [a]\n" + spec, "is not a string (the mount options, separated by commas)"},
	} {
		if _, err := Parse([]byte(bad.doc)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Parse(%q): %v, want an error with %q", bad.doc, err, bad.want)
		}
	}
}
