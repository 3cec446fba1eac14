// trivy-fixture writes a trivy advisory database (BoltDB, trivy-db's schema 2) from
// fixture files in the format trivy's own tests load (aquasecurity/bolt-fixtures: buckets,
// nested buckets, keys with their JSON values). The tests of `imgkit scan --scanner trivy`
// make their offline database with it; trivy reads it as the one it downloads.
//
//	trivy-fixture DB_FILE FIXTURE.yaml...
//	trivy-fixture --version
package main

import (
	"fmt"
	"os"

	fixtures "github.com/aquasecurity/bolt-fixtures"
)

var version = "dev" // set by .ci/build-scanner.sh

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println("trivy-fixture", version)
		return
	}
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: trivy-fixture DB_FILE FIXTURE.yaml...")
		os.Exit(2)
	}
	loader, err := fixtures.New(os.Args[1], os.Args[2:])
	if err == nil {
		err = loader.Load()
		if closeErr := loader.Close(); err == nil {
			err = closeErr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "trivy-fixture:", err)
		os.Exit(1)
	}
}
