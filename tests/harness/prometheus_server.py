"""A real Prometheus server and an agent-shaped exporter on 127.0.0.1, for tests.

Reusable by any test module::

    from prometheus_server import PrometheusServer, SampleExporter, requires_prometheus

    @pytest.fixture(scope="module")
    def exporter() -> Iterator[SampleExporter]:
        with SampleExporter() as e:
            yield e

    @pytest.fixture(scope="module")
    def prometheus(tmp_path_factory, exporter) -> Iterator[PrometheusServer]:
        with PrometheusServer(tmp_path_factory.mktemp("prom"), [exporter.target]) as p:
            yield p

:class:`PrometheusServer` runs the Debian package's ``/usr/bin/prometheus`` with its config,
TSDB and log in a temporary directory, scraping the given targets every second; it is stopped
by its own PID (SIGTERM, then SIGKILL) and can be stopped and restarted on the same port.

The scrape job is the project's own (:data:`SHIPPED_SCRAPE_CONFIG`, what the docs tell users to
paste into prometheus.yml): its ``honor_labels`` and ``relabel_configs`` as shipped, with
``kubernetes_sd_configs`` (Debian's build has no Kubernetes discovery) replaced by one static
target group per :class:`ScrapeTarget`, whose labels are the ``__meta_kubernetes_*`` labels
Kubernetes pod discovery would attach to that pod. So the relabelling under test is the shipped
one, fed what discovery feeds it: a target's namespace and pod come from "discovery", and a
target (an agent or a forger) cannot set them from its own series.
:class:`SampleExporter` is a ``prometheus_client`` HTTP server whose series are whatever the
test sets (``schema.Sample``-like values), NaN and absurd values included.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import pytest
import requests
import yaml
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from keda_ray_scaler.demo import raylets

PROMETHEUS_BIN = Path(os.environ.get("PROMETHEUS_BIN", "/usr/bin/prometheus"))
#: The scrape job the project ships for a Prometheus without the operator.
SHIPPED_SCRAPE_CONFIG = (
    Path(__file__).resolve().parents[2] / "manifests/monitoring/prometheus-scrape-config.yaml"
)
#: The namespace of a target given as a plain ``host:port`` (the examples' Ray namespace).
DEFAULT_NAMESPACE = "ray"

#: Skip marker for tests that need the real server.
requires_prometheus = pytest.mark.skipif(
    not PROMETHEUS_BIN.exists(), reason=f"{PROMETHEUS_BIN} not installed (Debian: prometheus)"
)

_READY_LINE = "Server is ready to receive web requests."
_RELOADED_LINE = "Completed loading of configuration file"

#: bcrypt (cost 4, so tests stay fast) of ``BASIC_AUTH_PASSWORD``, for ``basic_auth_users``.
BASIC_AUTH_USER = "scaler"
BASIC_AUTH_PASSWORD = "s3cret-pass"
BASIC_AUTH_BCRYPT = "$2b$04$abcdefghijklmnopqrstuuaUNpTaGyHErb7YklXKRt/SEtSLxPST6"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago, drawn below the kernel's ephemeral
    range (:func:`keda_ray_scaler.demo.raylets.free_port`): a port ``bind(0)`` chose can be taken
    as the source port of another process's outgoing connection before ours binds it."""
    return raylets.free_port()


def wait_until(
    check: Callable[[], Any],
    *,
    timeout_s: float = 30.0,
    what: str = "condition",
    ignore: tuple[type[Exception], ...] = (Exception,),
) -> Any:
    """Poll ``check`` until it returns something truthy.

    Exceptions of the ``ignore`` types mean "not yet" (the last one is chained to the timeout);
    any other exception propagates at once.
    """
    deadline = time.monotonic() + timeout_s
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            result = check()
        except ignore as exc:  # the check may fail until the server is up
            last = exc
        else:
            if result:
                return result
        time.sleep(0.1)
    raise TimeoutError(f"timed out after {timeout_s}s waiting for {what}") from last


@contextlib.contextmanager
def serve_registry(registry: CollectorRegistry) -> Iterator[str]:
    """``registry`` served by prometheus_client on 127.0.0.1; yields ``host:port``."""
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    try:
        yield f"127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class SampleLike(Protocol):
    """What :class:`SampleExporter` serves: ``schema.Sample`` fits."""

    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def value(self) -> float: ...


class _SampleCollector(Collector):
    def __init__(self) -> None:
        self.samples: tuple[SampleLike, ...] = ()

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for s in self.samples:
            family = families.get(s.name)
            if family is None:
                family = families[s.name] = Metric(s.name, "test series", "untyped")
            family.add_sample(s.name, dict(s.labels), s.value)
        yield from families.values()


class SampleExporter:
    """A ``prometheus_client`` exporter on 127.0.0.1 serving the samples the test sets."""

    def __init__(self, samples: Iterable[SampleLike] = ()) -> None:
        self._collector = _SampleCollector()
        self._collector.samples = tuple(samples)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self._collector)
        self.port = 0
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def target(self) -> str:
        """``host:port`` for a scrape config."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The exporter's ``/metrics`` URL."""
        return f"http://{self.target}/metrics"

    def set(self, samples: Iterable[SampleLike]) -> None:
        """Serve these samples from the next scrape on."""
        self._collector.samples = tuple(samples)

    def start(self) -> SampleExporter:
        """Listen on a free port (or the previous one, after :meth:`stop`)."""
        self._server, self._thread = start_http_server(
            self.port, addr="127.0.0.1", registry=self.registry
        )
        self.port = int(self._server.server_port)
        return self

    def stop(self) -> None:
        """Stop serving: the next scrape fails and Prometheus marks the series stale."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> SampleExporter:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


@dataclass(frozen=True, slots=True)
class ScrapeTarget:
    """A pod Prometheus scrapes: its address, and the namespace and name discovery reports."""

    address: str  # host:port
    namespace: str = DEFAULT_NAMESPACE
    pod: str = "ray-head"
    path: str = "/metrics"

    def discovery_labels(self) -> dict[str, str]:
        """What ``kubernetes_sd_configs: [{role: pod}]`` attaches to this pod's target: its
        namespace and name, and the ``prometheus.io/*`` annotations of the example head pods."""
        return {
            "__meta_kubernetes_namespace": self.namespace,
            "__meta_kubernetes_pod_name": self.pod,
            "__meta_kubernetes_pod_label_ray_io_node_type": "head",
            "__meta_kubernetes_pod_labelpresent_ray_io_node_type": "true",
            "__meta_kubernetes_pod_container_name": "agent",
            "__meta_kubernetes_pod_container_port_name": "agent-metrics",
            "__meta_kubernetes_pod_annotation_prometheus_io_scrape": "true",
            "__meta_kubernetes_pod_annotation_prometheus_io_port": self.address.rpartition(":")[2],
            "__meta_kubernetes_pod_annotation_prometheus_io_path": self.path,
        }


def shipped_scrape_job() -> dict[str, Any]:
    """The one job of :data:`SHIPPED_SCRAPE_CONFIG`, as shipped."""
    (job,) = yaml.safe_load(SHIPPED_SCRAPE_CONFIG.read_text())["scrape_configs"]
    return dict(job)


def as_target(target: str | ScrapeTarget) -> ScrapeTarget:
    """A ``host:port`` is a head pod in :data:`DEFAULT_NAMESPACE`."""
    return target if isinstance(target, ScrapeTarget) else ScrapeTarget(target)


class _PortTaken(RuntimeError):
    """Prometheus could not bind its port."""


class PrometheusServer:
    """``/usr/bin/prometheus`` on 127.0.0.1, scraping ``targets`` every ``scrape_interval_s``.

    The job is the shipped one (module docstring); a target given as ``host:port`` is a head pod
    in namespace ``ray``. ``web_config`` is written to a ``--web.config.file``
    (``basic_auth_users``, ``tls_server_config``); ``scrape`` adds keys to the scrape job
    (``scheme``, ``tls_config``); ``base_job`` replaces the shipped job (e.g. a PodMonitor as
    the operator renders it); ``extra_jobs`` are more scrape jobs, each as written in
    prometheus.yml with its own ``static_configs`` (e.g. a job that honours labels, as the
    prometheus-community chart's ``kubernetes-pods`` or a Pushgateway's), at the same interval.
    Everything lives in ``workdir``; the log is ``workdir/prometheus.log``.
    """

    def __init__(
        self,
        workdir: Path,
        targets: Sequence[str | ScrapeTarget],
        *,
        scrape_interval_s: float = 1.0,
        web_config: Mapping[str, Any] | None = None,
        scrape: Mapping[str, Any] | None = None,
        job: str | None = None,
        base_job: Mapping[str, Any] | None = None,
        extra_jobs: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.workdir = workdir
        self.targets = tuple(as_target(t) for t in targets)
        self.scrape_interval_s = scrape_interval_s
        self.web_config = web_config
        self.scrape = dict(scrape or {})
        self.job = job
        self.base_job = dict(base_job) if base_job is not None else shipped_scrape_job()
        self.extra_jobs = tuple(dict(j) for j in extra_jobs)
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / "prometheus.log"
        self.config_path = workdir / "prometheus.yml"
        self._log_offset = 0
        self._started_once = False

    @property
    def url(self) -> str:
        """Base URL (https when ``web_config`` has ``tls_server_config``)."""
        scheme = "https" if self.web_config and "tls_server_config" in self.web_config else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def _write_config(self) -> None:
        interval = f"{int(self.scrape_interval_s * 1000)}ms"
        job = dict(self.base_job)
        job.pop("kubernetes_sd_configs", None)  # discovery is simulated by the groups' labels
        job.update(
            scrape_interval=interval,
            scrape_timeout=interval,
            static_configs=[
                {"targets": [t.address], "labels": t.discovery_labels()} for t in self.targets
            ],
            **self.scrape,
        )
        if self.job is not None:
            job["job_name"] = self.job
        extra = [
            {"scrape_interval": interval, "scrape_timeout": interval, **j} for j in self.extra_jobs
        ]
        config = {"global": {"scrape_interval": interval}, "scrape_configs": [job, *extra]}
        self.config_path.write_text(yaml.safe_dump(config))

    def _log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def start(self, *, timeout_s: float = 30.0) -> PrometheusServer:
        """Start and wait until Prometheus logs that it is ready; raises with the log if not.

        The first start moves to another free port if another process took this one meanwhile;
        a restart keeps the port (clients know it).
        """
        for _ in range(3):
            try:
                return self._start_once(timeout_s)
            except _PortTaken:
                if self._started_once:
                    raise
                self.port = free_port()
        raise RuntimeError("no free port for prometheus after 3 tries")

    def _start_once(self, timeout_s: float) -> PrometheusServer:
        self._write_config()
        args = [
            str(PROMETHEUS_BIN),
            f"--config.file={self.config_path}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            f"--storage.tsdb.path={self.workdir / 'data'}",
            "--storage.tsdb.retention.time=1h",
            "--web.enable-lifecycle",
            "--log.level=info",
        ]
        if self.web_config is not None:
            web_path = self.workdir / "web.yml"
            web_path.write_text(yaml.safe_dump(dict(self.web_config)))
            args.append(f"--web.config.file={web_path}")
        self._log_offset = len(self._log_text())
        log = self.log_path.open("ab")
        try:
            self.process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        finally:
            log.close()
        process = self.process

        def ready() -> bool:
            if process.poll() is not None:
                log_text = self._log_text()[self._log_offset :]
                if "address already in use" in log_text:
                    raise _PortTaken(log_text)
                raise RuntimeError(f"prometheus exited {process.returncode}:\n{log_text}")
            return _READY_LINE in self._log_text()[self._log_offset :]

        try:
            wait_until(ready, timeout_s=timeout_s, what="prometheus ready", ignore=())
        except _PortTaken:
            self.process = None
            raise
        except BaseException:
            self.stop()
            raise
        self._started_once = True
        return self

    def stop(self) -> None:
        """Stop the server by its PID: SIGTERM, then SIGKILL after 10 s."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def restart(self) -> None:
        """Start again on the same port with the same TSDB."""
        self.stop()
        self.start()

    @property
    def running(self) -> bool:
        """True while the process is alive."""
        return self.process is not None and self.process.poll() is None

    def set_targets(self, targets: Sequence[str | ScrapeTarget]) -> None:
        """Rewrite the scrape targets and reload the configuration (SIGHUP)."""
        self.targets = tuple(as_target(t) for t in targets)
        self._write_config()
        assert self.process is not None, "prometheus is not running"
        before = self._log_text().count(_RELOADED_LINE)
        os.kill(self.process.pid, signal.SIGHUP)
        wait_until(
            lambda: self._log_text().count(_RELOADED_LINE) > before,
            what="prometheus config reload",
        )

    def query(self, promql: str, **request_kw: Any) -> list[dict[str, Any]]:
        """Run an instant query with plain ``requests`` (test-side view of the truth)."""
        response = requests.get(
            f"{self.url}/api/v1/query", params={"query": promql}, timeout=5, **request_kw
        )
        response.raise_for_status()
        body = response.json()
        assert body["status"] == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def wait_for_series(
        self, promql: str, count: int | None = None, *, timeout_s: float = 30.0, **request_kw: Any
    ) -> list[dict[str, Any]]:
        """Wait until ``promql`` returns ``count`` series (any non-zero number if None)."""

        def check() -> list[dict[str, Any]] | None:
            result = self.query(promql, **request_kw)
            ok = len(result) == count if count is not None else bool(result)
            return result if ok else None

        result: list[dict[str, Any]] = wait_until(
            check, timeout_s=timeout_s, what=f"{count} series for {promql}"
        )
        return result

    def wait_for_empty(self, promql: str, *, timeout_s: float = 30.0, **request_kw: Any) -> None:
        """Wait until ``promql`` returns no series (e.g. after the target went away)."""
        wait_until(
            lambda: self.query(promql, **request_kw) == [],
            timeout_s=timeout_s,
            what=f"no series for {promql}",
        )

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


@contextlib.contextmanager
def running_prometheus(
    workdir: Path, targets: Sequence[str], **kw: Any
) -> Iterator[PrometheusServer]:
    """Context manager form of :class:`PrometheusServer`."""
    server = PrometheusServer(workdir, targets, **kw)
    with server:
        yield server
