// Package roles holds heatsible's Ansible roles (cinder_volume, nfs_server,
// nfs_client, pv_register), embedded so that a run bundle can carry them to
// whichever machine runs ansible-playbook.
package roles

import "embed"

// FS holds the four role directories at its root (cinder_volume/,
// nfs_server/, nfs_client/, pv_register/), hidden files included, ready to
// be copied as an Ansible roles path.
//
//go:embed all:cinder_volume all:nfs_server all:nfs_client all:pv_register
var FS embed.FS

// Names lists the embedded roles in the order an instantiate runs them.
var Names = []string{"cinder_volume", "nfs_server", "nfs_client", "pv_register"}
