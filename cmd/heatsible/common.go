package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/lcm"
)

// inputs are the flags that say what to act on.
type inputs struct {
	request    string
	pkg        string
	stack      string
	topology   string
	kubeconfig string
	// wholeRun: validate checks the request for a whole instantiate-end
	// (params.Options.WholeRun).
	wholeRun bool
}

func (in *inputs) addRequest(cmd *cobra.Command) {
	cmd.Flags().StringVar(&in.request, "request", "", "instantiate request JSON: Tacker's whole request body, or only its additionalParams (required)")
	cmd.MarkFlagRequired("request")
}

func (in *inputs) addPackage(cmd *cobra.Command) {
	cmd.Flags().StringVar(&in.pkg, "package", "", "VNF package directory; pv_manifest_file_path and script_path are relative to it")
}

// addKubeconfig adds --kubeconfig: the admin kubeconfig on the first
// master, which overrides the request's master_node.kubeconfig.
func (in *inputs) addKubeconfig(cmd *cobra.Command) {
	cmd.Flags().StringVar(&in.kubeconfig, "kubeconfig", "", "admin kubeconfig's path on the first master, for kubectl (overrides the request's master_node.kubeconfig; default: the SSH user's ~/.kube/config, else /etc/kubernetes/admin.conf or /root/.kube/config through sudo)")
}

func (in *inputs) addSource(cmd *cobra.Command) {
	cmd.Flags().StringVar(&in.stack, "stack", "", "Heat stack id or name to read the cluster from (needs OpenStack credentials)")
	cmd.Flags().StringVar(&in.topology, "topology", "", "topology file saved earlier with 'heatsible topology --save' (no OpenStack needed)")
}

func (in *inputs) source() lcm.Source {
	return lcm.Source{Stack: in.stack, TopologyFile: in.topology}
}

// loadRequest reads and validates the request (lcm.LoadRequest).
func (in *inputs) loadRequest(g *globals, requirePackage bool) (*lcm.Request, error) {
	return lcm.LoadRequest(lcm.RequestInput{Path: in.request, PackageDir: in.pkg, RequirePackage: requirePackage,
		WholeRun: in.wholeRun, Kubeconfig: in.kubeconfig}, g.stderr)
}

// targetFlags are the flags that complete an operation: what a heal acts
// on, the nodes of a scale. run and plan share them.
type targetFlags struct {
	storageServer, wholeCluster bool
	node, vnfcID                string
	nodes                       []string
	deleteReleased              bool
}

func (tf *targetFlags) add(cmd *cobra.Command, as string) {
	f := cmd.Flags()
	f.BoolVar(&tf.storageServer, "storage-server", false, "heal target: the storage server"+as)
	f.BoolVar(&tf.wholeCluster, "cluster", false, "heal target: the whole cluster"+as)
	f.StringVar(&tf.node, "node", "", "heal target: one master or worker, by node name (or Heat member name, member stack id or server id)"+as)
	f.StringVar(&tf.vnfcID, "vnfc-resource-id", "", "heal target: one master or worker, by its VNFC resource id (the Nova server id Heat reports now)"+as)
	f.StringSliceVar(&tf.nodes, "nodes", nil, "scale-start: the leaving workers; scale-end: the new ones (comma-separated node names, Heat member names, member stack ids or server ids)"+as)
	f.BoolVar(&tf.deleteReleased, "delete-released", false, "heal-start --storage-server: also unregister Released PVs (their data stays on the export; a new claim may get it once they are registered again)"+as)
}

// op builds and checks operation name with the flags.
func (tf *targetFlags) op(name string) (lcm.Op, error) {
	op := lcm.Op{Name: name, DeleteReleased: tf.deleteReleased, Nodes: tf.nodes}
	n := 0
	for _, set := range []bool{tf.storageServer, tf.wholeCluster, tf.node != "", tf.vnfcID != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		return op, fail.With(fail.Invalid, fmt.Errorf("give one heal target: --storage-server, --cluster, --node or --vnfc-resource-id"))
	}
	if len(tf.nodes) > 0 && n > 0 {
		return op, fail.With(fail.Invalid, fmt.Errorf("--nodes (scale) goes with no heal target; for a heal of one node give --node"))
	}
	switch {
	case tf.storageServer:
		op.Target = lcm.TargetStorageServer
	case tf.wholeCluster:
		op.Target = lcm.TargetCluster
	case tf.node != "":
		op.Target, op.Nodes = lcm.TargetNode, []string{tf.node}
	case tf.vnfcID != "":
		op.Target, op.Nodes = lcm.TargetNode, []string{tf.vnfcID}
	}
	if err := op.Check(); err != nil {
		return op, fail.With(fail.Invalid, err)
	}
	return op, nil
}

// addWaitFlag adds --wait NAME=DURATION (lcm.ParseWaits reads it).
func addWaitFlag(f *pflag.FlagSet, waits *[]string, as string) {
	f.StringSliceVar(waits, "wait", nil, "NAME=DURATION: bound of one of the roles' waits, in seconds or e.g. 20m (names: see 'heatsible run --help', Waits)"+as)
}
