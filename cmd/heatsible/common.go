package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/lcm"
	"github.com/heatsible/heatsible/internal/params"
)

// inputs are the flags that say what to act on.
type inputs struct {
	request  string
	pkg      string
	stack    string
	topology string
}

func (in *inputs) addRequest(cmd *cobra.Command) {
	cmd.Flags().StringVar(&in.request, "request", "", "instantiate request JSON: Tacker's whole request body, or only its additionalParams (required)")
	cmd.MarkFlagRequired("request")
}

func (in *inputs) addPackage(cmd *cobra.Command) {
	cmd.Flags().StringVar(&in.pkg, "package", "", "VNF package directory; pv_manifest_file_path and script_path are relative to it")
}

func (in *inputs) addSource(cmd *cobra.Command) {
	cmd.Flags().StringVar(&in.stack, "stack", "", "Heat stack id or name to read the cluster from (needs OpenStack credentials)")
	cmd.Flags().StringVar(&in.topology, "topology", "", "topology file saved earlier with 'heatsible topology --save' (no OpenStack needed)")
}

func (in *inputs) source() lcm.Source {
	return lcm.Source{Stack: in.stack, TopologyFile: in.topology}
}

// loadRequest reads and validates the request; every problem comes back at
// once as a fail.Invalid error.
func (in *inputs) loadRequest(g *globals, requirePackage bool) (*params.Request, error) {
	req, err := params.Load(in.request)
	if err != nil {
		return nil, fail.With(fail.Invalid, err)
	}
	if err := req.Validate(params.Options{PackageDir: in.pkg, RequirePackage: requirePackage}); err != nil {
		warn(g, req)
		return nil, fail.With(fail.Invalid, err)
	}
	warn(g, req)
	return req, nil
}

func warn(g *globals, req *params.Request) {
	for _, w := range req.Warnings {
		fmt.Fprintf(g.stderr, "heatsible: warning: %s\n", w)
	}
}

// healTarget turns the --storage-server and --cluster flags into the
// operation's target ("" when neither is given).
func healTarget(storageServer, wholeCluster bool) (string, error) {
	switch {
	case storageServer && wholeCluster:
		return "", fail.With(fail.Invalid, fmt.Errorf("give either --storage-server or --cluster, not both"))
	case storageServer:
		return lcm.TargetStorageServer, nil
	case wholeCluster:
		return lcm.TargetCluster, nil
	}
	return "", nil
}
