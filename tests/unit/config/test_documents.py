"""Spec and snapshot files: JSON read as JSON (at C speed), everything else as YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from keda_ray_scaler.documents import load_document
from keda_ray_scaler.errors import ConfigError


def written(tmp_path: Path, text: str) -> Path:
    """``text`` in a file under ``tmp_path``."""
    path = tmp_path / "doc"
    path.write_text(text)
    return path


def test_json_is_read_as_json_means_it(tmp_path: Path) -> None:
    """``1e3`` is the number 1000.0 in JSON (PyYAML's YAML 1.1 would give the string '1e3')."""
    assert load_document(written(tmp_path, '{"CPU": 1e3, "n": [1, 2]}')) == {
        "CPU": 1000.0,
        "n": [1, 2],
    }


def test_yaml_flow_style_that_is_not_json_is_read_as_yaml(tmp_path: Path) -> None:
    """``{CPU: 10}`` starts like JSON but is YAML: it still loads."""
    assert load_document(written(tmp_path, "{CPU: 10, name: cpu}")) == {"CPU": 10, "name": "cpu"}


def test_block_yaml_is_read_as_yaml(tmp_path: Path) -> None:
    """Hand-written block YAML loads as before."""
    assert load_document(written(tmp_path, "cluster: demo\nmaxWorkers: 3\n")) == {
        "cluster": "demo",
        "maxWorkers": 3,
    }


def test_broken_json_is_reported_by_the_yaml_reader_with_its_line(tmp_path: Path) -> None:
    """Neither JSON nor YAML: one ConfigError naming the file and the line."""
    path = written(tmp_path, '{\n  "a": 1,\n  "b": [1, 2\n}\n')
    with pytest.raises(ConfigError) as caught:
        load_document(path)
    assert caught.value.where == str(path)
    assert caught.value.problem.startswith("not valid YAML: ") and "line 4" in caught.value.problem
