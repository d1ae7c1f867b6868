// Command etcd is etcd's own server binary, built from the go.etcd.io/etcd/server/v3 module: the etcd module's
// main (go.etcd.io/etcd/v3) replaces its submodules with local paths, which a dependent module ignores, so
// this wrapper calls the same entry point the upstream main does.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
