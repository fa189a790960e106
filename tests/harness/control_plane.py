"""A real Kubernetes control plane and real KEDA on 127.0.0.1, for the end-to-end test.

Everything but the kubelet is the real thing, built from Go modules by ``e2e/build.sh`` (pinned
in ``e2e/versions.env`` and ``e2e/controlplane/go.mod``) into a cache directory outside the
repository:

- etcd (embedded, ``go.etcd.io/etcd/server/v3``), kube-apiserver (client-certificate auth, Node
  and RBAC authorization, NodeRestriction, the aggregation layer, a client certificate for the
  kubelets), kube-controller-manager (every controller, the HPA synced every ``hpa_sync_s``),
  kube-scheduler: one ``controlplane`` binary, one process each;
- kwok (``sigs.k8s.io/kwok``, unless ``kwok=False``) stands for the kubelets: it keeps fake nodes
  Ready and sets the status of the pods bound to them (Running, Ready; deleted pods are
  finalized); a real kubelet can join beside it (``tests/harness/real_node.py``);
- KEDA's operator and metrics adapter, out of cluster, talking mTLS to each other, the adapter
  registered as ``v1beta1.external.metrics.k8s.io`` through an ExternalName Service that
  resolves to 127.0.0.1 (Endpoints refuse loopback addresses).

Usage::

    with ControlPlane.start(workdir, bin_dir) as cp:
        cp.kubectl("apply", "-k", overlay)
        cp.add_nodes(12, cpu="16", memory="64Gi")

Every process runs in its own session and is stopped by its PID (SIGTERM, grace, SIGKILL).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from tls_certs import Pem

from keda_ray_scaler.demo.raylets import distinct_free_ports, free_port

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "e2e" / "build.sh"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
SERVICE_CIDR = "10.0.0.0/24"  # the API server's Service range (ClusterIPs)
_STOP_GRACE_S = 2.0  # then SIGKILL: everything lives in a temporary directory


# ---------------------------------------------------------------------------------------------
# PKI


@dataclass(frozen=True)
class Authority:
    """A certificate authority that issues leaf certificates."""

    name: x509.Name
    key: ec.EllipticCurvePrivateKey
    pair: Pem

    @classmethod
    def create(cls, common_name: str) -> Authority:
        """A self-signed CA valid from an hour ago for two days."""
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        builder = _validity(x509.CertificateBuilder()).subject_name(name).issuer_name(name)
        cert = (
            builder.public_key(key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        return cls(name, key, Pem(_cert_pem(cert), _key_pem(key)))

    def issue(
        self,
        common_name: str,
        *,
        organizations: Sequence[str] = (),
        server: bool = False,
        client: bool = False,
        hosts: Sequence[str] = (),
    ) -> Pem:
        """A leaf certificate for ``common_name`` (O = each of ``organizations``)."""
        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        usages = [ExtendedKeyUsageOID.SERVER_AUTH] * server + [ExtendedKeyUsageOID.CLIENT_AUTH] * (
            client
        )
        builder = (
            _validity(x509.CertificateBuilder())
            .subject_name(x509.Name(attributes))
            .issuer_name(self.name)
            .public_key(key.public_key())
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        if hosts:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_general_name(h) for h in hosts]), critical=False
            )
        return Pem(_cert_pem(builder.sign(self.key, hashes.SHA256())), _key_pem(key))


def _validity(builder: x509.CertificateBuilder) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        builder.serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
    )


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def service_account_keys() -> Pem:
    """An RSA key pair for service-account tokens (``cert`` holds the public key)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return Pem(public, _key_pem(key))


def write_kubeconfig(
    path: Path,
    server: str,
    ca: Path,
    *,
    user: str,
    cert: Path | None = None,
    key: Path | None = None,
    token: str | None = None,
) -> Path:
    """A kubeconfig with one cluster, one user (client certificate or bearer token), one context."""
    credentials: dict[str, str] = {}
    if cert is not None and key is not None:
        credentials = {"client-certificate": str(cert), "client-key": str(key)}
    if token is not None:
        credentials["token"] = token
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "local", "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
        "current-context": "local",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


# ---------------------------------------------------------------------------------------------
# processes


@dataclass
class Process:
    """One control-plane process in its own session, with its log file."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None

    def alive(self) -> bool:
        """True while it runs."""
        return self.popen.poll() is None

    def tail(self, chars: int = 3000) -> str:
        """The end of its log."""
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return ""

    def stop(self, grace_s: float = _STOP_GRACE_S) -> None:
        """SIGTERM by PID, wait up to ``grace_s`` for it to exit, then SIGKILL."""
        self.terminate()
        self.finish(time.monotonic() + grace_s)

    def terminate(self) -> None:
        """SIGTERM by PID, if it still runs."""
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.popen.pid, signal.SIGTERM)

    def finish(self, deadline: float) -> None:
        """Wait for the exit until ``deadline`` (monotonic), then SIGKILL."""
        try:
            self.popen.wait(max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)


def spawn(
    name: str, args: Sequence[str], log_dir: Path, env: dict[str, str] | None = None
) -> Process:
    """Start ``args`` in a new session with stdout and stderr to ``log_dir/<name>.log``."""
    log = log_dir / f"{name}.log"
    with log.open("ab") as out:
        popen = subprocess.Popen(
            list(args),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, **(env or {})},
            cwd=log_dir,
        )
    return Process(name, popen, log, tuple(args), env)


def wait_until(
    check: Callable[[], Any],
    *,
    timeout_s: float,
    what: str,
    interval_s: float = 0.25,
    alive: Sequence[Process] = (),
) -> Any:
    """Call ``check`` until it returns a truthy value; fail with the logs of a dead process."""
    deadline = time.monotonic() + timeout_s
    while True:
        for process in alive:
            if not process.alive():
                raise RuntimeError(
                    f"{process.name} exited while waiting for {what}:\n{process.tail()}"
                )
        with contextlib.suppress(subprocess.CalledProcessError, OSError):
            value = check()
            if value:
                return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(interval_s)


def build_binaries() -> Path:
    """Run ``e2e/build.sh`` (a cache hit when built before); the directory of the binaries."""
    env = dict(os.environ)
    if os.environ.get("KRS_REAL_HOME"):  # tests/conftest.py points HOME at a temp dir
        env["HOME"] = os.environ["KRS_REAL_HOME"]
    out = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], check=True, stdout=subprocess.PIPE, text=True, env=env
    ).stdout
    return Path(out.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# the control plane


@dataclass
class ControlPlane:
    """etcd, API server, controller-manager, scheduler, kwok, KEDA: see the module docstring."""

    workdir: Path
    bin_dir: Path
    hpa_sync_s: float = 2.0
    kwok: bool = True
    #: the real node's IP, where pods reach the API server (the bed only: its network namespace
    #: holds nothing but loopback and that IP): the API server listens there too and advertises
    #: it, so the ``kubernetes`` Service has that endpoint and pods on the bridge reach the API
    #: server at its ClusterIP through kube-proxy, as on a cluster. None: loopback only.
    node_ip: str | None = None
    processes: dict[str, Process] = field(default_factory=dict)
    apiserver_port: int = 0
    ca: Authority | None = None

    @property
    def pki(self) -> Path:
        """Where the certificates and keys live."""
        return self.workdir / "pki"

    @property
    def server(self) -> str:
        """The API server's URL."""
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def admin_kubeconfig(self) -> Path:
        """A kubeconfig of a ``system:masters`` user."""
        return self.workdir / "admin.kubeconfig"

    @property
    def ca_file(self) -> Path:
        """The cluster CA's certificate."""
        return self.pki / "ca.crt"

    def _bin(self, name: str) -> str:
        return str(self.bin_dir / "bin" / name)

    def _spawn(self, name: str, args: Sequence[str], env: dict[str, str] | None = None) -> Process:
        process = spawn(name, args, self.workdir / "logs", env)
        self.processes[name] = process
        return process

    # -- start-up ------------------------------------------------------------------------------

    @classmethod
    @contextlib.contextmanager
    def start(
        cls,
        workdir: Path,
        bin_dir: Path,
        *,
        hpa_sync_s: float = 2.0,
        kwok: bool = True,
        node_ip: str | None = None,
    ) -> Iterator[ControlPlane]:
        """Start everything (kwok only with ``kwok``); stop every process (by PID) on exit."""
        cp = cls(workdir, bin_dir, hpa_sync_s, kwok, node_ip)
        try:
            cp.boot()
            yield cp
        finally:
            cp.stop()

    def boot(self) -> None:
        """PKI, etcd, API server, controller-manager, scheduler, kwok (if ``kwok``), KEDA; each
        waited for."""
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        self.pki.mkdir(parents=True, exist_ok=True)
        self._make_pki()
        self._start_etcd()
        self._start_apiserver()
        self._start_controllers()
        if self.kwok:
            self._start_kwok()
        self._start_keda()

    def restart(self, name: str, down_s: float = 0.0) -> float:
        """Stop process ``name`` (SIGTERM, grace), leave it down ``down_s`` seconds (the fault's
        length, not a wait for an event), start it again with the same arguments; for the API
        server, wait until it is ready. The seconds it was down."""
        old = self.processes[name]
        old.stop()
        stopped = time.monotonic()
        time.sleep(down_s)
        new = self._spawn(name, old.args, old.env)
        if name == "kube-apiserver":
            self._wait_apiserver_ready(new)
        return time.monotonic() - stopped

    def wait_crds_established(self, timeout_s: float = 120) -> None:
        """Every CRD Established. ``kubectl wait`` fails at once on a CRD the API server has not
        given a status yet (".status.conditions accessor error: <nil>", seen under load), so it
        is asked again until it passes."""
        wait_until(
            lambda: (
                self.kubectl(
                    "wait",
                    "--for=condition=Established",
                    "--timeout=30s",
                    "crd",
                    "--all",
                    check=False,
                ).returncode
                == 0
            ),
            timeout_s=timeout_s,
            what="every CRD Established",
            interval_s=1.0,
        )

    def _make_pki(self) -> None:
        self.ca = ca = Authority.create("keda-ray-scaler-e2e-ca")
        ca.pair.write(self.pki, "ca")
        front = Authority.create("keda-ray-scaler-e2e-front-proxy-ca")
        front.pair.write(self.pki, "front-proxy-ca")
        front.issue("front-proxy-client", client=True).write(self.pki, "front-proxy-client")
        hosts = ["127.0.0.1", "localhost", "kubernetes", "kubernetes.default.svc", "10.0.0.1"]
        hosts += [self.node_ip] if self.node_ip else []
        ca.issue("kube-apiserver", server=True, hosts=hosts).write(self.pki, "apiserver")
        # The API server's client certificate towards kubelets (logs, exec, port-forward).
        ca.issue(
            "kube-apiserver-kubelet-client", organizations=["system:masters"], client=True
        ).write(self.pki, "apiserver-kubelet-client")
        service_account_keys().write(self.pki, "sa")
        # KEDA's operator and adapter talk mTLS from one directory: ca.crt, tls.crt, tls.key.
        keda = self.pki / "keda"
        keda.mkdir(exist_ok=True)
        (keda / "ca.crt").write_bytes(ca.pair.cert)
        # The aggregator checks the adapter's certificate for the Service's DNS name.
        hosts = ["127.0.0.1", "localhost", "keda-metrics-apiserver.keda.svc"]
        pair = ca.issue("keda", server=True, client=True, hosts=hosts)
        (keda / "tls.crt").write_bytes(pair.cert)
        (keda / "tls.key").write_bytes(pair.key)

    def user_kubeconfig(self, user: str, organizations: Sequence[str] = ()) -> Path:
        """A kubeconfig with a client certificate for ``user`` (groups ``organizations``)."""
        assert self.ca is not None
        cert, key = self.ca.issue(user, organizations=organizations, client=True).write(
            self.pki, user.replace(":", "-")
        )
        path = self.workdir / f"{user.replace(':', '-')}.kubeconfig"
        return write_kubeconfig(path, self.server, self.ca_file, user=user, cert=cert, key=key)

    def _start_etcd(self) -> None:
        client, peer = distinct_free_ports(2)  # one process's two ports: never the same one
        self.etcd_url = f"http://127.0.0.1:{client}"
        process = self._spawn(
            "etcd",
            [
                self._bin("controlplane"),
                "etcd",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--client-url={self.etcd_url}",
                f"--peer-url=http://127.0.0.1:{peer}",
            ],
        )
        wait_until(
            lambda: "etcd: ready" in process.tail(), timeout_s=60, what="etcd", alive=[process]
        )

    def _start_apiserver(self) -> None:
        self.apiserver_port = free_port()
        p = self.pki
        process = self._spawn(
            "kube-apiserver",
            [
                self._bin("controlplane"),
                "kube-apiserver",
                f"--etcd-servers={self.etcd_url}",
                *(
                    ("--bind-address=127.0.0.1", "--advertise-address=127.0.0.1")
                    if self.node_ip is None
                    else ("--bind-address=0.0.0.0", f"--advertise-address={self.node_ip}")
                ),
                f"--secure-port={self.apiserver_port}",
                f"--endpoint-reconciler-type={'none' if self.node_ip is None else 'lease'}",
                f"--cert-dir={p}",
                f"--tls-cert-file={p / 'apiserver.crt'}",
                f"--tls-private-key-file={p / 'apiserver.key'}",
                f"--client-ca-file={p / 'ca.crt'}",
                # Node: a kubelet may read what its own pods need; RBAC gives system:nodes nothing.
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction",
                f"--kubelet-client-certificate={p / 'apiserver-kubelet-client.crt'}",
                f"--kubelet-client-key={p / 'apiserver-kubelet-client.key'}",
                f"--kubelet-certificate-authority={p / 'ca.crt'}",
                "--kubelet-preferred-address-types=InternalIP",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={p / 'sa.crt'}",
                f"--service-account-signing-key-file={p / 'sa.key'}",
                f"--requestheader-client-ca-file={p / 'front-proxy-ca.crt'}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-username-headers=X-Remote-User",
                f"--proxy-client-cert-file={p / 'front-proxy-client.crt'}",
                f"--proxy-client-key-file={p / 'front-proxy-client.key'}",
                "--allow-privileged=true",
                "--v=1",
            ],
        )
        admin = self.user_kubeconfig("kubernetes-admin", ["system:masters"])
        admin.rename(self.admin_kubeconfig)
        self._wait_apiserver_ready(process)

    def _wait_apiserver_ready(self, process: Process) -> None:
        wait_until(
            lambda: self.kubectl("get", "--raw=/readyz", check=False).returncode == 0,
            timeout_s=90,
            what="kube-apiserver /readyz",
            interval_s=0.5,
            alive=[process],
        )

    def _start_controllers(self) -> None:
        cm = self.user_kubeconfig("system:kube-controller-manager")
        manager = self._spawn(
            "kube-controller-manager",
            [
                self._bin("controlplane"),
                "kube-controller-manager",
                f"--kubeconfig={cm}",
                f"--authentication-kubeconfig={cm}",
                f"--authorization-kubeconfig={cm}",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                "--controllers=*",
                "--use-service-account-credentials",
                f"--service-account-private-key-file={self.pki / 'sa.key'}",
                f"--root-ca-file={self.ca_file}",
                f"--horizontal-pod-autoscaler-sync-period={self.hpa_sync_s:g}s",
                "--leader-elect=false",
                "--v=1",
            ],
        )
        sched = self.user_kubeconfig("system:kube-scheduler")
        scheduler = self._spawn(
            "kube-scheduler",
            [
                self._bin("controlplane"),
                "kube-scheduler",
                f"--kubeconfig={sched}",
                f"--authentication-kubeconfig={sched}",
                f"--authorization-kubeconfig={sched}",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                "--leader-elect=false",
                "--v=1",
            ],
        )
        wait_until(
            lambda: self.kubectl("get", "serviceaccount", "default", check=False).returncode == 0,
            timeout_s=90,
            what="the default ServiceAccount (controller-manager running)",
            interval_s=0.5,
            alive=[manager, scheduler],
        )

    def _start_kwok(self) -> None:
        stages = sorted((self.bin_dir / "kwok-stages").glob("*.yaml"))
        args = [
            self._bin("kwok"),
            f"--kubeconfig={self.admin_kubeconfig}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
            "--node-lease-duration-seconds=40",
            "--node-ip=127.0.0.1",
            f"--server-address=127.0.0.1:{free_port()}",
            "--cidr=10.64.0.1/16",
        ]
        args += [f"--config={s}" for s in stages]
        process = self._spawn("kwok", args)
        wait_until(lambda: len(process.tail()) > 0, timeout_s=30, what="kwok", alive=[process])

    def add_nodes(
        self, count: int, *, prefix: str = "node", cpu: str, memory: str, gpus: int = 0
    ) -> list[str]:
        """``count`` fake nodes managed by kwok, each with ``cpu`` and ``memory`` allocatable;
        with ``gpus``, ``nvidia.com/gpu`` too and the taint GPU nodes carry."""
        if "kwok" not in self.processes:
            raise RuntimeError("fake nodes need kwok: ControlPlane.start(..., kwok=True)")
        names = [f"{prefix}-{i}" for i in range(count)]
        docs = [_node(name, cpu, memory, gpus) for name in names]
        self.kubectl("apply", "-f", "-", input="\n---\n".join(yaml.safe_dump(d) for d in docs))
        self.wait_nodes_ready(names)
        return names

    def wait_nodes_ready(self, names: Sequence[str], timeout_s: float = 60) -> None:
        """Wait until kwok reports every node in ``names`` Ready."""

        def ready() -> bool:
            nodes = self.get_json("nodes")["items"]
            ok = {
                n["metadata"]["name"]
                for n in nodes
                for c in n.get("status", {}).get("conditions", [])
                if c["type"] == "Ready" and c["status"] == "True"
            }
            return set(names) <= ok

        wait_until(
            ready, timeout_s=timeout_s, what="kwok nodes Ready", alive=[self.processes["kwok"]]
        )

    def _start_keda(self) -> None:
        crds = sorted((self.bin_dir / "keda-crds").glob("*.yaml"))
        self.kubectl("apply", "--server-side", *[f"--filename={c}" for c in crds])
        self.wait_crds_established()
        self.kubectl("create", "namespace", "keda")
        keda_dir = self.pki / "keda"
        env = {
            "WATCH_NAMESPACE": "",
            "POD_NAMESPACE": "keda",
            "KEDA_CLUSTER_OBJECT_NAMESPACE": "keda",
            "KUBECONFIG": str(self.admin_kubeconfig),
        }
        # KEDA's five ports chosen together: ports chosen one by one were freed before the next
        # was chosen, and the adapter once got its --secure-port again as its --port (bind:
        # address already in use; the whole bed failed, 2026-11-28)
        grpc, metrics, health, adapter_port, adapter_metrics = distinct_free_ports(5)
        grpc_addr = f"127.0.0.1:{grpc}"
        operator = self._spawn(
            "keda-operator",
            [
                self._bin("keda-operator"),
                "--enable-cert-rotation=false",
                f"--cert-dir={keda_dir}",
                f"--metrics-bind-address=127.0.0.1:{metrics}",
                f"--health-probe-bind-address=127.0.0.1:{health}",
                f"--metrics-service-bind-address={grpc_addr}",
                "--zap-log-level=info",
            ],
            env,
        )
        adapter = self._spawn(
            "keda-adapter",
            [
                self._bin("keda-adapter"),
                f"--metrics-service-address={grpc_addr}",
                "--metrics-service-grpc-authority=localhost",
                f"--secure-port={adapter_port}",
                "--bind-address=127.0.0.1",
                f"--cert-dir={keda_dir}",
                f"--tls-cert-file={keda_dir / 'tls.crt'}",
                f"--tls-private-key-file={keda_dir / 'tls.key'}",
                f"--lister-kubeconfig={self.admin_kubeconfig}",
                f"--authentication-kubeconfig={self.admin_kubeconfig}",
                f"--authorization-kubeconfig={self.admin_kubeconfig}",
                f"--port={adapter_metrics}",  # its own /metrics, :8080 by default
                "--v=1",
            ],
            env,
        )
        self._register_external_metrics(adapter_port)
        wait_until(
            lambda: self._apiservice_available("v1beta1.external.metrics.k8s.io"),
            timeout_s=90,
            what="KEDA's external metrics APIService Available",
            interval_s=0.5,
            alive=[operator, adapter],
        )

    def _register_external_metrics(self, port: int) -> None:
        # Endpoints and EndpointSlices refuse loopback addresses; the aggregator resolves an
        # ExternalName Service to https://<externalName>:<port> (enable-aggregator-routing off).
        docs: list[dict[str, Any]] = [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "keda-metrics-apiserver", "namespace": "keda"},
                "spec": {
                    "type": "ExternalName",
                    "externalName": "127.0.0.1",
                    "ports": [{"name": "https", "port": port, "targetPort": port}],
                },
            },
            {
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": "v1beta1.external.metrics.k8s.io"},
                "spec": {
                    "group": "external.metrics.k8s.io",
                    "version": "v1beta1",
                    "groupPriorityMinimum": 100,
                    "versionPriority": 100,
                    "service": {
                        "name": "keda-metrics-apiserver",
                        "namespace": "keda",
                        "port": port,
                    },
                    "caBundle": _b64(self.ca_file.read_bytes()),
                },
            },
        ]
        self.apply_docs(docs)

    def _apiservice_available(self, name: str) -> bool:
        service = self.get_json("apiservice", name)
        return any(
            c["type"] == "Available" and c["status"] == "True"
            for c in service.get("status", {}).get("conditions", [])
        )

    # -- stop ----------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every process by its PID: SIGTERM to all (newest first), one shared grace
        period, then SIGKILL to what is left (the state lives in a temporary directory)."""
        processes = list(reversed(self.processes.values()))
        for process in processes:
            process.terminate()
        deadline = time.monotonic() + _STOP_GRACE_S
        for process in processes:
            process.finish(deadline)
        self.processes.clear()

    # -- kubectl -------------------------------------------------------------------------------

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        kubeconfig: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this API server (admin unless ``kubeconfig``)."""
        result = subprocess.run(
            ["kubectl", f"--kubeconfig={kubeconfig or self.admin_kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
        return result

    def get_json(self, *args: str) -> Any:
        """``kubectl get ARGS -o json``, decoded."""
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def apply_docs(self, docs: Sequence[dict[str, Any]]) -> None:
        """``kubectl apply`` the given objects."""
        self.kubectl("apply", "-f", "-", input="\n---\n".join(yaml.safe_dump(d) for d in docs))

    def token_kubeconfig(self, namespace: str, service_account: str) -> Path:
        """A kubeconfig with a token of ``namespace/service_account`` (TokenRequest API)."""
        token = self.kubectl(
            "create", "token", service_account, f"--namespace={namespace}", "--duration=2h"
        ).stdout.strip()
        path = self.workdir / f"{namespace}-{service_account}.kubeconfig"
        return write_kubeconfig(
            path, self.server, self.ca_file, user=f"{namespace}:{service_account}", token=token
        )


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


def _node(name: str, cpu: str, memory: str, gpus: int = 0) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, "pods": "110"}
    spec: dict[str, Any] = {}
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
        spec["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
            },
        },
        "spec": spec,
        "status": {"allocatable": capacity, "capacity": capacity},
    }
