// Package state is what heatsible keeps on this machine between runs, under
// Dir(): the per-cluster lock (an flock whose file names its holder) and the
// run records (runs/CLUSTER/TIMESTAMP-OPERATION/: run.log, report.md and
// the rendered bundle, every secret masked). It owns its types and is handed
// plain values (the run's options as RunInfo, the rendered files as a map,
// run.log lines and the review report as a Summary): it imports none of the
// packages that make them (ansible, params, report) and never reaches back
// into package lcm, which drives it.
package state

import (
	"os"
	"path/filepath"
)

// Dir is where heatsible keeps per-cluster state on this machine: the
// locks and the run records. HEATSIBLE_STATE_DIR overrides it.
func Dir() string {
	if d := os.Getenv("HEATSIBLE_STATE_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/lib/heatsible"
	}
	if d, err := os.UserHomeDir(); err == nil {
		return filepath.Join(d, ".local", "state", "heatsible")
	}
	return filepath.Join(os.TempDir(), "heatsible")
}
