"""The suite's pytest-xdist scheduler: one test module a unit of work, each real-node chain one.

pytest-xdist's ``loadscope`` already sends a whole module to one worker (its module fixtures set
up once). On top of it, the modules that start a real node (:data:`REAL_NODE_CHAINS` in
``tests/conftest.py``) are grouped into chains: the modules of one chain run one after another on
one worker, on that worker's one bed (a real node shares its worker's node IP and kubelet ports),
and two chains run side by side, each on a worker and a bed of its own (its own network
namespace: ``tests/worker_netns.py``). What kept two beds from running at once before (twenty
Ray pods starting together on 2 cores starved each other's raylets past ``ray start``'s 30 s
limit) is gone: every Ray worker of every bed on the machine takes one start lock in turn
(``ray_on_node.START_LOCK``, the machine's ``MACHINE_START_LOCK`` linked into each bed's share).
``--dist loadgroup`` with ``xdist_group`` marks would say the same, but pytest-xdist 3.8 renames
``item._nodeid`` to add the group, which pytest 9 no longer reads (``Node.nodeid`` is
``str(self._id)``): the marks are silently ignored. Plugged in through pytest-xdist's
``pytest_xdist_make_scheduler`` hook.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from types import MappingProxyType

from xdist.scheduler import LoadScopeScheduling


class ModuleScheduling(LoadScopeScheduling):
    """``loadscope`` by module, the modules of each real-node chain one scope."""

    #: module file name -> the chain (scope) it runs in
    chains: Mapping[str, str] = MappingProxyType({})

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return self.chains.get(PurePosixPath(module).name, module)
