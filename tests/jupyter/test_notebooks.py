"""Every examples/*.ipynb executes under nbclient without an error cell."""

import pathlib

import pytest

from run_notebooks import ROOT, run

NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "examples/ has no notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes_cleanly(path: pathlib.Path):
    assert run(path, write=False) == []
