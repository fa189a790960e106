"""The agent's poll and look intervals in the sidecar fragments the chart renders: the release's
(``agent.sidecar.configMap``) and the controller's (what its webhook injects), from
``agent.sidecar.interval`` and ``agent.sidecar.watchInterval``. Needs helm (skips without)."""

from __future__ import annotations

import pytest
import yaml
from chart_install import RELEASE
from chart_render import Obj, template
from chart_render import helm as helm  # the module-scoped fixture, re-exported
from manifest_render import named

from keda_ray_scaler.cli import build_parser
from keda_ray_scaler.cli.agent_flags import agent_settings, validate

CONTROLLER = (
    "controller.enabled=true",
    "controller.namespaces={ray}",
    "certManager.enabled=true",
)


def fragments(helm: str, *sets: str) -> dict[str, Obj]:
    """The agent container of each fragment: the release's and the controller's."""
    objs = tuple(template(helm, "agent.sidecar.configMap=true", *CONTROLLER, *sets))
    out = {}
    for which in ("agent-sidecar", "controller-sidecar"):
        config_map = named(objs, "ConfigMap", f"{RELEASE}-{which}")
        fragment = yaml.safe_load(config_map["data"]["head-pod-template.yaml"])
        (agent,) = [c for c in fragment["spec"]["containers"] if c["name"] == "agent"]
        out[which] = agent
    return out


def interval_args(container: Obj) -> list[str]:
    return [a for a in container["args"] if "interval" in a]


def test_unset_intervals_leave_the_agent_s_defaults(helm: str) -> None:
    """No value: no flag, so the agent's own defaults hold (examples/agent-sidecar.yaml)."""
    for container in fragments(helm).values():
        assert interval_args(container) == []


@pytest.mark.parametrize(
    ("sets", "flags"),
    [
        (["agent.sidecar.watchInterval=0.25"], ["--watch-interval=0.25"]),
        (["agent.sidecar.watchInterval=0"], ["--watch-interval=0"]),
        (
            ["agent.sidecar.interval=2", "agent.sidecar.watchInterval=1.5"],
            ["--interval=2", "--watch-interval=1.5"],
        ),
    ],
)
def test_set_intervals_become_the_agent_s_flags(
    helm: str, sets: list[str], flags: list[str]
) -> None:
    """A value set is the flag in both fragments, and the agent takes it."""
    for container in fragments(helm, *sets).values():
        assert interval_args(container) == flags
        argv = [a.replace("$(POD_NAMESPACE)", "ray") for a in container["args"]]
        args = build_parser().parse_args([a.replace("$(KRS_RAYCLUSTER)", "demo") for a in argv])
        validate(args)
        loop = agent_settings(args).loop
        values = dict(s.split("=", 1) for s in sets)
        assert loop.watch_interval_s == float(values["agent.sidecar.watchInterval"])
        assert loop.interval_s == float(values.get("agent.sidecar.interval", "5"))


@pytest.mark.parametrize(
    ("sets", "says"),
    [
        (["agent.sidecar.interval=0"], "/agent/sidecar/interval"),
        (["agent.sidecar.watchInterval=-1"], "/agent/sidecar/watchInterval"),
        (["agent.sidecar.watchInterval=soon"], "/agent/sidecar/watchInterval"),
    ],
)
def test_bad_intervals_fail_the_render(helm: str, sets: list[str], says: str) -> None:
    """A value the agent would refuse fails the render, naming the value."""
    with pytest.raises(AssertionError, match=says):
        template(helm, *sets)
