package lcm

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heatsible/heatsible/internal/ansible"
	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/params"
	"github.com/heatsible/heatsible/internal/redact"
	"github.com/heatsible/heatsible/internal/state"
)

// hostilePassword has what Go's json.Marshal escapes (&<>), what JSON,
// repr and YAML escape (quotes, backslash) and what URLs encode.
const hostilePassword = `P{{ 7*7 }}{% raw %}{#'"\$HOME` + "`id`" + `&<>%41 x/é-long-enough`

// TestRecordMasksEveryForm: events and an error carrying the request's
// secrets in their other forms (as json.Marshal, Python's repr and a
// proxy URL write them) leave a record whose files hold no form of any of
// them, whose run.log lines are valid JSON written without HTML escaping,
// and whose error, as the CLI prints it, holds none either.
func TestRecordMasksEveryForm(t *testing.T) {
	stateDir := t.TempDir()
	t.Setenv("HEATSIBLE_STATE_DIR", stateDir)
	req, topo := fixture(t, "valid")
	proxyPassword := "pr&xy/p@ss"
	proxy := "http://" + url.UserPassword("user1", proxyPassword).String() + "@proxy.example.com:3128"
	req.Cluster.MasterNode.Password = hostilePassword
	req.Cluster.Proxy = &params.Proxy{HTTPProxy: proxy}
	f, err := RenderOp(req, topo, "../../testdata/package", Op{Name: OpInstantiateEnd}, "test")
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecord(RunOptions{Operation: OpInstantiateEnd, Request: req, Check: true}, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now())
	rec.Open(topo.Cluster)
	recordFiles(rec, f)
	goHTML, _ := json.Marshal(hostilePassword)
	repr := strings.ReplaceAll(strings.ReplaceAll(hostilePassword, `\`, `\\`), "'", `\'`)
	events := []ansible.Event{
		{Kind: ansible.KindResult, Task: "a & b <c>", Host: "master-0", Status: ansible.StatusFailed,
			Msg: `{"password":` + string(goHTML) + `}`},
		{Kind: ansible.KindResult, Task: "repr", Host: "master-0", Status: ansible.StatusFailed, Msg: "refused ['" + repr + "']"},
		{Kind: ansible.KindResult, Task: "proxy", Host: "master-0", Status: ansible.StatusChanged,
			Diff: "+Acquire::http::Proxy \"" + proxy + "\";\n+pw " + proxyPassword + "\n+lower " + strings.ToLower(url.QueryEscape(proxyPassword)) + "\n"},
	}
	on := recordEvents(rec, nil)
	for _, e := range events {
		on(e)
	}
	res := &ansible.Result{ExitCode: 2, Events: events, Recap: map[string]ansible.HostRecap{"master-0": {Failed: 2}}, RecapComplete: true}
	runErr := fail.With(fail.HostFailed, errors.New("tasks failed: "+string(goHTML)))
	out, err := finishRecord(rec, &RunOutcome{Operation: OpInstantiateEnd, Cluster: topo.Cluster, Check: true, Result: res}, runErr)

	var forms []string
	for _, s := range []string{hostilePassword, proxy} {
		forms = append(forms, redact.Forms(s)...)
	}
	files := checkRecord(t, out.Record, forms)
	for _, f := range forms {
		if strings.Contains(err.Error(), f) {
			t.Errorf("the run's error holds %q: %s", f, err)
		}
	}
	lines := strings.Split(strings.TrimSpace(files[state.RunLog]), "\n")
	for i, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("run.log line %d is not JSON: %s", i+1, l)
		}
	}
	if !strings.Contains(files[state.RunLog], `"task":"a & b <c>"`) {
		t.Errorf("run.log escapes &<> for HTML:\n%s", files[state.RunLog])
	}
	for _, want := range []string{`"msg":"{\"password\":\"********\"}"`, `refused ['********']`, `+pw ********`, `+lower ********`} {
		if !strings.Contains(files[state.RunLog], want) {
			t.Errorf("run.log lacks %s:\n%s", want, files[state.RunLog])
		}
	}
	if strings.Contains(files[filepath.Join("bundle", "secrets.yml")], "p@ss") {
		t.Errorf("secrets.yml holds the proxy password")
	}
}
