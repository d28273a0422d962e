package main

import (
	"github.com/spf13/cobra"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/lcm"
)

func newInventory(g *globals) *cobra.Command {
	var in inputs
	var format string
	cmd := &cobra.Command{
		Use:   "inventory --request FILE [--package DIR] (--stack ID|NAME | --topology FILE) [--format ini|yaml]",
		Short: "Print the Ansible inventory of the cluster",
		Long: `inventory prints the kubespray-compatible Ansible inventory of the cluster to
stdout: groups kube_control_plane, etcd, kube_node, calico_rr, k8s_cluster
(children), nfs_server (the storage server) and nfs_client (masters and
workers); host vars ansible_host (SSH address), ip (internal address) and
ansible_user. It never holds a password: heatsible passes those to Ansible in
a separate 0600 vars file at run time.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := lcm.ParseFormat(format)
			if err != nil {
				return fail.With(fail.Invalid, err)
			}
			req, err := in.loadRequest(g, false)
			if err != nil {
				return err
			}
			t, err := lcm.LoadTopology(cmd.Context(), req, in.source())
			if err != nil {
				return err
			}
			inv, err := lcm.Inventory(req, t)
			if err != nil {
				return fail.With(fail.Invalid, err)
			}
			return inv.Write(g.stdout, f)
		},
	}
	in.addRequest(cmd)
	in.addPackage(cmd)
	in.addSource(cmd)
	cmd.Flags().StringVar(&format, "format", "ini", "inventory format: ini or yaml")
	return cmd
}
