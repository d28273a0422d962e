package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/lcm"
	"github.com/heatsible/heatsible/internal/redact"
)

func newTopology(g *globals) *cobra.Command {
	var in inputs
	var save string
	cmd := &cobra.Command{
		Use:   "topology --request FILE (--stack ID|NAME | --topology FILE) [--save FILE]",
		Short: "Show the cluster as heatsible sees it: nodes, addresses, CPs, volumes",
		Long: `topology reads the cluster from the Heat stack (following Tacker's conventions:
masters and workers in AutoScalingGroups named by aspect_id, the storage server
and its volumes in the top stack) or from a topology file, checks that every
name the request refers to exists, and prints it as YAML (JSON with -o json).

--save FILE writes it to a file that later commands take with --topology, so an
operator can re-run without OpenStack access. The format is in docs/topology.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req, err := in.loadRequest(g, false)
			if err != nil {
				return err
			}
			t, err := lcm.LoadTopology(cmd.Context(), req, in.source())
			if err != nil {
				return err
			}
			if save != "" {
				if err := t.Save(save); err != nil {
					return fail.With(fail.Internal, err)
				}
				fmt.Fprintf(g.stderr, "heatsible: saved the topology of %s (%d nodes) to %s\n", redact.Terminal(t.Cluster), len(t.Nodes), redact.Terminal(save))
			}
			if g.json() {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(t)
			}
			out, err := t.Marshal()
			if err != nil {
				return err
			}
			_, err = g.stdout.Write(out)
			return err
		},
	}
	in.addRequest(cmd)
	in.addSource(cmd)
	cmd.Flags().StringVar(&save, "save", "", "also write the topology to this file")
	return cmd
}
