module imgkit.invalid/trivy-fixture

go 1.22

require github.com/aquasecurity/bolt-fixtures v0.0.0-20200903104109-d34e7f983986

require (
	github.com/fatih/color v1.9.0 // indirect
	github.com/goccy/go-yaml v1.8.1 // indirect
	github.com/mattn/go-colorable v0.1.7 // indirect
	github.com/mattn/go-isatty v0.0.12 // indirect
	go.etcd.io/bbolt v1.3.5 // indirect
	golang.org/x/sys v0.0.0-20200831180312-196b9ba8737a // indirect
	golang.org/x/xerrors v0.0.0-20200804184101-5ec99f83aff1 // indirect
)
