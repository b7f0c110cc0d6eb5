"""Trace.save replaces only a save: a folder of someone else's is an error and is left as it
was; a save (this version's, or an older one recognised by its exact files) is replaced."""

from __future__ import annotations

import json

import pytest

import hta_fast
from tests.support.kineto_builder import KinetoBuilder


def _trace(kernel: str) -> hta_fast.Trace:
    b = KinetoBuilder()
    b.step(0, 0, 10_000)
    b.kernel(kernel, 10, 100, 40)
    return b.load()


def test_a_folder_that_is_not_a_save_is_left_alone(tmp_path):
    mine = tmp_path / "project"
    (mine / "src").mkdir(parents=True)
    (mine / "src" / "important.py").write_text("keep me")
    (mine / "manifest.json").write_text("{}")
    with pytest.raises(FileExistsError, match="refusing"):
        _trace("k").save(mine)
    assert (mine / "src" / "important.py").read_text() == "keep me"
    assert sorted(p.name for p in mine.iterdir()) == ["manifest.json", "src"]


def test_a_save_is_replaced_and_names_its_format(tmp_path):
    out = tmp_path / "saved"
    _trace("first").save(out)
    assert json.loads((out / "manifest.json").read_text())["format"] == "hta_fast.saved_trace"
    _trace("second").save(out)
    assert "second" in hta_fast.load(out).events.column("name").to_pylist()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["saved"]  # nothing left beside it


def test_an_older_save_is_recognised_by_its_files(tmp_path):
    out = tmp_path / "saved"
    _trace("first").save(out)
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["format"], manifest["file_bytes"]  # as saves were written before
    (out / "manifest.json").write_text(json.dumps(manifest))
    _trace("second").save(out)
    assert "second" in hta_fast.load(out).events.column("name").to_pylist()
    # but not once something else sits among its files
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["format"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="refusing"):
        _trace("third").save(out)
    assert (out / "notes.txt").exists()
