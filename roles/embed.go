// Package roles holds heatsible's Ansible roles, embedded so that a run
// bundle can carry them to whichever machine runs ansible-playbook.
package roles

import "embed"

// FS holds the role directories (see Names and Helpers) at its root,
// without names starting with "." or "_" (no __pycache__ of the roles'
// script tests), ready to be copied as an Ansible roles path. Their
// modules, action plugins and filters are the collection heatsible.nfv's
// (package collection), which a run bundle carries beside them.
//
//go:embed cinder_volume nfs_server nfs_client pv_register k8s_node k8s_join external_lb kubeconfig apt_wait k8s_vim
var FS embed.FS

// Names lists the embedded roles: those of instantiate-end in the order it
// runs them, then those of the other operations.
var Names = []string{"cinder_volume", "nfs_server", "nfs_client", "pv_register", "external_lb", "k8s_vim", "k8s_node", "k8s_join"}

// Helpers lists the roles the others import (never run alone, so not a
// --role or --tags choice): kubeconfig finds the admin kubeconfig for the
// roles that run kubectl, apt_wait waits for cloud-init and the dpkg lock
// before a role installs packages.
var Helpers = []string{"kubeconfig", "apt_wait"}
