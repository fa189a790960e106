// Command controlplane runs one component of a real Kubernetes cluster per process, for the
// project's real-control-plane test: etcd (embedded), kube-apiserver, kube-controller-manager,
// kube-scheduler, the kubelet and kube-proxy of the real node, and kubeadm and kubectl (for the kind
// node image, e2e/kind/), all built from their Go modules at the versions pinned in go.mod. The first
// argument names the component; the rest are that component's own flags.
//
//	controlplane etcd --data-dir DIR --client-url http://127.0.0.1:2379 --peer-url http://127.0.0.1:2380
//	controlplane kube-apiserver --etcd-servers=... (the kube-apiserver's flags)
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubeadm "k8s.io/kubernetes/cmd/kubeadm/app"
	kubeadmerrors "k8s.io/kubernetes/cmd/kubeadm/app/util/errors"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	// Called by a component's name (a link, as in the kind node image's component images, whose
	// pods kubeadm starts as `kube-apiserver --flags...`): run that component. `etcd` by that
	// name is etcd's own command line (kubeadm's flags), not the bed's few flags below.
	switch name := filepath.Base(os.Args[0]); name {
	case "etcd":
		etcdmain.Main(os.Args)
		return
	case "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubeadm", "kubectl":
		os.Args = append([]string{name, name}, os.Args[1:]...)
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: controlplane etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kube-proxy|kubeadm|kubectl [flags]")
		os.Exit(2)
	}
	component := os.Args[1]
	// Each component's cobra command parses os.Args[1:]: drop the component's name.
	os.Args = append([]string{component}, os.Args[2:]...)
	switch component {
	case "etcd":
		os.Exit(runEtcd(os.Args[1:]))
	case "kube-apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	case "kubelet":
		os.Exit(cli.Run(kubelet.NewKubeletCommand(context.Background())))
	case "kube-proxy":
		os.Exit(cli.Run(proxy.NewProxyCommand()))
	case "kubeadm":
		kubeadmerrors.HandleError(kubeadm.Run())
	case "kubectl":
		// as cmd/kubectl does: the verbosity first, so building the command can log
		_, _ = logs.GlogSetter(kubectl.GetLogVerbosity(os.Args))
		if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
	default:
		fmt.Fprintf(os.Stderr, "controlplane: unknown component %q\n", component)
		os.Exit(2)
	}
}

// runEtcd serves a single-member etcd until SIGTERM or SIGINT, then stops it cleanly.
func runEtcd(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "etcd data directory (required)")
	clientURL := fs.String("client-url", "http://127.0.0.1:2379", "URL to serve clients on")
	peerURL := fs.String("peer-url", "http://127.0.0.1:2380", "URL to serve peers on")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "etcd: --data-dir is required")
		return 2
	}
	client, err := url.Parse(*clientURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: --client-url: %v\n", err)
		return 2
	}
	peer, err := url.Parse(*peerURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: --peer-url: %v\n", err)
		return 2
	}
	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "warn"
	server, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		return 1
	}
	defer server.Close()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-server.Server.ReadyNotify():
		fmt.Fprintln(os.Stderr, "etcd: ready")
	case err := <-server.Err():
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		return 1
	case <-signals:
		return 0
	}
	select {
	case err := <-server.Err():
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		return 1
	case <-signals:
		return 0
	}
}
