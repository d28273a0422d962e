package ansible

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/heatsible/heatsible/internal/remote"
)

// DefaultRemoteBase is where RemoteRunner stages bundles on the Ansible
// host, relative to the login's home.
const DefaultRemoteBase = "~/.heatsible/runs"

// cleanupTimeout bounds the removal of a staging directory; it runs on a
// fresh context so that it also happens after a cancel.
const cleanupTimeout = 30 * time.Second

// RemoteRunner runs ansible-playbook on the Ansible host, the way packer's
// ansible-local provisioner does: stage the bundle in a unique directory,
// run there with output streamed back, remove the directory, also after a
// failure or a cancel.
type RemoteRunner struct {
	// Client is the connection to the Ansible host.
	Client *remote.Client
	// BaseDir holds the staging directories (DefaultRemoteBase if empty).
	BaseDir string
	// Logger gets progress and cleanup warnings (slog.Default() if nil).
	Logger *slog.Logger
}

func (rr *RemoteRunner) log() *slog.Logger {
	if rr.Logger != nil {
		return rr.Logger
	}
	return slog.Default()
}

func (rr *RemoteRunner) base() string {
	if rr.BaseDir != "" {
		return strings.TrimSuffix(rr.BaseDir, "/")
	}
	return DefaultRemoteBase
}

// Run implements Runner.
func (rr *RemoteRunner) Run(ctx context.Context, b *Bundle, opts RunOptions) (res *Result, err error) {
	if rr.Client == nil {
		return nil, errors.New("remote ansible run: no ssh client")
	}
	c := rr.Client
	log := rr.log()
	// A run whose connection was cut before the Ansible host noticed (see
	// remoteScript), or whose Ansible host went down, may have left its
	// staging directory, secrets included: remove it now. Directories of
	// live runs are locked and stay.
	if _, err := rr.CleanupStale(ctx, b.spec.Cluster, 0); err != nil {
		log.Warn("could not look for staging directories left by earlier runs", "host", c.Address(), "err", err)
	}
	prefix := rr.base() + "/" + StagingPrefix(b.spec.Cluster, b.spec.Operation)
	stage, err := c.MkTemp(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("staging the ansible bundle on %s: %w", c.Address(), err)
	}
	defer func() {
		// A fresh context: the run's may be cancelled already.
		cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if rerr := c.RemoveAll(cctx, stage); rerr != nil {
			log.Warn("could not remove the staging directory on the Ansible host; the Ansible host removes it when it sees the connection gone, else the next run does",
				"host", c.Address(), "dir", stage, "err", rerr)
			return
		}
		log.Debug("removed staging directory", "host", c.Address(), "dir", stage)
	}()

	if err := c.Upload(ctx, b.Dir, stage); err != nil {
		return nil, fmt.Errorf("uploading the ansible bundle to %s: %w", c.Address(), err)
	}
	// ansible.cfg holds absolute paths: render it for where it now lives.
	if err := c.WriteFile(ctx, stage+"/"+ConfigFile, b.Config(stage), 0o644); err != nil {
		return nil, err
	}

	argv, err := Command(b, stage, opts)
	if err != nil {
		return nil, err
	}
	if err := checkCollect(b, opts.Collect); err != nil {
		return nil, err
	}
	dir := opts.Dir
	if dir == "" {
		dir = stage
	}
	r := newRun(b, argv, dir, opts)
	r.res.StagingDir = stage
	script := remoteScript(stage, dir, argv, runEnv(b, stage, opts))
	log.Debug("running ansible-playbook on the Ansible host", "host", c.Address(), "dir", dir, "argv", strings.Join(argv, " "))
	code, runErr := c.Run(ctx, script, r.out, r.errw)
	res = r.finish(code)
	if runErr == nil {
		// Before the deferred removal of the staging directory.
		for _, rel := range opts.Collect {
			data, ok, err := c.ReadFile(ctx, stage+"/"+rel, MaxCollect)
			if err != nil {
				return res, fmt.Errorf("reading back %s from the Ansible host: %w", rel, err)
			}
			if ok {
				if res.Collected == nil {
					res.Collected = map[string][]byte{}
				}
				res.Collected[rel] = data
			}
		}
	}
	if runErr != nil {
		res.ExitCode = -1
		if errors.Is(runErr, remote.ErrUnreachable) {
			return res, fmt.Errorf("lost the connection to the Ansible host %s while ansible-playbook ran: %w; "+
				"the Ansible host stops that run and removes its staging directory %s (secrets included) when it sees the connection gone, "+
				"else the next run removes it. The nodes may be half-configured: re-run the operation (it is idempotent)", c.Address(), runErr, stage)
		}
		return res, fmt.Errorf("running ansible-playbook on %s: %w", c.Address(), runErr)
	}
	if code == 127 && len(res.Events) == 0 {
		return res, fmt.Errorf("running ansible-playbook on %s: %w", c.Address(),
			&PlaybookError{ExitCode: code, Stderr: res.Stderr + "\n(is ansible installed on the Ansible host?)"})
	}
	return res, res.Err()
}

// remoteScript changes to dir and runs argv with the non-secret run
// environment, holding a lock on the staging marker (flock, when the host
// has it) so that CleanupStale leaves a live run alone.
//
// A watchdog stops the run when the connection to heatsible is lost: sshd
// gives a non-PTY session no SIGHUP, so without it ansible-playbook would go
// on configuring the nodes unattended (until its next write to the dead
// pipe, or to the end) and leave the staging directory, secrets included,
// behind. The watchdog polls the sshd process that serves the session (the
// shell's parent); once it is gone it sends SIGTERM to the session's process
// group, gives the run watchdogGrace seconds, removes the staging directory
// and kills whatever is left. A run that ends on its own after sshd is gone
// (ansible-playbook dies of SIGPIPE at its next write, often before the
// watchdog's next poll) has its staging directory removed by the script.
func remoteScript(stage, dir string, argv, env []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = remote.ShellQuote(a)
	}
	for i, e := range env {
		env[i] = remote.ShellQuote(e)
	}
	marker := remote.ShellQuote(stage + "/" + MarkerFile)
	return "cd " + remote.ShellQuote(dir) + " || exit 1\n" +
		"lock=\nif command -v flock >/dev/null 2>&1; then lock=\"flock -n " + marker + "\"; fi\n" +
		"$lock env " + strings.Join(env, " ") + " " + strings.Join(q, " ") + " &\n" +
		"run=$! sshd=$PPID watch=\n" +
		"if [ \"$sshd\" -gt 1 ] 2>/dev/null && [ -d /proc/\"$sshd\" ]; then\n" +
		"  (\n" +
		"    while kill -0 \"$run\" 2>/dev/null; do\n" +
		"      if [ ! -d /proc/\"$sshd\" ]; then\n" +
		"        trap '' TERM\n" +
		"        kill -TERM 0\n" +
		"        i=0\n" +
		"        while kill -0 \"$run\" 2>/dev/null && [ $i -lt " + fmt.Sprint(watchdogGrace) + " ]; do sleep 1; i=$((i+1)); done\n" +
		"        rm -rf -- " + remote.ShellQuote(stage) + "\n" +
		"        kill -KILL 0\n" +
		"      fi\n" +
		"      sleep 1\n" +
		"    done\n" +
		"  ) </dev/null >/dev/null 2>&1 &\n" +
		"  watch=$!\n" +
		"fi\n" +
		"wait \"$run\"\nrc=$?\n" +
		"if [ -n \"$watch\" ]; then kill \"$watch\" 2>/dev/null; fi\n" +
		// The run may end before the watchdog's next poll: a write to the
		// dead pipe kills ansible-playbook (SIGPIPE) as soon as sshd is
		// gone. The watchdog was just stopped, so clean up here.
		"if [ -n \"$watch\" ] && [ ! -d /proc/\"$sshd\" ]; then rm -rf -- " + remote.ShellQuote(stage) + "; fi\n" +
		"exit $rc"
}

// watchdogGrace is how many seconds remoteScript's watchdog gives a run to
// stop on SIGTERM before it removes the staging directory and kills it.
const watchdogGrace = 20

// CleanupStale removes staging directories of cluster under the runner's
// BaseDir that a cut connection left behind: those whose marker is older
// than olderThan (0: any age) and not locked by a live run. It returns the
// directories removed.
func (rr *RemoteRunner) CleanupStale(ctx context.Context, cluster string, olderThan time.Duration) ([]string, error) {
	if rr.Client == nil {
		return nil, errors.New("cleaning stale staging directories: no ssh client")
	}
	base := rr.base()
	var baseExpr string
	if rest, ok := strings.CutPrefix(base, "~/"); ok {
		baseExpr = `"$HOME"/` + remote.ShellQuote(rest)
	} else {
		baseExpr = remote.ShellQuote(base)
	}
	prefix := StagingPrefix(cluster, "x")
	prefix = strings.TrimSuffix(prefix, "x-") // "heatsible-<cluster>-"
	age := ""
	if olderThan > 0 {
		mins := int((olderThan + time.Minute - 1) / time.Minute)
		age = fmt.Sprintf(`[ -n "$(find "$m" -maxdepth 0 -mmin +%d)" ] || continue`, mins-1)
	}
	script := `base=` + baseExpr + `
[ -d "$base" ] || exit 0
for d in "$base"/` + remote.ShellQuote(prefix) + `*; do
  m="$d/` + MarkerFile + `"
  [ -d "$d" ] && [ ! -L "$d" ] && [ -f "$m" ] || continue
  ` + age + `
  if command -v flock >/dev/null 2>&1; then flock -n "$m" true || continue; fi
  rm -rf -- "$d" && printf '%s\n' "$d"
done
`
	var out strings.Builder
	var errb strings.Builder
	code, err := rr.Client.Run(ctx, script, &out, &errb)
	if err != nil {
		return nil, fmt.Errorf("cleaning stale staging directories on %s: %w", rr.Client.Address(), err)
	}
	var removed []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if l != "" {
			removed = append(removed, l)
		}
	}
	if code != 0 {
		return removed, fmt.Errorf("cleaning stale staging directories on %s: exit %d: %s", rr.Client.Address(), code, strings.TrimSpace(errb.String()))
	}
	if len(removed) > 0 {
		rr.log().Info("removed stale staging directories", "host", rr.Client.Address(), "dirs", removed)
	}
	return removed, nil
}

var _ io.Writer = (*lineWriter)(nil)
