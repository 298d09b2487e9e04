// Command coredns is CoreDNS with only the plugins that the real-node cluster's
// Corefile (tools/cluster/coredns.yaml) uses. CoreDNS's own main links every
// plugin, and with them the cloud SDKs of route53, azure and clouddns and a
// tracer, which is most of its build; a cold CI run would compile them for
// nothing. Plugins register themselves when imported, and CoreDNS orders them
// by its own directive list whatever is imported, as an external plugin build
// does.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	coremain.Run()
}
