"""The Helm chart: lints, renders with several values, mirrors manifests/base, validates.

Helm is the pinned ``helm.sh/helm/v3/cmd/helm`` that ``e2e/build.sh`` builds into the set dir
(``$KRS_E2E_BIN/bin/helm``), or ``$KRS_HELM``, or a ``helm`` on PATH (the fixture ``helm`` and
``template``: tests/harness/chart_render.py). Every rendered object is validated by a real
kube-apiserver of the end-to-end test's version (``kubectl apply --dry-run=server
--validate=strict``) with KEDA's CRDs installed; cert-manager and Prometheus operator objects have
no CRDs there and get a structural check only.
"""

from __future__ import annotations

import copy
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from apiserver_only import apiserver_only
from chart_install import (
    CHART,
    E2E_VALUES,
    KUBE_VERSION,
    NAMESPACE,
    RELEASE,
    install,
    local_serve_args,
)
from chart_render import KEDA_NAMESPACE, NO_CRDS_HERE, SIDECAR, VALUES, Obj, run_helm, template
from chart_render import helm as helm  # the module-scoped fixture, used by name
from manifest_render import EXAMPLE, ROOT, cli_args, crd_schema, named, render, schema_errors

KUBERAY_EXAMPLE = "manifests/kuberay/example"


def kinds(objs: list[Obj]) -> list[str]:
    return sorted(o["kind"] for o in objs)


def test_helm_lint_strict(helm: str) -> None:
    """``helm lint --strict`` passes with the defaults and with every feature on."""
    run_helm(helm, "lint", "--strict", str(CHART), f"--kube-version={KUBE_VERSION}")
    everything = [s for sets in VALUES.values() for s in sets if "issuerRef" not in s]
    run_helm(helm, "lint", "--strict", str(CHART), "--set", ",".join(everything), "-n", "keda")


def test_defaults_render_what_manifests_base_holds(helm: str) -> None:
    """With the defaults, the chart renders manifests/base's objects (less the Namespace)."""
    base = [o for o in render("manifests/base") if o["kind"] != "Namespace"]
    assert kinds(template(helm)) == kinds(base)


def test_the_scaler_deployment_mirrors_manifests_base(helm: str) -> None:
    """Same name, replicas, probes, ports, hardening and flags as the kustomize Deployment."""
    base = named(render("manifests/base"), "Deployment", "keda-ray-scaler")
    chart = named(tuple(template(helm)), "Deployment", "keda-ray-scaler")
    bspec, cspec = base["spec"], chart["spec"]
    assert cspec["replicas"] == bspec["replicas"] == 2
    assert cspec["strategy"] == bspec["strategy"]
    (bc,) = bspec["template"]["spec"]["containers"]
    (cc,) = cspec["template"]["spec"]["containers"]
    for key in ("ports", "startupProbe", "readinessProbe", "livenessProbe", "resources"):
        assert cc[key] == bc[key], key
    assert cc["securityContext"] == bc["securityContext"]
    pod_keys = ("securityContext", "automountServiceAccountToken", "volumes")
    for key in pod_keys:
        assert cspec["template"]["spec"][key] == bspec["template"]["spec"][key], key
    assert set(bc["args"]) <= set(cc["args"])
    assert cli_args(cc).command == "serve"


def test_services_keep_the_address_keda_is_given(helm: str) -> None:
    """The gRPC Service is headless and named as in the README's scalerAddress."""
    grpc_service = named(tuple(template(helm)), "Service", "keda-ray-scaler")
    assert grpc_service["spec"]["clusterIP"] == "None"
    assert grpc_service["spec"]["ports"][0]["port"] == 9090


def test_prometheus_auth_values_become_flags_on_mounted_files(helm: str) -> None:
    """Bearer token, basic auth, CA and the seal master key: each flag points into a volume the
    pod mounts."""
    dep = named(tuple(template(helm, *VALUES["prometheus-auth"])), "Deployment", RELEASE)
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    args = cli_args(c)
    assert args.prometheus_url == "https://prometheus.example:9090"
    assert args.basic_auth_user == "scaler"
    mounts = [m["mountPath"] for m in c["volumeMounts"]]
    assert args.seal_master_key_file.name == "master.key"
    files = (args.bearer_token_file, args.basic_auth_password_file, args.ca_file)
    for path in (*files, args.seal_master_key_file):
        assert any(str(path).startswith(m + "/") for m in mounts), path
    volumes = {v["name"] for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert {m["name"] for m in c["volumeMounts"]} == volumes


@pytest.mark.parametrize(
    ("sets", "says"),
    [
        (["prometheus.url="], "prometheus.url is required"),
        (["prometheus.basicAuth.user=u"], "prometheus.basicAuth.passwordSecretName"),
        (
            ["agent.rbac.create=true", "agent.rbac.mode=kuberay"],
            "agent.rbac.rayClusters is required in kuberay mode",
        ),
        (
            ["agent.rbac.create=true", "agent.rbac.mode=kuberay", "agent.rbac.rayClusters={demo}"],
            "agent.rbac.rayWorkerGroups is required in kuberay mode",
        ),
    ],
    ids=["no-url", "user-without-password", "kuberay-without-clusters", "kuberay-without-groups"],
)
def test_missing_values_fail_naming_the_value(helm: str, sets: list[str], says: str) -> None:
    """A required value left out fails the render with its name."""
    with pytest.raises(AssertionError, match=says.replace(".", r"\.")):
        template(helm, *sets)


#: Every ``limits`` value set, from a values file (helm reads its numbers as floats).
LIMITS: dict[str, int | float] = {
    "maxSeries": 1000,
    "maxWorkerGroups": 4,
    "maxShapes": 64,
    "maxPlacementGroups": 2,
    "maxPgBundles": 8,
    "maxResourceNames": 16,
    "maxNameChars": 63,
    "maxClusters": 50,
    "maxClustersPerNamespace": 5,
    "unknownRechecksPerSecond": 0.5,
    "maxHealthWatches": 0,
    "maxConcurrentRpcs": 500,
    "maxConcurrentStreams": 64,
    "maxMessageBytes": 4 * 1024 * 1024,
    "maxStreamsPerConnection": 20,
    "maxStreamsPerPeer": 40,
}


def scaler_args(objs: list[Obj]) -> Any:
    """The chart's scaler container args, parsed by the real parser."""
    (c,) = named(tuple(objs), "Deployment", RELEASE)["spec"]["template"]["spec"]["containers"]
    return cli_args(c)


def test_limits_values_become_serve_flags(helm: str, tmp_path: Path) -> None:
    """Each ``limits`` key is the serve flag of its kebab-case name, whole numbers printed whole
    (1e+06 would not parse); the chart's list of keys is exactly LIMITS'."""
    chart_keys = yaml.safe_load((CHART / "values.yaml").read_text())["limits"]
    assert set(chart_keys) == set(LIMITS)
    values = tmp_path / "limits.yaml"
    values.write_text(yaml.safe_dump({"limits": LIMITS}))
    args = scaler_args(template(helm, "-f", str(values)))
    for key, value in LIMITS.items():
        dest = "".join("_" + c.lower() if c.isupper() else c for c in key)
        assert getattr(args, dest) == value, key


def test_unset_limits_keep_the_cli_defaults(helm: str) -> None:
    """With the defaults no limit flag is rendered: the scaler runs on its own caps."""
    from keda_ray_scaler.cli import build_parser

    defaults = build_parser().parse_args(["serve"])
    args = scaler_args(template(helm))
    for key in LIMITS:
        dest = "".join("_" + c.lower() if c.isupper() else c for c in key)
        assert getattr(args, dest) == getattr(defaults, dest), key


@pytest.mark.parametrize(
    ("sets", "says"),
    [
        (["limits.maxSeries=lots"], "/limits/maxSeries"),
        (["limits.maxShapes=0"], "/limits/maxShapes"),
        (["limits.unknownRechecksPerSecond=fast"], "/limits/unknownRechecksPerSecond"),
        (["limits.maxSerie=10"], "maxSerie"),
        (["crossNamespaceReaders={team-a}"], "/crossNamespaceReaders/0"),
        (["agnet.rbac.create=true"], "agnet"),
        (["agent.rbac.mdoe=kuberay"], "mdoe"),
        (["agent.rbac.mode=kuberya"], "/agent/rbac/mode"),
        (["agent.sidecar.port=http"], "/agent/sidecar/port"),
        (["agent.sidecar.gcsAddress=127.0.0.1"], "/agent/sidecar/gcsAddress"),
        (["agent.sidecar.authToken.secret=demo"], "secret"),
        (["agent.image.tag=2"], "image"),
        (["rayWorkerGroupCRD.craete=true"], "craete"),
        (["rayWorkerGroupCRD.create=yes"], "/rayWorkerGroupCRD/create"),
        (["agent.rbac.admissionPolicy=maybe"], "/agent/rbac/admissionPolicy"),
        (["grpcReflection=on"], "/grpcReflection"),
        (["image.pullPolicy=Sometimes"], "/image/pullPolicy"),
    ],
    ids=[
        "not-a-number",
        "zero-cap",
        "not-a-rate",
        "misspelt-key",
        "grant-without-equals",
        "misspelt-top-level-key",
        "misspelt-agent-key",
        "unknown-rbac-mode",
        "port-not-a-number",
        "gcs-without-port",
        "misspelt-auth-key",
        "no-agent-image-value",
        "misspelt-crd-key",
        "crd-flag-not-a-boolean",
        "policy-flag-not-a-boolean",
        "reflection-not-a-boolean",
        "unknown-pull-policy",
    ],
)
def test_bad_limit_values_fail_the_render(helm: str, sets: list[str], says: str) -> None:
    """values.schema.json refuses a limit of the wrong type or range, or a key no flag has, and
    a misspelt or mistyped top-level, agent or CRD value, before anything is applied (else the
    scaler would crash-loop on its flags, or a misspelt option would silently do nothing)."""
    with pytest.raises(AssertionError, match=says):
        template(helm, *sets)


def test_cert_manager_makes_both_secrets_from_one_ca(helm: str) -> None:
    """Generated CA: installed in KEDA's namespace, both certificates signed by a namespaced CA
    Issuer there (no ClusterIssuer a Certificate in another namespace could name): the server
    Secret and KEDA's client Secret (CN keda, the name serve's --client-identity serves) in KEDA's
    namespace only, none in the Ray namespaces."""
    objs = template(helm, *VALUES["cert-manager-self-signed"])
    assert "ClusterIssuer" not in kinds(objs)
    certs = [o for o in objs if o["kind"] == "Certificate"]
    by_secret = {(c["metadata"]["namespace"], c["spec"]["secretName"]): c for c in certs}
    assert {ns for ns, _ in by_secret} == {KEDA_NAMESPACE}
    server = by_secret[(KEDA_NAMESPACE, "keda-ray-scaler-tls")]
    assert "keda-ray-scaler.keda.svc.cluster.local" in server["spec"]["dnsNames"]
    assert "*.keda-ray-scaler.keda.svc.cluster.local" in server["spec"]["dnsNames"]
    clients = [key for key in by_secret if key[1] == "keda-ray-scaler-client-tls"]
    assert clients == [(KEDA_NAMESPACE, "keda-ray-scaler-client-tls")]
    client = by_secret[clients[0]]
    assert client["spec"]["usages"][0] == "client auth"
    assert client["spec"]["issuerRef"] == server["spec"]["issuerRef"]
    assert server["spec"]["issuerRef"]["kind"] == "Issuer"
    from keda_ray_scaler.rpc.server_settings import ServerSettings

    assert client["spec"]["commonName"] == ServerSettings().client_identity == "keda"
    issuers = [o for o in objs if o["kind"] == "Issuer"]
    assert {o["metadata"]["namespace"] for o in issuers} == {KEDA_NAMESPACE}
    ca_issuer = named(tuple(issuers), "Issuer", server["spec"]["issuerRef"]["name"])
    ca_cert = by_secret[(KEDA_NAMESPACE, "keda-ray-scaler-ca")]
    assert ca_issuer["spec"]["ca"]["secretName"] == ca_cert["spec"]["secretName"]
    assert ca_cert["spec"]["issuerRef"]["kind"] == "Issuer"
    existing = template(helm, *VALUES["cert-manager-existing-issuer"])
    assert "ClusterIssuer" not in kinds(existing)
    assert "Issuer" not in kinds(existing)
    assert {c["spec"]["issuerRef"]["name"] for c in existing if c["kind"] == "Certificate"} == {
        "corp-ca"
    }


@pytest.mark.parametrize(
    ("sets", "namespace", "says"),
    [
        (["certManager.enabled=true"], "keda-ray-scaler", "needs the release in KEDA's namespace"),
        (
            ["certManager.enabled=true", "clusterTriggerAuthentication.kedaNamespace=ops"],
            "keda",
            'release namespace "keda" differs',
        ),
        (
            ["certManager.enabled=true", "certManager.caNamespace=cert-manager"],
            "keda",
            "certManager.caNamespace was removed",
        ),
    ],
    ids=["other-namespace", "keda-elsewhere", "old-ca-namespace"],
)
def test_the_generated_ca_outside_kedas_namespace_fails_the_render(
    helm: str, sets: list[str], namespace: str, says: str
) -> None:
    """The chart's own CA signs KEDA's identity, so it is only made where only KEDA's namespace
    can use it: a release elsewhere (or the removed caNamespace) fails naming what to do."""
    with pytest.raises(AssertionError, match=says) as info:
        template(helm, *sets, namespace=namespace)
    assert "issuerRef" in str(info.value) or "caNamespace" in str(info.value)


def client_key_holders(objs: list[Obj]) -> list[tuple[str, str, str]]:
    """``(kind, namespace, name)`` of what makes or reads a client key: a Certificate for client
    auth (its Secret holds tls.key), a (Cluster)TriggerAuthentication reading ``tls.key``."""
    out = []
    for o in objs:
        spec = o.get("spec") or {}
        usages = spec.get("usages", []) if o["kind"] == "Certificate" else []
        keys = [r.get("key") for r in spec.get("secretTargetRef", [])]
        if "client auth" in usages or "tls.key" in keys:
            out.append((o["kind"], o["metadata"].get("namespace", "-"), o["metadata"]["name"]))
    return sorted(out)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_no_ray_namespace_holds_a_client_key(helm: str, name: str) -> None:
    """Whatever the values, the client key is made and read in KEDA's namespace only: one
    Certificate there and the cluster-scoped ClusterTriggerAuthentication, never a
    TriggerAuthentication or a client Certificate in a Ray namespace."""
    objs = template(helm, *VALUES[name])
    allowed = {
        ("Certificate", "keda", "keda-ray-scaler-client"),
        ("ClusterTriggerAuthentication", "-", "keda-ray-scaler-client"),
    }
    assert set(client_key_holders(objs)) <= allowed
    assert "TriggerAuthentication" not in kinds(objs)


@pytest.mark.parametrize(
    ("sets", "says"),
    [
        (["tls.clientNamespaces={ray}"], "tls.clientNamespaces was removed"),
        (["triggerAuthentication.create=true"], "triggerAuthentication was removed"),
    ],
    ids=["client-namespaces", "trigger-authentication"],
)
def test_the_values_that_copied_the_client_key_fail_naming_what_replaces_them(
    helm: str, sets: list[str], says: str
) -> None:
    """An old values file that copied KEDA's client key into each Ray namespace fails the render
    naming the replacement (agent.rbac.namespaces, the ClusterTriggerAuthentication)."""
    with pytest.raises(AssertionError, match=says) as info:
        template(helm, *sets)
    assert "clusterTriggerAuthentication" in str(info.value)


def test_operator_objects_are_well_formed(helm: str) -> None:
    """cert-manager and Prometheus operator objects (no CRDs to validate with): shape checked."""
    objs = template(helm, *VALUES["cert-manager-self-signed"], *VALUES["monitoring-sized"])
    for o in objs:
        if o["apiVersion"].startswith(NO_CRDS_HERE):
            assert o["apiVersion"].endswith("/v1"), o["apiVersion"]
            assert o["metadata"]["name"] and o["spec"], o
    monitors = [o for o in objs if o["kind"] in ("ServiceMonitor", "PodMonitor")]
    assert sorted(m["metadata"]["name"] for m in monitors) == [
        "keda-ray-scaler",
        "keda-ray-scaler",
        "keda-ray-scaler-agent",
    ]
    agent = named(tuple(objs), "PodMonitor", "keda-ray-scaler-agent")
    shipped = yaml.safe_load((ROOT / "manifests/monitoring/podmonitor-agent.yaml").read_text())
    endpoint = agent["spec"]["podMetricsEndpoints"][0]
    assert endpoint["honorLabels"] is False
    assert endpoint["relabelings"] == shipped["spec"]["podMetricsEndpoints"][0]["relabelings"]


def test_cluster_trigger_authentication_keeps_the_client_key_in_kedas_namespace(
    helm: str,
) -> None:
    """clusterTriggerAuthentication.create: one ClusterTriggerAuthentication (KEDA's CRD schema)
    reading the client Secret, whose certificate is made in KEDA's namespace only."""
    objs = template(helm, *VALUES["keda-side"])
    (cta,) = [o for o in objs if o["kind"] == "ClusterTriggerAuthentication"]
    assert "namespace" not in cta["metadata"]
    assert schema_errors(cta, crd_schema("ClusterTriggerAuthentication")) == []
    refs = {(r["parameter"], r["name"], r["key"]) for r in cta["spec"]["secretTargetRef"]}
    secret = "keda-ray-scaler-client-tls"
    assert refs == {
        ("caCert", secret, "ca.crt"),
        ("tlsClientCert", secret, "tls.crt"),
        ("tlsClientKey", secret, "tls.key"),
    }
    clients = [
        c["metadata"]["namespace"]
        for c in objs
        if c["kind"] == "Certificate" and c["spec"]["secretName"] == secret
    ]
    assert clients == ["keda"]
    assert "TriggerAuthentication" not in kinds(objs)
    other = template(helm, *VALUES["keda-side"], "clusterTriggerAuthentication.kedaNamespace=ops")
    assert [c["metadata"]["namespace"] for c in other if c["kind"] == "Certificate"][-1] == "ops"
    assert "ClusterTriggerAuthentication" not in kinds(template(helm))


def test_network_policies_admit_keda_to_grpc_and_prometheus_to_metrics_only(helm: str) -> None:
    """networkPolicy.enabled: the scaler pods take gRPC only from KEDA's operator and /metrics
    only from Prometheus (selectors as set); off by default."""
    assert "NetworkPolicy" not in kinds(template(helm))
    sets = [*VALUES["keda-side"], "networkPolicy.prometheus.podSelector.matchLabels.app=prom"]
    (policy,) = [o for o in template(helm, *sets) if o["kind"] == "NetworkPolicy"]
    dep = named(tuple(template(helm)), "Deployment", RELEASE)
    assert policy["spec"]["podSelector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    rules = {r["ports"][0]["port"]: r["from"] for r in policy["spec"]["ingress"]}
    assert sorted(rules) == [9090, 9100]  # not the health port: the kubelet's probes
    (keda,) = rules[9090]
    assert keda["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "keda"}}
    assert keda["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "keda-operator"}}
    (prom,) = rules[9100]
    assert prom["podSelector"]["matchLabels"] == {
        "app.kubernetes.io/name": "prometheus",
        "app": "prom",
    }


# --- the agent sidecar snippet -------------------------------------------------------------------


def merge_sidecar(template_: Obj, snippet: Obj | None = None) -> Obj:
    """A head pod template with ``snippet`` (default: examples/agent-sidecar.yaml) merged in
    (lists by name)."""
    if snippet is None:
        snippet = yaml.safe_load(SIDECAR.read_text())
    assert snippet is not None
    out = copy.deepcopy(template_)
    meta = out.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        meta.setdefault(key, {}).update(snippet["metadata"][key])
    spec = out["spec"]
    for key in ("serviceAccountName", "automountServiceAccountToken"):
        spec[key] = snippet["spec"][key]
    for key in ("containers", "volumes"):
        mine = {c["name"] for c in snippet["spec"][key]}
        spec[key] = [c for c in spec.get(key, []) if c["name"] not in mine] + snippet["spec"][key]
    return out


def head_deployment() -> Obj:
    """The example head Deployment with its agent replaced by the snippet's."""
    head = copy.deepcopy(named(render(EXAMPLE), "Deployment", "ray-demo-head"))
    head["spec"]["template"] = merge_sidecar(head["spec"]["template"])
    head["metadata"]["namespace"] = "ray"
    return head


def kuberay_head_pod() -> Obj:
    """A KubeRay-style head: a bare ray-head container template, the snippet merged in."""
    base: Obj = {
        "metadata": {"labels": {"ray.io/cluster": "demo"}},
        "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.50.0"}]},
    }
    merged = merge_sidecar(base)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {**merged["metadata"], "name": "head", "namespace": "ray"},
        "spec": merged["spec"],
    }


def test_the_sidecar_snippet_is_what_the_example_head_runs() -> None:
    """The snippet's agent equals the example head's agent: one source for both modes."""
    example = named(render(EXAMPLE), "Deployment", "ray-demo-head")
    want = next(
        c for c in example["spec"]["template"]["spec"]["containers"] if c["name"] == "agent"
    )
    got = next(
        c
        for c in head_deployment()["spec"]["template"]["spec"]["containers"]
        if c["name"] == "agent"
    )
    assert {k: v for k, v in got.items() if k != "image"} == {
        k: v for k, v in want.items() if k != "image"
    }
    args = cli_args(got)
    assert args.command == "agent"
    assert str(args.cluster_spec).startswith(got["volumeMounts"][0]["mountPath"])


# --- what a KubeRay user needs: the CRD, the agent's RBAC, the sidecar with the one image -------


def rendered_sidecar(helm: str, *sets: str) -> Obj:
    """The chart's agent sidecar fragment (agent.sidecar.configMap), parsed."""
    objs = template(helm, "agent.sidecar.configMap=true", *sets)
    config_map = named(tuple(objs), "ConfigMap", f"{RELEASE}-agent-sidecar")
    fragment: Obj = yaml.safe_load(config_map["data"]["head-pod-template.yaml"])
    return fragment


def scaler_image(objs: list[Obj]) -> str:
    (c,) = named(tuple(objs), "Deployment", RELEASE)["spec"]["template"]["spec"]["containers"]
    return str(c["image"])


def test_the_rendered_sidecar_is_the_shipped_snippet(helm: str) -> None:
    """With the defaults (and the example's token Secret) the chart renders exactly
    examples/agent-sidecar.yaml: one source for the snippet and the release's rendering."""
    assert "agent-sidecar" not in str(template(helm))  # off by default
    got = rendered_sidecar(helm, "agent.sidecar.authToken.secretName=demo")
    assert got == yaml.safe_load(SIDECAR.read_text())


def test_the_sidecar_runs_the_scalers_image_as_the_agent_command(helm: str) -> None:
    """One image, both commands: the sidecar's image is the scaler Deployment's, whatever the
    tag or repository; its command is `agent`; it runs as the image's non-root user."""
    for sets in ([], ["image.tag=0.2.0", "image.repository=registry.example/krs"]):
        objs = template(helm, "agent.sidecar.configMap=true", *sets)
        fragment = yaml.safe_load(
            named(tuple(objs), "ConfigMap", f"{RELEASE}-agent-sidecar")["data"][
                "head-pod-template.yaml"
            ]
        )
        (agent,) = fragment["spec"]["containers"]
        assert agent["image"] == scaler_image(objs)
        assert cli_args(agent).command == "agent"
        assert agent["securityContext"]["runAsUser"] == 65532
    assert scaler_image(objs) == "registry.example/krs:0.2.0"


def test_the_sidecar_mounts_its_clusters_seal_key_only_when_given(helm: str) -> None:
    """agent.sidecar.sealKey.secretName: the agent reads --seal-key-file from that Secret,
    mounted read-only into the agent container only; unset, no key and no volume."""

    def fragment(*sets: str) -> Obj:
        objs = template(helm, "agent.sidecar.configMap=true", *sets)
        data = named(tuple(objs), "ConfigMap", f"{RELEASE}-agent-sidecar")["data"]
        loaded: Obj = yaml.safe_load(data["head-pod-template.yaml"])
        return loaded

    plain = fragment()
    assert cli_args(plain["spec"]["containers"][0]).seal_key_file is None
    keyed = fragment("agent.sidecar.sealKey.secretName=demo-seal")
    (agent,) = keyed["spec"]["containers"]
    path = cli_args(agent).seal_key_file
    (mount,) = [m for m in agent["volumeMounts"] if m["mountPath"] == str(path.parent)]
    assert mount["readOnly"] is True and path.name == "seal.key"
    (volume,) = [v for v in keyed["spec"]["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"]["secretName"] == "demo-seal"
    assert "agent-seal-key" not in {v["name"] for v in plain["spec"]["volumes"]}


def test_the_kuberay_sidecar_is_the_kuberay_examples_agent(helm: str) -> None:
    """agent.sidecar.rayCluster: --raycluster instead of a cluster spec file and its volume, the
    token from the RayCluster's Secret; the same agent container as the KubeRay example's."""
    fragment = rendered_sidecar(
        helm, "agent.sidecar.rayCluster=demo", "agent.sidecar.authToken.secretName=demo"
    )
    (got,) = fragment["spec"]["containers"]
    cluster = named(render(KUBERAY_EXAMPLE), "RayCluster", "demo")
    head = cluster["spec"]["headGroupSpec"]["template"]
    want = next(c for c in head["spec"]["containers"] if c["name"] == "agent")
    assert sorted(got.pop("args")) == sorted(want["args"])
    assert got == {k: v for k, v in want.items() if k != "args"}
    assert cli_args({"args": [*want["args"]]}).raycluster == "demo"
    assert fragment["spec"]["volumes"] == head["spec"]["volumes"]
    without_token = rendered_sidecar(helm, "agent.sidecar.rayCluster=demo")
    names = {e["name"] for e in without_token["spec"]["containers"][0]["env"]}
    assert names == {"HOME", "POD_NAMESPACE"}


def rules_of(objs: list[Obj] | tuple[Obj, ...], name: str) -> list[Obj]:
    rules: list[Obj] = named(tuple(objs), "Role", name)["rules"]
    return rules


def test_agent_rbac_is_the_shipped_roles_in_both_modes(helm: str) -> None:
    """Deployment mode: manifests/agent's Role; KubeRay mode, narrowed by name: the KubeRay
    example's Role of exactly what the agent calls (and manifests/kuberay/agent's); without the
    names the render fails naming the value (no Role for every RayCluster of the namespace)."""
    sa = "keda-ray-scaler-agent"
    base = ["agent.rbac.create=true", "agent.rbac.namespaces={ray}"]
    deployment = template(helm, *base)
    assert rules_of(deployment, sa) == rules_of(render("manifests/agent"), sa)
    narrowed = template(helm, *VALUES["kuberay"])
    assert rules_of(narrowed, sa) == rules_of(render(KUBERAY_EXAMPLE), "ray-demo-agent")
    assert rules_of(narrowed, sa) == rules_of(render("manifests/kuberay/agent"), sa)
    kuberay = [*base, "agent.rbac.mode=kuberay"]
    with pytest.raises(AssertionError, match=r"agent\.rbac\.rayClusters is required in kuberay"):
        template(helm, *kuberay)
    with pytest.raises(AssertionError, match=r"agent\.rbac\.rayWorkerGroups is required"):
        template(helm, *kuberay, "agent.rbac.rayClusters={demo}")
    (account,) = [
        o for o in narrowed if o["kind"] == "ServiceAccount" and o["metadata"]["name"] == sa
    ]
    assert account["metadata"]["namespace"] == "ray"
    assert account["automountServiceAccountToken"] is False


def policy_of(objs: list[Obj]) -> Obj:
    """The release's one ValidatingAdmissionPolicy, checked to have its Deny binding."""
    (policy,) = [o for o in objs if o["kind"] == "ValidatingAdmissionPolicy"]
    (binding,) = [o for o in objs if o["kind"] == "ValidatingAdmissionPolicyBinding"]
    name = policy["metadata"]["name"]
    assert binding["spec"] == {"policyName": name, "validationActions": ["Deny"]}
    return policy


@pytest.mark.parametrize(
    ("mode", "shipped"),
    [("deployment", "manifests/agent"), ("kuberay", "manifests/kuberay/agent")],
)
def test_agent_rbac_ships_the_admission_policy_for_the_releases_serviceaccounts(
    helm: str, mode: str, shipped: str
) -> None:
    """agent.rbac.create: the mode's admission policy as shipped (same rules, validations and
    variables), its condition naming the release's agent ServiceAccount in each namespace;
    Deployment mode narrowed to agent.rbac.rayClusters when set; none with
    admissionPolicy=false; before Kubernetes 1.30 the render fails naming the value."""
    sets = [*VALUES["kuberay"]] if mode == "kuberay" else ["agent.rbac.create=true"]
    sets += ["agent.rbac.namespaces={ray,ray-b}"]
    policy = policy_of(template(helm, *sets))
    want = named(render(shipped), "ValidatingAdmissionPolicy", policy["metadata"]["name"])
    for key in ("failurePolicy", "matchConstraints", "validations", "variables"):
        assert policy["spec"][key] == want["spec"][key], key
    (condition,) = policy["spec"]["matchConditions"]
    users = [f"'system:serviceaccount:{ns}:keda-ray-scaler-agent'" for ns in ("ray", "ray-b")]
    assert condition["expression"] == f"request.userInfo.username in [{', '.join(users)}]"
    if mode == "deployment":
        narrowed = policy_of(template(helm, *sets, "agent.rbac.rayClusters={demo,batch}"))
        clusters = {v["name"]: v["expression"] for v in narrowed["spec"]["variables"]}
        assert clusters["clusters"] == "['demo', 'batch']"
    off = template(helm, *sets, "agent.rbac.admissionPolicy=false")
    assert not [o for o in off if o["kind"].startswith("ValidatingAdmissionPolicy")]
    argv = [helm, "template", RELEASE, str(CHART), "--kube-version=v1.29.4"]
    old = subprocess.run(
        [*argv, *(a for s in sets for a in ("--set", s))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert old.returncode != 0 and "agent.rbac.admissionPolicy needs Kubernetes" in old.stderr


def test_grpc_reflection_is_off_unless_asked(helm: str) -> None:
    """The chart passes no --reflection by default (KEDA does not use it); grpcReflection turns
    it on."""
    assert scaler_args(template(helm)).reflection is False
    assert scaler_args(template(helm, "grpcReflection=true")).reflection is True


def test_the_rayworkergroup_crd_is_manifests_kuberay_crd(helm: str) -> None:
    """rayWorkerGroupCRD.create: the CRD of manifests/kuberay/crd (the chart's copy is the same
    file), kept on uninstall unless keep=false, and the /scale ClusterRole of
    manifests/kuberay/agent; nothing of it by default."""
    shipped = ROOT / "manifests" / "kuberay" / "crd" / "rayworkergroups.yaml"
    assert (CHART / "files" / "rayworkergroups.yaml").read_text() == shipped.read_text()
    assert "CustomResourceDefinition" not in kinds(template(helm))
    objs = template(helm, "rayWorkerGroupCRD.create=true")
    name = "rayworkergroups.keda-ray-scaler.io"
    crd = named(tuple(objs), "CustomResourceDefinition", name)
    want = named(render("manifests/kuberay/crd"), "CustomResourceDefinition", name)
    assert crd["spec"] == want["spec"]
    assert crd["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    unkept = template(helm, "rayWorkerGroupCRD.create=true", "rayWorkerGroupCRD.keep=false")
    assert "annotations" not in named(tuple(unkept), "CustomResourceDefinition", name)["metadata"]
    role_name = "keda-ray-scaler-rayworkergroups-scale"
    scale = named(tuple(objs), "ClusterRole", role_name)
    assert (
        scale["rules"]
        == named(render("manifests/kuberay/agent"), "ClusterRole", role_name)["rules"]
    )
    assert scale["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"


# --- a real API server validates every object -----------------------------------------------------


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """etcd and kube-apiserver of the e2e set ($KRS_E2E_BIN), KEDA's (and KubeRay's) CRDs."""
    namespaces = (NAMESPACE, "ray", "ray-b", KEDA_NAMESPACE)
    with apiserver_only(tmp_path_factory.mktemp("cp"), namespaces) as cp:
        yield cp


def dry_run(cp: Any, objs: list[Obj]) -> None:
    """Server-side dry run with strict field validation: unknown or invalid fields fail."""
    docs = "\n---\n".join(yaml.safe_dump(o) for o in objs)
    done = cp.kubectl(
        "apply", "--dry-run=server", "--validate=strict", "-f", "-", input=docs, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.controlplane
@pytest.mark.parametrize("name", sorted(VALUES))
def test_every_rendered_object_passes_the_api_server(apiserver: Any, helm: str, name: str) -> None:
    """Each values combination: every Kubernetes and KEDA object passes the API server."""
    objs = template(helm, *VALUES[name])
    checked = [o for o in objs if not o["apiVersion"].startswith(NO_CRDS_HERE)]
    assert checked
    dry_run(apiserver, checked)


@pytest.mark.controlplane
def test_the_sidecar_snippet_passes_the_api_server_in_both_head_modes(
    apiserver: Any, helm: str
) -> None:
    """With the chart's agent RBAC applied, the snippet in a head Deployment and pod validates."""
    ns = "ray-b"  # not the namespace the helm install test's release owns
    rbac = template(helm, "agent.rbac.create=true", f"agent.rbac.namespaces={{{ns}}}")
    agent_objs = [o for o in rbac if o["metadata"].get("namespace") == ns]
    assert kinds(agent_objs) == ["Role", "RoleBinding", "ServiceAccount"]
    docs = "\n---\n".join(yaml.safe_dump(o) for o in agent_objs)
    apiserver.kubectl("apply", "-f", "-", input=docs)  # the pods' service account must exist
    heads = [head_deployment(), kuberay_head_pod()]
    for head in heads:
        head["metadata"]["namespace"] = ns
    dry_run(apiserver, heads)


@pytest.mark.controlplane
def test_the_sidecar_snippet_passes_kuberays_raycluster_schema(apiserver: Any) -> None:
    """KubeRay mode: a RayCluster whose headGroupSpec.template has the snippet merged in."""
    if apiserver.kubectl("get", "crd", "rayclusters.ray.io", check=False).returncode != 0:
        pytest.skip("KubeRay's CRDs are not in the e2e build set")
    head = kuberay_head_pod()
    cluster = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "demo", "namespace": "ray"},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {"num-cpus": "0"},
                "template": {"metadata": head["metadata"] | {"name": None}, "spec": head["spec"]},
            },
        },
    }
    del cluster["spec"]["headGroupSpec"]["template"]["metadata"]["name"]
    del cluster["spec"]["headGroupSpec"]["template"]["metadata"]["namespace"]
    dry_run(apiserver, [cluster])


@pytest.mark.controlplane
def test_the_rendered_kuberay_sidecar_passes_the_api_server_in_a_raycluster(
    apiserver: Any, helm: str
) -> None:
    """KubeRay mode from the chart alone: its RBAC (kuberay mode) applied, then a RayCluster whose
    head template has the chart's rendered sidecar merged in, and a Pod of it."""
    if apiserver.kubectl("get", "crd", "rayclusters.ray.io", check=False).returncode != 0:
        pytest.skip("KubeRay's CRDs are not in the e2e build set")
    ns = "ray-b"
    sets = [*VALUES["kuberay"], f"agent.rbac.namespaces={{{ns}}}"]
    objs = template(helm, *sets)
    rbac = [o for o in objs if o["metadata"].get("namespace") == ns]
    assert kinds(rbac) == ["Role", "RoleBinding", "ServiceAccount"]
    apiserver.kubectl("apply", "-f", "-", input="\n---\n".join(yaml.safe_dump(o) for o in rbac))
    fragment = rendered_sidecar(helm, *sets)
    base: Obj = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.60.0"}]}}
    head = merge_sidecar(base, fragment)
    cluster = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "demo", "namespace": ns},
        "spec": {"headGroupSpec": {"rayStartParams": {"num-cpus": "0"}, "template": head}},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {**head["metadata"], "name": "demo-head", "namespace": ns},
        "spec": head["spec"],
    }
    dry_run(apiserver, [cluster, pod])


@pytest.mark.controlplane
def test_the_api_server_check_catches_a_bad_field(apiserver: Any, helm: str) -> None:
    """The check can fail: a misspelt container field is refused."""
    dep = named(tuple(template(helm)), "Deployment", RELEASE)
    dep["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    with pytest.raises(AssertionError, match="imagePullPolcy"):
        dry_run(apiserver, [dep])


# --- what the real-control-plane test uses -------------------------------------------------------


def test_the_charts_serve_args_run_as_a_local_process(helm: str, tmp_path: Path) -> None:
    """local_serve_args: the chart's flags with loopback ports and TLS files from a directory;
    the process starts serving mTLS and `status` reaches it (UNAVAILABLE: no Prometheus)."""
    import sys

    from tls_certs import make_certs

    from keda_ray_scaler.demo.raylets import free_port

    certs = make_certs()
    certs.server.write(tmp_path, "tls")
    (tmp_path / "ca.crt").write_bytes(certs.ca.cert)
    client_cert, client_key = certs.client.write(tmp_path, "client")
    port = free_port()
    argv = local_serve_args(
        helm, E2E_VALUES, tls_dir=tmp_path, prometheus_url="http://127.0.0.1:9", port=port
    )
    args = cli_args({"args": argv})
    assert (args.port, args.refresh_interval, args.tls_cert) == (port, 1.0, tmp_path / "tls.crt")
    krs = str(Path(sys.executable).with_name("keda-ray-scaler"))
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen([krs, *argv], stdout=log, stderr=subprocess.STDOUT)
    try:
        status = [krs, "status", f"--address=localhost:{port}", "--cluster=ray", "--group=cpu"]
        status += [f"--ca-cert={tmp_path / 'ca.crt'}", f"--tls-client-cert={client_cert}"]
        status += [f"--tls-client-key={client_key}", "--timeout=5"]
        for _ in range(50):
            done = subprocess.run(status, capture_output=True, text=True, timeout=30)
            if "UNAVAILABLE: failed to connect" not in done.stdout:
                break
        assert done.returncode == 1, done.stdout + done.stderr
        (row,) = done.stdout.splitlines()[1:]
        assert row.split()[:5] == ["ray", "cpu", "-", "-", "UNAVAILABLE:"]
        assert "failed to connect" not in row  # the scaler answered: its data is unavailable
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.mark.controlplane
def test_helm_install_on_the_api_server(apiserver: Any, helm: str) -> None:
    """`helm upgrade --install` with the e2e values makes the scaler, KEDA's
    ClusterTriggerAuthentication (no TriggerAuthentication in the Ray namespace) and the Ray
    namespace's agent RBAC; with agent.sidecar.configMap, the sidecar's ConfigMap, which the
    NOTES name with the one image."""
    out = install(
        helm, apiserver.admin_kubeconfig, {**E2E_VALUES, "agent.sidecar.configMap": "true"}
    )
    notes = out.split("NOTES:", 1)[1]
    assert "ghcr.io/keda-ray-scaler/keda-ray-scaler:0.1.0" in notes
    assert "keda-ray-scaler agent" in notes
    assert f"kubectl get configmap {RELEASE}-agent-sidecar -n {NAMESPACE}" in notes
    assert "keda-ray-scaler-agent (deployment mode) is in: ray." in notes
    sidecar = apiserver.get_json("configmap", f"{RELEASE}-agent-sidecar", "-n", NAMESPACE)
    assert yaml.safe_load(sidecar["data"]["head-pod-template.yaml"])["spec"]["containers"]
    dep = apiserver.get_json("deployment", RELEASE, "-n", NAMESPACE)
    assert dep["spec"]["replicas"] == 1
    auth = apiserver.get_json("clustertriggerauthentication", "keda-ray-scaler-client")
    assert auth["spec"]["secretTargetRef"][0]["name"] == "keda-ray-scaler-client-tls"
    listed = apiserver.get_json("triggerauthentication", "-n", "ray")
    assert listed["items"] == []
    apiserver.get_json("role", "keda-ray-scaler-agent", "-n", "ray")
