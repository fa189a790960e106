"""The suite's pytest-xdist scheduler: one test module a unit of work, the real-node modules one.

pytest-xdist's ``loadscope`` already sends a whole module to one worker (its module fixtures set
up once). On top of it, every module that starts a real node (:data:`REAL_NODE_MODULES` in
``tests/conftest.py``) is one unit: they run one after another on one worker, never side by
side (two real nodes at once on 2 cores, 20 Ray pods starting, starved each other's raylets past
``ray start``'s 30 s limit and nearly every test of both failed). ``--dist loadgroup`` with
``xdist_group`` marks would say the same, but pytest-xdist 3.8 renames ``item._nodeid`` to add the
group, which pytest 9 no longer reads (``Node.nodeid`` is ``str(self._id)``): the marks are
silently ignored. Plugged in through pytest-xdist's ``pytest_xdist_make_scheduler`` hook.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from xdist.scheduler import LoadScopeScheduling

REAL_NODE_GROUP = "real-node"


class ModuleScheduling(LoadScopeScheduling):
    """``loadscope`` by module, with the real-node modules one scope."""

    real_node_modules: frozenset[str] = frozenset()

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return REAL_NODE_GROUP if PurePosixPath(module).name in self.real_node_modules else module
