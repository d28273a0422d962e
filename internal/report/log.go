package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/heatsible/heatsible/internal/ansible"
)

// Kinds of run.log lines besides ansible's events (ansible.Kind*).
const (
	// KindStart opens a run: operation, cluster, where, check, limit, tags.
	KindStart ansible.Kind = "start"
	// KindRecap is ansible's recap (or the one counted from the events when
	// Complete is false), with ansible-playbook's exit code.
	KindRecap ansible.Kind = "recap"
	// KindError is the run's error and heatsible's exit code.
	KindError ansible.Kind = "error"
	// KindEnd closes a run: ok and the duration.
	KindEnd ansible.Kind = "end"
)

// LogLine is one line of a run record's run.log (JSON lines): the start,
// every ansible event as it arrived, the recap, the error if any, the end.
// Every string in it has been masked.
type LogLine struct {
	ansible.Event

	// KindStart.
	Operation string   `json:"operation,omitempty"`
	Cluster   string   `json:"cluster,omitempty"`
	Where     string   `json:"where,omitempty"`
	Check     bool     `json:"check,omitempty"`
	Limit     string   `json:"limit,omitempty"`
	Tags      []string `json:"tags,omitempty"`
	Version   string   `json:"version,omitempty"`
	// KindRecap.
	Command  []string                     `json:"command,omitempty"`
	Recap    map[string]ansible.HostRecap `json:"recap,omitempty"`
	Complete bool                         `json:"complete,omitempty"`
	// ExitCode is ansible-playbook's (KindRecap) or heatsible's (KindError,
	// KindEnd).
	ExitCode *int `json:"exit_code,omitempty"`
	// KindError.
	Error string `json:"error,omitempty"`
	// KindEnd.
	OK      *bool   `json:"ok,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
}

// ReadLog reads a run.log back into the Input its report is built from.
func ReadLog(r io.Reader) (Input, error) {
	var in Input
	res := &ansible.Result{ExitCode: -1}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	n := 0
	for sc.Scan() {
		n++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l LogLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return in, fmt.Errorf("run.log line %d: %w", n, err)
		}
		switch l.Kind {
		case KindStart:
			in.Operation, in.Cluster, in.Where, in.Check, in.Limit, in.Tags = l.Operation, l.Cluster, l.Where, l.Check, l.Limit, l.Tags
			res.Started = l.Time
		case KindRecap:
			res.Recap, res.RecapComplete, res.Command, res.Finished = l.Recap, l.Complete, l.Command, l.Time
			if l.ExitCode != nil {
				res.ExitCode = *l.ExitCode
			}
		case KindError:
			in.Err = errors.New(l.Error)
		case KindEnd:
		default:
			res.Events = append(res.Events, l.Event)
		}
	}
	if err := sc.Err(); err != nil {
		return in, err
	}
	if len(res.Events) > 0 || res.Recap != nil {
		in.Result = res
	}
	return in, nil
}
