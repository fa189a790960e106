"""etcd and kube-apiserver of the e2e build set, KEDA's and KubeRay's CRDs: no controllers.

For tests that need only what the API server itself does (validation, admission, RBAC): a
server-side dry run, a webhook called by the real API server. Skips without a build set.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

#: The CRD directories of the build set applied at start (links to directories).
CRDS = ("keda-crds", "kuberay-crds")


@contextlib.contextmanager
def apiserver_only(workdir: Path, namespaces: Sequence[str] = ()) -> Iterator[Any]:
    """A ``ControlPlane`` running etcd and kube-apiserver only, the CRDs established and
    ``namespaces`` made; stopped on exit."""
    bin_dir = os.environ.get("KRS_E2E_BIN")
    if not bin_dir or not (Path(bin_dir) / "bin" / "controlplane").exists():
        pytest.skip("no e2e build set: run with KRS_E2E_BIN=$(bash e2e/build.sh)")
    from control_plane import ControlPlane

    cp = ControlPlane(workdir, Path(bin_dir))
    try:
        (cp.workdir / "logs").mkdir()
        cp.pki.mkdir()
        cp._make_pki()  # only what validation needs: no controllers, kwok or KEDA processes
        cp._start_etcd()
        cp._start_apiserver()
        for crds in CRDS:
            if (Path(bin_dir) / crds).exists():
                cp.kubectl("apply", "--server-side", "-f", str((Path(bin_dir) / crds).resolve()))
        cp.wait_crds_established()
        for ns in namespaces:
            cp.kubectl("create", "namespace", ns)
        yield cp
    finally:
        cp.stop()
