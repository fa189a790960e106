// Command coredns is CoreDNS with only the plugins the real node's bed needs, built from CoreDNS's
// Go module at the version pinned in go.mod (e2e/versions.env names it too). It serves the
// cluster's zone from the API server, as a cluster's kube-dns does; tests/harness/service_network.py
// runs it as a host process on the node IP. Its flags are CoreDNS's own (-conf Corefile).
//
// CoreDNS's own main imports core/plugin, which links every plugin it ships (clouds, etcd, dnstap,
// grpc, quic, ...); this one imports only those below, so the build stays small. The plugins'
// order in a server block comes from core/dnsserver's directive list, whatever is linked.
package main

import (
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"       // listen on the node IP only
	_ "github.com/coredns/coredns/plugin/cache"      // answers cached, as a cluster's Corefile does
	_ "github.com/coredns/coredns/plugin/errors"     // errors to the log
	_ "github.com/coredns/coredns/plugin/health"     // /health for liveness
	_ "github.com/coredns/coredns/plugin/kubernetes" // the cluster zone from the API server
	_ "github.com/coredns/coredns/plugin/log"        // one line a query (for a failing test's report)
	_ "github.com/coredns/coredns/plugin/ready"      // /ready once the kubernetes plugin has synced
)

func main() {
	coremain.Run()
}
