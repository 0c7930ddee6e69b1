"""Executes every examples/*.ipynb with nbclient on the kernel `tessera` and fails on any error
cell. With --write, the executed notebook (its outputs) is saved back in place: the saved outputs
of the examples come from this, never from hand."""

import argparse
import pathlib
import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(path: pathlib.Path, write: bool) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name="tessera", timeout=300, allow_errors=False,
                            resources={"metadata": {"path": str(path.parent)}})
    problems = []
    try:
        client.execute()
    except CellExecutionError as e:
        problems.append(f"{path.name}: {str(e).splitlines()[0] if str(e) else e}")
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                problems.append(f"{path.name}: cell {i}: {out.get('ename')}: {out.get('evalue')}")
    if not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"):
        problems.append(f"{path.name}: no code cell produced output")
    if write and not problems:
        nbformat.validate(nb)
        nbformat.write(nb, path)
    return problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("notebooks", nargs="*", type=pathlib.Path)
    ap.add_argument("--write", action="store_true", help="save the outputs into the notebooks")
    args = ap.parse_args()
    paths = args.notebooks or sorted((ROOT / "examples").glob("*.ipynb"))
    if not paths:
        print("no notebooks found", file=sys.stderr)
        return 1
    failed = 0
    for p in paths:
        problems = run(p, args.write)
        for msg in problems:
            print(f"FAIL {msg}")
        print(f"{'ok  ' if not problems else 'FAIL'} {p.relative_to(ROOT) if p.is_absolute() else p}")
        failed += bool(problems)
    print(f"notebooks: {len(paths) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
