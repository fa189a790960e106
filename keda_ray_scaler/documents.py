"""A cluster spec or snapshot file as plain values: JSON at C speed, YAML for hand-written files.

Why two parsers: the files ``plan`` reads most are machine-written JSON (the agent's and
``status``'s dumps, ``bench``'s), and building Python objects through PyYAML costs ~100x what
``json`` does (a 180 KB snapshot of 1,000 pods and 2,000 bundles: ~300 ms with libyaml's
``CSafeLoader``, ~3 ms with ``json``) for a plan that takes ~15 ms. People write YAML, so a file
that is not JSON is read as YAML, with libyaml's loader when PyYAML was built with it. PyYAML
is imported only then: ``plan`` on JSON files never loads it.

JSON is read as JSON means (``1e3`` is a number; PyYAML's YAML 1.1 would read a string).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from keda_ray_scaler.errors import ConfigError


def load_document(path: str | Path) -> object:
    """The file's document; a :class:`ConfigError` naming the file when unreadable or invalid."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(where, "", f"cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(where, "", "not UTF-8 text") from exc
    if text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            pass  # YAML flow style (``{a: 1}``) is not JSON: YAML decides, and says what is wrong
    return _load_yaml(text, where)


def yaml_loader() -> Any:
    """libyaml's safe loader when PyYAML was built with it (~30x faster), else the Python one."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_yaml(text: str, where: str) -> object:
    import yaml

    try:
        return yaml.load(text, Loader=yaml_loader())  # a safe loader (C or Python)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise ConfigError(where, "", f"not valid YAML: {problem}{at}") from exc
