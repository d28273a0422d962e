// Command kube-controller-manager is k8s.io/kubernetes/cmd/kube-controller-manager, rebuilt from the module proxy.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
