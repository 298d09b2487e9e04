// Command etcd is etcd's own server entry point, built here so the test control
// plane needs nothing outside the Go module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
