package remote_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/heatsible/heatsible/internal/fail"
	"github.com/heatsible/heatsible/internal/remote"
)

// TestErrorsHaveTheDocumentedCodes: this package's errors have exit code
// 3 (docs/cli.md: a host could not be reached or authenticated, or its
// host key is unknown or changed), as they are returned too. Dial's
// errors with a server (authentication, refused, timeout, host keys) are
// checked in TestDialAuth, TestDialUnreachable and TestHostKeyErrors.
func TestErrorsHaveTheDocumentedCodes(t *testing.T) {
	dialErr := func(cfg remote.Config) error {
		cfg.KnownHostsFile = filepath.Join(t.TempDir(), "known_hosts")
		c, err := remote.Dial(context.Background(), cfg)
		if err == nil {
			c.Close()
			t.Fatalf("Dial %+v succeeded", cfg)
		}
		return err
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"ErrUnreachable", remote.ErrUnreachable},
		{"ErrSessionEnded", remote.ErrSessionEnded},
		{"a lost connection", fmt.Errorf("remote command on h: %w: %w", remote.ErrUnreachable, errors.New("EOF"))},
		{"an ended session", fmt.Errorf("%w: writing to it: %w", remote.ErrSessionEnded, errors.New("EOF"))},
		{"a Dial with no user", dialErr(remote.Config{Address: "127.0.0.1:1", Password: "x"})},
		{"a Dial to a bad address", dialErr(remote.Config{Address: "[::1", User: "root", Password: "x"})},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := fail.Code(c.err); got != fail.Unreachable {
				t.Errorf("exit code %d, want %d (%v)", got, fail.Unreachable, c.err)
			}
		})
	}
}
