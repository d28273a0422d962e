package ansible

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/heatsible/heatsible/internal/interrupt"
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
// failure or a cancel. All of it happens under the cluster's lock on the
// Ansible host (see Lock; Run takes it for itself when the caller does not
// hold it).
type RemoteRunner struct {
	// Client is the connection to the Ansible host.
	Client *remote.Client
	// BaseDir holds the staging directories (DefaultRemoteBase if empty).
	BaseDir string
	// Logger gets progress and cleanup warnings (slog.Default() if nil).
	Logger *slog.Logger
	// Ansibles are the ansible-playbooks the run will use: Lock finds them
	// in its first round trip (RemoteLock.Ansibles).
	Ansibles []AnsibleWant
	// Peek are files (absolute paths) Lock reads in the same round trip
	// (RemoteLock.Peeked), e.g. the kubespray inventory already there.
	Peek []string

	// lock is the cluster's lock on the Ansible host while Lock holds it.
	lock *RemoteLock
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
func (rr *RemoteRunner) Run(ctx context.Context, b *Bundle, opts PlaybookOptions) (res *Result, err error) {
	if rr.Client == nil {
		return nil, errors.New("remote ansible run: no ssh client")
	}
	defer func() { err = refusal(res, err) }()
	started := time.Now()
	c := rr.Client
	log := rr.log()
	// The cluster's lock on the Ansible host: the caller's (lcm holds it
	// for the whole operation), else one for this run alone.
	lk := rr.lock
	if lk == nil {
		if lk, err = rr.Lock(ctx, b.spec.Cluster, thisHolder(b.spec.Operation), false); err != nil {
			return nil, err
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			defer cancel()
			if rerr := lk.Release(cctx); rerr != nil {
				log.Warn("could not release the cluster's lock on the Ansible host", "host", c.Address(), "err", rerr)
			}
		}()
	} else if lk.cluster != b.spec.Cluster {
		return nil, fmt.Errorf("remote ansible run of cluster %s: the runner holds the lock of cluster %s", b.spec.Cluster, lk.cluster)
	}
	// A run whose connection was cut before the Ansible host noticed (see
	// remoteScript), or whose Ansible host went down, may have left its
	// staging directory, secrets included: remove it now. Directories of
	// live runs are locked and stay.
	if _, err := rr.CleanupStale(ctx, b.spec.Cluster, 0); err != nil {
		log.Warn("could not look for staging directories left by earlier runs", "host", c.Address(), "err", err)
	}
	// The lock session makes the directory and holds it (flock) from its
	// first moment, upload included, until rmstage removes it.
	stage, err := lk.mkstage(ctx, StagingPrefix(b.spec.Cluster, b.spec.Operation))
	if err != nil {
		return nil, fmt.Errorf("staging the ansible bundle on %s: %w", c.Address(), err)
	}
	staged := interrupt.Track(ctx, interrupt.Leftover{What: fmt.Sprintf("left behind: the staging directory %s on the Ansible host %s, "+
		"with the run's secrets (%s, mode 0600): if ansible-playbook still runs there, the Ansible host removes it when it sees the connection gone; "+
		"else the next run of cluster %s does; or remove it there: rm -rf %s", stage, c.Address(), SecretsFile, b.spec.Cluster, remote.ShellQuote(stage))})
	defer func() {
		// A fresh context: the run's may be cancelled already.
		cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if rerr := lk.rmstage(cctx); rerr != nil {
			log.Warn("could not remove the staging directory on the Ansible host; the Ansible host removes it when it sees the connection gone, else the next run does",
				"host", c.Address(), "dir", stage, "err", rerr)
			return
		}
		staged()
		log.Debug("removed staging directory", "host", c.Address(), "dir", stage)
	}()

	log.Debug("made the staging directory", "host", c.Address(), "dir", stage, "took", time.Since(started).Round(time.Millisecond))
	uploading := time.Now()
	if err := c.Upload(ctx, b.Dir, stage); err != nil {
		return nil, fmt.Errorf("uploading the ansible bundle to %s: %w", c.Address(), err)
	}
	// ansible.cfg holds absolute paths: render it for where it now lives.
	if err := c.WriteFile(ctx, stage+"/"+ConfigFile, b.Config(stage), 0o644); err != nil {
		return nil, err
	}
	log.Debug("uploaded the run bundle", "host", c.Address(), "took", time.Since(uploading).Round(time.Millisecond))

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
	running := interrupt.Track(ctx, interrupt.Leftover{What: fmt.Sprintf("left behind: ansible-playbook on the Ansible host %s, in %s: "+
		"the Ansible host stops it (SIGTERM, then SIGKILL after %d s) when it sees the connection gone", c.Address(), stage, watchdogGrace)})
	code, runErr := c.Run(ctx, script, r.out, r.errw)
	running()
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

// remoteScript changes to dir and runs argv in a clean environment (the
// keptEnv variables of the login session, then env, which is runEnv's and
// not secret), holding a lock on the staging marker (flock, when the host
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
// A connection gone before the script starts its watchdog is the same case
// (the watchdog's first look finds sshd gone). A stop (heatsible's cancel
// signals the session's process group) is passed on by the script to the
// run's processes outside that group too (hs_sweep): ansible-core 2.19's
// workers, and the ssh of a password login (SSH_ASKPASS), have sessions of
// their own.
func remoteScript(stage, dir string, argv, env []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = remote.ShellQuote(a)
	}
	venvPath := ""
	for i, e := range env {
		if v, ok := strings.CutPrefix(e, "VIRTUAL_ENV="); ok {
			// its bin/ first in the login's PATH (see PlaybookOptions.Venv)
			venvPath = "PATH=" + remote.ShellQuote(v+"/bin") + ":${PATH:-/usr/local/bin:/usr/bin:/bin}\n"
		}
		env[i] = remote.ShellQuote(e)
	}
	marker := remote.ShellQuote(stage + "/" + MarkerFile)
	return "cd " + remote.ShellQuote(dir) + " || exit 1\n" +
		"lock=\nif command -v flock >/dev/null 2>&1; then lock=\"flock -n " + marker + "\"; fi\n" +
		venvPath + keepEnvScript +
		sweepFunc(stage) +
		// A stop (heatsible's cancel signals this shell's process group)
		// also reaches the run's processes outside the group: 2.19's
		// workers, and the ssh of a password login, each in a session of
		// its own. Those get SIGTERM only (a 2.19 worker and its ssh stop on
		// it); SIGKILL follows for this group, from heatsible's cancel, and
		// from the watchdog when the connection is gone.
		"trap 'trap \"\" TERM INT HUP; kill -TERM 0 2>/dev/null; hs_sweep TERM' TERM INT HUP\n" +
		"$lock env -i \"$@\" " + strings.Join(env, " ") + " " + strings.Join(q, " ") + " &\n" +
		"run=$! sshd=$PPID watch=\n" +
		// The watchdog starts even when sshd is gone already (the
		// connection dropped before the script got here): its first look
		// then stops the run and removes the stage. /proc/$$ (this shell)
		// only says that there is a /proc to look in.
		"if [ \"$sshd\" -gt 1 ] 2>/dev/null && [ -d /proc/$$ ]; then\n" +
		"  (\n" +
		"    trap - TERM INT HUP\n" +
		"    while kill -0 \"$run\" 2>/dev/null; do\n" +
		"      if [ ! -d /proc/\"$sshd\" ]; then\n" +
		"        trap '' TERM\n" +
		"        kill -TERM 0\n" +
		"        hs_sweep TERM\n" +
		"        i=0\n" +
		"        while kill -0 \"$run\" 2>/dev/null && [ $i -lt " + fmt.Sprint(watchdogGrace) + " ]; do sleep 1; i=$((i+1)); done\n" +
		"        rm -rf -- " + remote.ShellQuote(stage) + "\n" +
		"        hs_sweep KILL\n" +
		"        kill -KILL 0\n" +
		"      fi\n" +
		"      sleep 1\n" +
		"    done\n" +
		"  ) </dev/null >/dev/null 2>&1 &\n" +
		"  watch=$!\n" +
		"fi\n" +
		// A trapped signal ends the first wait, not the run.
		"wait \"$run\"\nrc=$?\n" +
		"while kill -0 \"$run\" 2>/dev/null; do wait \"$run\"; rc=$?; done\n" +
		"if [ -n \"$watch\" ]; then kill \"$watch\" 2>/dev/null; fi\n" +
		// The run may end before the watchdog's next poll: a write to the
		// dead pipe kills ansible-playbook (SIGPIPE) as soon as sshd is
		// gone. The watchdog was just stopped, so clean up here.
		"if [ -n \"$watch\" ] && [ ! -d /proc/\"$sshd\" ]; then rm -rf -- " + remote.ShellQuote(stage) + "; fi\n" +
		"exit $rc"
}

// sweepFunc defines hs_sweep SIG: SIG to every process whose command line
// names the staging directory or a path in it (ansible-playbook and its
// workers, and each one's process group; ssh, whose UserKnownHostsFile is
// there), but shells whose "-c" script names it (this one); hs_found is 1
// when there was one. ansible-core 2.19 starts each worker in a session of
// its own, and the ssh of a password login (SSH_ASKPASS) in another, so
// that "kill 0" reaches none of them (signalRun is the same on this
// machine). SIG 0 only looks. The directory must end where the argument
// does or at a "/": another run's /x/heatsible-c-apply-12 is not
// /x/heatsible-c-apply-1's. A process gone between the listing and the read
// is skipped without a word (stderr is the run's). A process it signals
// (SIG not 0) loses its ansible-core 2.19 askpass shared memory, the node's
// password in /dev/shm (askpassShm says why).
func sweepFunc(stage string) string {
	q := remote.ShellQuote(stage)
	return "    hs_sweep() {\n" +
		"      hs_found=\n" +
		"      for d in /proc/[0-9]*; do\n" +
		"        a=$(tr '\\000' '\\n' 2>/dev/null < \"$d/cmdline\") || continue\n" +
		"        case \"$a\n\" in *" + q + "/*|*" + q + "'\n'*) ;; *) continue ;; esac\n" +
		"        [ \"$(printf '%s\\n' \"$a\" | sed -n 2p)\" = -c ] && continue\n" +
		"        p=${d#/proc/} hs_found=1 s=\n" +
		"        [ \"$1\" = 0 ] || s=$(tr '\\000' '\\n' 2>/dev/null < \"$d/environ\" | sed -n 's/^_ANSIBLE_SSH_ASKPASS_SHM=\\(psm_[0-9A-Za-z_]*\\)$/\\1/p')\n" +
		"        kill -s \"$1\" -- \"-$p\" 2>/dev/null; kill -s \"$1\" \"$p\" 2>/dev/null\n" +
		"        for n in $s; do rm -f \"/dev/shm/$n\"; done\n" +
		"      done\n" +
		"    }\n"
}

// keepEnvScript sets the positional parameters to NAME=value for each
// variable of keptEnv that the login session has, for "env -i": the run
// gets those and runEnv, nothing else of the Ansible host's environment.
var keepEnvScript = `set --
for v in ` + strings.Join(keptEnv, " ") + `; do
  eval "[ -z \"\${$v+x}\" ] || set -- \"\$@\" \"$v=\$$v\""
done
`

// watchdogGrace is how many seconds remoteScript's watchdog gives a run to
// stop on SIGTERM before it removes the staging directory and kills it.
const watchdogGrace = 20

// CleanupStale removes staging directories of cluster under the runner's
// BaseDir that earlier runs left behind (a cut connection, an Ansible host
// that went down): those whose marker names exactly this cluster, is older
// than olderThan (0: any age), and whose run is not alive. It returns the
// directories removed.
//
// The name prefix only narrows the search: names are cut to 40 characters
// and "heatsible-a-" also begins cluster a-b's names, so the marker's JSON
// cluster field decides, read by heatsible, not by the shell. A run is alive
// while its lock session holds the directory (from mktemp on, upload
// included) or its ansible-playbook holds the marker; both are flocks, so on
// a host without flock(1) nothing can be told apart and nothing is removed
// (ErrNoFlock).
func (rr *RemoteRunner) CleanupStale(ctx context.Context, cluster string, olderThan time.Duration) ([]string, error) {
	if rr.Client == nil {
		return nil, errors.New("cleaning stale staging directories: no ssh client")
	}
	base := rr.base()
	prefix := strings.TrimSuffix(StagingPrefix(cluster, "x"), "x-") // "heatsible-<cut cluster>-"
	age := ""
	if olderThan > 0 {
		mins := int((olderThan + time.Minute - 1) / time.Minute)
		age = fmt.Sprintf(`[ -n "$(find "$m" -maxdepth 0 -mmin +%d)" ] || continue`, mins-1)
	}
	where := rr.Client.Address()
	out, err := rr.Client.Output(ctx, staleListScript(base, prefix, age))
	if err != nil {
		return nil, fmt.Errorf("cleaning stale staging directories on %s: %w", where, err)
	}
	if out == "noflock" {
		return nil, fmt.Errorf("cleaning stale staging directories on %s: %w: a live run's directory cannot be told from a stale one; nothing removed", where, ErrNoFlock)
	}
	var cands []string
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		dir := strings.TrimLeft(fields[i], "\n")
		var m struct {
			Cluster *string `json:"cluster"`
		}
		if json.Unmarshal([]byte(fields[i+1]), &m) != nil || m.Cluster == nil || *m.Cluster != cluster {
			continue
		}
		if !path.IsAbs(dir) || path.Clean(dir) != dir || !strings.HasPrefix(path.Base(dir), prefix) || strings.ContainsAny(dir, "\n") {
			continue
		}
		cands = append(cands, remote.ShellQuote(dir))
	}
	if len(cands) == 0 {
		return nil, nil
	}
	var sout, serr strings.Builder
	code, err := rr.Client.Run(ctx, staleRemoveScript(cands), &sout, &serr)
	if err != nil {
		return nil, fmt.Errorf("cleaning stale staging directories on %s: %w", where, err)
	}
	if strings.TrimSpace(sout.String()) == "noflock" {
		return nil, fmt.Errorf("cleaning stale staging directories on %s: %w: nothing removed", where, ErrNoFlock)
	}
	var removed []string
	for _, l := range strings.Split(strings.TrimSpace(sout.String()), "\n") {
		if l != "" {
			removed = append(removed, l)
		}
	}
	if code != 0 {
		return removed, fmt.Errorf("cleaning stale staging directories on %s: exit %d: %s", where, code, strings.TrimSpace(serr.String()))
	}
	if len(removed) > 0 {
		rr.log().Info("removed stale staging directories", "host", where, "dirs", removed)
	}
	return removed, nil
}

// staleListScript lists the staging directories under base whose names
// begin with prefix and that hold a marker (and are older than age's
// find test, if any) as "DIR\0MARKER\0" pairs; or says "noflock".
func staleListScript(base, prefix, age string) string {
	return `command -v flock >/dev/null 2>&1 || { echo noflock; exit 0; }
base=` + shellExpr(base) + `
[ -d "$base" ] || exit 0
for d in "$base"/` + remote.ShellQuote(prefix) + `*; do
  m="$d/` + MarkerFile + `"
  { [ -d "$d" ] && [ ! -L "$d" ] && [ -f "$m" ] && [ ! -L "$m" ]; } || continue
  ` + age + `
  printf '%s\0' "$d"; head -c 4096 -- "$m" | tr -d '\0'; printf '\0'
done
exit 0
`
}

// staleRemoveScript removes each of dirs (shell-quoted) only while it can
// take both its locks: no lock session holds the directory and no
// ansible-playbook its marker.
func staleRemoveScript(dirs []string) string {
	return `command -v flock >/dev/null 2>&1 || { echo noflock; exit 0; }
for d in ` + strings.Join(dirs, " ") + `; do
  m="$d/` + MarkerFile + `"
  { [ -d "$d" ] && [ ! -L "$d" ] && [ -f "$m" ] && [ ! -L "$m" ]; } || continue
  flock -n "$d" flock -n "$m" rm -rf -- "$d" && printf '%s\n' "$d"
done
exit 0
`
}

var _ io.Writer = (*lineWriter)(nil)
