// Command coredns is CoreDNS with the plugins of the Corefile kubeadm writes (errors, health,
// ready, kubernetes, prometheus, forward, cache, loop, reload, loadbalance), built from CoreDNS's
// Go module at the version pinned in go.mod: the CoreDNS image of the kind node image
// (e2e/kind/node-image.sh). The bed's own CoreDNS (e2e/coredns) links fewer and cannot read
// kubeadm's Corefile ("no action found for directive 'reload'").
package main

import (
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
