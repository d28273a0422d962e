module github.com/heatsible/heatsible

go 1.26.8

require (
	github.com/Masterminds/sprig/v3 v3.3.0
	github.com/apenella/go-ansible/v2 v2.4.1
	github.com/gophercloud/gophercloud/v2 v2.15.0
	github.com/pkg/sftp v1.13.9
	github.com/spf13/cobra v1.10.1
	golang.org/x/crypto v0.55.0
	golang.org/x/sync v0.17.0
	gopkg.in/ini.v1 v1.67.0
	gopkg.in/yaml.v3 v3.0.1
	sigs.k8s.io/yaml v1.4.0
)

require (
	dario.cat/mergo v1.0.1 // indirect
	github.com/Masterminds/goutils v1.1.1 // indirect
	github.com/Masterminds/semver/v3 v3.3.0 // indirect
	github.com/apenella/go-common-utils/data v0.0.0-20220913191136-86daaa87e7df // indirect
	github.com/apenella/go-common-utils/error v0.0.0-20220913191136-86daaa87e7df // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/huandu/xstrings v1.5.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/kr/fs v0.1.0 // indirect
	github.com/mitchellh/copystructure v1.2.0 // indirect
	github.com/mitchellh/reflectwalk v1.0.2 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/shopspring/decimal v1.4.0 // indirect
	github.com/spf13/cast v1.7.0 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	github.com/stretchr/objx v0.5.3 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
	golang.org/x/sys v0.47.0 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
)
