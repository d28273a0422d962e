package manifest

import (
	"strconv"
	"strings"
)

// NeedsStatd reports whether the kubelet's mount of an NFS PersistentVolume
// with these mount options needs rpc.statd on the node, and so rpcbind:
// mount.nfs (nfs-utils' utils/mount/stropts.c, nfs_verify_lock_option)
// starts statd (start-statd, which runs "systemctl start rpc-statd.service")
// before every NFSv2 or NFSv3 mount that keeps remote locks, and fails the
// mount when statd does not run ("rpc.statd is not running but is required
// for remote locking"). NFSv4 has locking in the protocol and needs neither.
//
// As mount.nfs reads the options (each item may hold several, separated by
// commas):
//   - the version: v2, v3 (v4), vers=N or nfsvers=N; when any of them names
//     2 or 3 the mount is NFSv3 (several version options are an error to
//     newer mount.nfs and the first of the table to older ones: either way
//     such a PV is taken at its NFSv2/3 word);
//   - without a version option, mounthost, mountaddr, mountvers or
//     mountproto make it NFSv3 (mount.nfs' nfs_set_version), and so does
//     UDP (udp, proto=udp, proto=udp6: NFSv4 has no UDP, mount.nfs falls
//     back to NFSv3); otherwise mount.nfs negotiates NFSv4 first, which the
//     servers heatsible sets up serve, and that is how it is counted (a
//     server without NFSv4 would get an NFSv3 mount: heatsible cannot see
//     that from the PV);
//   - the last of lock and nolock wins, lock by default; only nolock spares
//     statd. local_lock=all does not: mount.nfs looks at lock/nolock only
//     and starts statd all the same (the kernel then keeps the locks local).
func NeedsStatd(options []string) bool {
	var opts []string
	for _, item := range options {
		for _, o := range strings.Split(item, ",") {
			if o = strings.TrimSpace(o); o != "" {
				opts = append(opts, o)
			}
		}
	}
	v3, versioned, implied, lock := false, false, false, true
	for _, o := range opts {
		key, val, hasVal := strings.Cut(o, "=")
		switch {
		case !hasVal && len(key) >= 2 && key[0] == 'v' && key[1] >= '0' && key[1] <= '9':
			// v2, v3, v4, v4.1
			versioned = true
			if major(key[1:]) <= 3 {
				v3 = true
			}
		case hasVal && (key == "vers" || key == "nfsvers"):
			versioned = true
			if major(val) <= 3 {
				v3 = true
			}
		case hasVal && key == "minorversion":
			versioned = true
		case key == "mounthost" || key == "mountaddr" || key == "mountvers" || key == "mountproto":
			implied = true
		case !hasVal && key == "udp", hasVal && key == "proto" && (val == "udp" || val == "udp6"):
			implied = true
		case !hasVal && key == "lock":
			lock = true
		case !hasVal && key == "nolock":
			lock = false
		}
	}
	if !versioned {
		v3 = implied
	}
	return v3 && lock
}

// major is the major version of "3", "3.0", "4.1"; 4 (no statd) when it is
// not a number, which mount.nfs refuses anyway.
func major(v string) int {
	m, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(m)
	if err != nil || n < 0 {
		return 4
	}
	return n
}
