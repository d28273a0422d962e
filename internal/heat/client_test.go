package heat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeKeystone answers POST /v3/auth/tokens with a catalog whose
// orchestration endpoint is heatURL, and remembers the last auth body.
func fakeKeystone(t *testing.T, heatURL string) (*httptest.Server, *map[string]any) {
	t.Helper()
	var last map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/v3/auth/tokens" {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		last = nil
		_ = json.Unmarshal(b, &last)
		pw, _ := json.Marshal(last)
		if !strings.Contains(string(pw), `"password":"s3cret"`) {
			http.Error(w, `{"error": {"code": 401, "message": "The request you have made requires authentication."}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Subject-Token", "fixture-token")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token": {"expires_at": "2099-01-01T00:00:00.000000Z", "methods": ["password"],
 "user": {"id": "u1", "name": "admin", "domain": {"id": "default", "name": "Default"}},
 "project": {"id": %q, "name": "admin", "domain": {"id": "default", "name": "Default"}},
 "catalog": [{"type": "orchestration", "name": "heat", "id": "h1", "endpoints": [
   {"id": "e1", "interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": %q}]}]}}`,
			fixtureProject, heatURL+"/v1/"+fixtureProject)
	}))
	t.Cleanup(srv.Close)
	return srv, &last
}

func clearOSEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OS_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func TestNewClientFromEnvAndDiscover(t *testing.T) {
	f := recorded(t)
	_, heat := serve(t, f)
	ks, last := fakeKeystone(t, heat.URL)
	clearOSEnv(t)
	for k, v := range map[string]string{"OS_AUTH_URL": ks.URL + "/v3", "OS_USERNAME": "admin", "OS_PASSWORD": "s3cret",
		"OS_PROJECT_NAME": "admin", "OS_USER_DOMAIN_NAME": "Default", "OS_PROJECT_DOMAIN_NAME": "Default", "OS_REGION_NAME": "RegionOne"} {
		t.Setenv(k, v)
	}
	cnt := &counter{rt: http.DefaultTransport}
	client, err := NewClient(context.Background(), WithHTTPClient(&http.Client{Transport: cnt}))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(*last)
	for _, want := range []string{`"project":{"domain":{"name":"Default"},"name":"admin"}`, `"user":{"domain":{"name":"Default"},"name":"admin","password":"s3cret"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("auth body %s lacks %s", body, want)
		}
	}
	if n := len(cnt.reset()); n != 1 {
		t.Errorf("auth: %d requests, want 1", n)
	}
	if _, err := Discover(context.Background(), client, f.name, tacker()); err != nil {
		t.Fatal(err)
	}
	if reqs := cnt.reset(); len(reqs) != 3 {
		t.Errorf("Discover: %d requests, want 3: %v", len(reqs), reqs)
	}
}

func TestNewClientFromCloudsYAML(t *testing.T) {
	_, heat := serve(t, recorded(t))
	ks, _ := fakeKeystone(t, heat.URL)
	clearOSEnv(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "clouds.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`clouds:
  bed:
    auth:
      auth_url: %s/v3
      username: admin
      password: s3cret
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
`, ks.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OS_CLOUD", "bed")
	t.Setenv("OS_CLIENT_CONFIG_FILE", path)
	client, err := NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(client.Endpoint, "/v1/"+fixtureProject+"/") {
		t.Errorf("endpoint %s", client.Endpoint)
	}

	t.Setenv("OS_CLOUD", "other")
	if _, err := NewClient(context.Background()); err == nil || !strings.Contains(err.Error(), "OS_CLOUD=other") {
		t.Errorf("unknown cloud: err = %v", err)
	}
	t.Setenv("OS_CLOUD", "bed")
	t.Setenv("OS_REGION_NAME", "RegionTwo")
	if _, err := NewClient(context.Background()); err == nil || !strings.Contains(err.Error(), "RegionTwo") {
		t.Errorf("wrong region: err = %v", err)
	}
}

func TestNewClientErrors(t *testing.T) {
	clearOSEnv(t)
	if _, err := NewClient(context.Background()); !errors.Is(err, ErrNoCredentials) ||
		!strings.Contains(err.Error(), "set OS_CLOUD with a clouds.yaml or OS_AUTH_URL") {
		t.Errorf("no credentials: err = %v", err)
	}
	t.Setenv("OS_AUTH_URL", "http://127.0.0.1:1/v3")
	if _, err := NewClient(context.Background()); err == nil || !strings.Contains(err.Error(), "OS_USERNAME") {
		t.Errorf("no user: err = %v", err)
	}
	t.Setenv("OS_USERNAME", "admin")
	if _, err := NewClient(context.Background()); err == nil || !strings.Contains(err.Error(), "OS_PASSWORD") {
		t.Errorf("no password: err = %v", err)
	}
	ks, _ := fakeKeystone(t, "http://127.0.0.1:1")
	t.Setenv("OS_AUTH_URL", ks.URL+"/v3")
	t.Setenv("OS_PASSWORD", "wrong")
	t.Setenv("OS_PROJECT_NAME", "admin")
	t.Setenv("OS_USER_DOMAIN_NAME", "Default")
	t.Setenv("OS_PROJECT_DOMAIN_NAME", "Default")
	if _, err := NewClient(context.Background()); err == nil || !strings.Contains(err.Error(), "authenticating to "+ks.URL) {
		t.Errorf("bad password: err = %v", err)
	}
}
