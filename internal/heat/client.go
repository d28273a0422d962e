package heat

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"gopkg.in/yaml.v3"
)

// ErrNoCredentials is returned by NewClient when the environment names no
// OpenStack cloud.
var ErrNoCredentials = errors.New("no OpenStack credentials: set OS_CLOUD with a clouds.yaml " +
	"or OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME, OS_USER_DOMAIN_NAME and OS_PROJECT_DOMAIN_NAME (source an openrc file); " +
	"clouds.yaml is read from OS_CLIENT_CONFIG_FILE, ./clouds.yaml, ~/.config/openstack/clouds.yaml or /etc/openstack/clouds.yaml")

// Option changes how NewClient connects.
type Option func(*clientOptions)

type clientOptions struct {
	httpClient *http.Client
}

// WithHTTPClient makes every request (Keystone included) go through c, e.g. a
// client whose Transport counts or records requests. TLS settings from
// clouds.yaml (cacert, verify) are then the caller's business.
func WithHTTPClient(c *http.Client) Option {
	return func(o *clientOptions) { o.httpClient = c }
}

// NewClient authenticates the way OpenStack command-line users expect and
// returns an Orchestration (Heat) v1 client:
//
//   - OS_CLOUD set: that cloud of clouds.yaml (searched like
//     python-openstackclient does; OS_CLIENT_CONFIG_FILE overrides the path,
//     secure.yaml is merged, OS_REGION_NAME and OS_INTERFACE override);
//   - otherwise OS_AUTH_URL and friends (an openrc file): OS_USERNAME or
//     OS_USER_ID, OS_PASSWORD, OS_PROJECT_NAME or OS_PROJECT_ID,
//     OS_USER_DOMAIN_NAME/ID, OS_PROJECT_DOMAIN_NAME/ID, OS_REGION_NAME,
//     OS_INTERFACE, OS_CACERT, OS_INSECURE, or an application credential
//     (OS_APPLICATION_CREDENTIAL_ID/NAME and _SECRET), or OS_TOKEN.
//
// Without either it returns ErrNoCredentials.
func NewClient(ctx context.Context, opts ...Option) (*gophercloud.ServiceClient, error) {
	var o clientOptions
	for _, f := range opts {
		f(&o)
	}
	ao, eo, tlsConf, source, err := authFromEnv()
	if err != nil {
		return nil, err
	}
	ao.AllowReauth = true
	provider, err := openstack.NewClient(ao.IdentityEndpoint)
	if err != nil {
		return nil, fmt.Errorf("openstack client for %s (%s): %w", ao.IdentityEndpoint, source, err)
	}
	switch {
	case o.httpClient != nil:
		provider.HTTPClient = *o.httpClient
	case tlsConf != nil:
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tlsConf
		provider.HTTPClient = http.Client{Transport: tr}
	}
	if err := openstack.Authenticate(ctx, provider, ao); err != nil {
		return nil, fmt.Errorf("authenticating to %s (%s): %w", ao.IdentityEndpoint, source, err)
	}
	orch, err := openstack.NewOrchestrationV1(provider, eo)
	if err != nil {
		return nil, fmt.Errorf("finding the Heat (orchestration) endpoint in the catalog of %s (%s, region %q): %w",
			ao.IdentityEndpoint, source, eo.Region, err)
	}
	return orch, nil
}

// authFromEnv resolves credentials from OS_CLOUD (clouds.yaml) or OS_*.
// The OS_* variables are turned into an in-memory clouds.yaml entry, so both
// routes share gophercloud's scope, domain and TLS rules.
func authFromEnv() (gophercloud.AuthOptions, gophercloud.EndpointOpts, *tls.Config, string, error) {
	if name := os.Getenv("OS_CLOUD"); name != "" {
		ao, eo, tc, err := clouds.Parse()
		if err != nil {
			return ao, eo, nil, "", fmt.Errorf("OS_CLOUD=%s: %w", name, err)
		}
		if ao.IdentityEndpoint == "" {
			return ao, eo, nil, "", fmt.Errorf("OS_CLOUD=%s: clouds.yaml has no auth.auth_url for this cloud", name)
		}
		return ao, eo, tc, "OS_CLOUD=" + name, nil
	}
	if os.Getenv("OS_AUTH_URL") == "" {
		return gophercloud.AuthOptions{}, gophercloud.EndpointOpts{}, nil, "", ErrNoCredentials
	}
	auth := map[string]string{}
	for key, vars := range map[string][]string{
		"auth_url":                      {"OS_AUTH_URL"},
		"username":                      {"OS_USERNAME"},
		"user_id":                       {"OS_USER_ID", "OS_USERID"},
		"password":                      {"OS_PASSWORD"},
		"token":                         {"OS_TOKEN"},
		"project_name":                  {"OS_PROJECT_NAME", "OS_TENANT_NAME"},
		"project_id":                    {"OS_PROJECT_ID", "OS_TENANT_ID"},
		"user_domain_name":              {"OS_USER_DOMAIN_NAME"},
		"user_domain_id":                {"OS_USER_DOMAIN_ID"},
		"project_domain_name":           {"OS_PROJECT_DOMAIN_NAME"},
		"project_domain_id":             {"OS_PROJECT_DOMAIN_ID"},
		"domain_name":                   {"OS_DOMAIN_NAME"},
		"domain_id":                     {"OS_DOMAIN_ID"},
		"application_credential_id":     {"OS_APPLICATION_CREDENTIAL_ID"},
		"application_credential_name":   {"OS_APPLICATION_CREDENTIAL_NAME"},
		"application_credential_secret": {"OS_APPLICATION_CREDENTIAL_SECRET"},
		"system_scope":                  {"OS_SYSTEM_SCOPE"},
	} {
		for _, v := range vars {
			if s := os.Getenv(v); s != "" {
				auth[key] = s
				break
			}
		}
	}
	if auth["username"] == "" && auth["user_id"] == "" && auth["application_credential_id"] == "" && auth["token"] == "" {
		return gophercloud.AuthOptions{}, gophercloud.EndpointOpts{}, nil, "", errors.New("OS_AUTH_URL is set but OS_USERNAME (or OS_USER_ID, an application credential or OS_TOKEN) is not")
	}
	if auth["username"] != "" && auth["password"] == "" {
		return gophercloud.AuthOptions{}, gophercloud.EndpointOpts{}, nil, "", errors.New("OS_USERNAME is set but OS_PASSWORD is not")
	}
	cloud := map[string]any{"auth": auth}
	if v := os.Getenv("OS_CACERT"); v != "" {
		cloud["cacert"] = v
	}
	if v := os.Getenv("OS_INSECURE"); v == "true" || v == "1" || v == "yes" {
		cloud["verify"] = false
	}
	doc, err := yaml.Marshal(map[string]any{"clouds": map[string]any{"envvars": cloud}})
	if err != nil {
		return gophercloud.AuthOptions{}, gophercloud.EndpointOpts{}, nil, "", fmt.Errorf("OS_* variables: %w", err)
	}
	ao, eo, tc, err := clouds.Parse(clouds.WithCloudsYAML(bytes.NewReader(doc)), clouds.WithCloudName("envvars"))
	if err != nil {
		return ao, eo, nil, "", fmt.Errorf("OS_* variables: %w", err)
	}
	return ao, eo, tc, "OS_AUTH_URL", nil
}
