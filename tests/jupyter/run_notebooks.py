"""Executes every examples/*.ipynb with nbclient on the kernel `tessera`, fails on any error cell,
and compares each code cell's fresh outputs with the outputs saved in the notebook. With --write,
the executed notebook (its outputs) is saved back in place instead: the saved outputs of the
examples come from this, never from hand.

Every run gets what the golden tests get: `TESSERA_CUDA=off` unless it is set (saved outputs are
those of a machine without a GPU) and a fresh, empty `TESSERA_CACHE_DIR` (the autotuner tunes
instead of reading an earlier run's cache).

How outputs are compared (`compare_cell`): the same outputs in the same order, consecutive stream
outputs of one name joined (how a kernel chunks its prints is not part of the output); an
execute_result or display_data has the same set of mime types, each equal. Images are compared
exactly (an SVG byte for byte). Text (streams, text/plain, text/html) is equal after masking the
figures that are measured, and only those (`mask_measured`):
  1. in a table row that has a cell `measured` (a text row `| ... | measured |`, an HTML
     `<tr>` with `<td>measured</td>`), each cell that is only a number, optionally followed by
     `%` or a time unit (ns, µs, ms, s), becomes `#`: the measured rows of a profile table;
  2. in the outputs of a cell whose first line is a `:time` or `:timeit` command, every number
     becomes `#`, a time unit after it `T`, and `loops`/`runs` their singular.
"""

import argparse
import copy
import difflib
import os
import pathlib
import re
import sys
import tempfile

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = pathlib.Path(__file__).resolve().parents[2]

NUMERIC_CELL = re.compile(r"^\s*[0-9]+(?:\.[0-9]+)?(?: ?(?:%|ns|µs|ms|s))?\s*$")
HTML_ROW = re.compile(r"<tr>.*?</tr>", re.S)
HTML_CELL = re.compile(r"(<td[^>]*>)([^<]*)(</td>)")
NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def _mask_text_row(line: str) -> str:
    if not line.lstrip().startswith("|"):
        return line
    cells = line.split("|")
    if not any(c.strip() == "measured" for c in cells):
        return line
    return "|".join(" # " if NUMERIC_CELL.match(c) and c.strip() else c for c in cells)


def _mask_html_row(m: re.Match) -> str:
    row = m.group(0)
    if not re.search(r"<td[^>]*>\s*measured\s*</td>", row):
        return row
    return HTML_CELL.sub(
        lambda c: c.group(1) + "#" + c.group(3) if NUMERIC_CELL.match(c.group(2)) else c.group(0),
        row,
    )


def mask_measured(text: str, timed: bool) -> str:
    """`text` with its measured figures replaced by `#` (the rules in the module docstring);
    `timed`: the text is an output of a `:time` cell."""
    if timed:
        # a time's unit and the plural of a count change with the machine's speed too
        text = NUMBER.sub("#", text)
        text = re.sub(r"# (ns|µs|ms|s)\b", "# T", text)
        return re.sub(r"\b(loop|run)s\b", r"\1", text)
    text = "\n".join(_mask_text_row(line) for line in text.split("\n"))
    return HTML_ROW.sub(_mask_html_row, text)


def _text(v) -> str:
    return "".join(v) if isinstance(v, list) else (v or "")


def normalize(outputs: list, timed: bool) -> list:
    """A cell's outputs as comparable tuples: streams joined and masked, bundles masked."""
    out = []
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            text = _text(o.get("text"))
            if out and out[-1][0] == "stream" and out[-1][1] == o.get("name"):
                out[-1] = ("stream", o.get("name"), out[-1][2] + text)
            else:
                out.append(("stream", o.get("name"), text))
        elif kind in ("execute_result", "display_data"):
            data = {}
            for mime, v in sorted(o.get("data", {}).items()):
                v = _text(v) if isinstance(v, (str, list)) else repr(v)
                data[mime] = mask_measured(v, timed) if mime.startswith("text/") else v
            out.append((kind, None, data))
        else:
            out.append((kind, o.get("ename"), _text(o.get("evalue"))))
    return [(k, n, mask_measured(v, timed) if k == "stream" else v) for k, n, v in out]


def _describe(outputs: list) -> str:
    lines = []
    for kind, name, v in outputs:
        if isinstance(v, dict):
            for mime, text in v.items():
                lines.append(f"[{kind} {mime}]")
                lines.extend(text.split("\n"))
        else:
            lines.append(f"[{kind}{' ' + name if name else ''}]")
            lines.extend(v.split("\n"))
    return "\n".join(lines)


def compare_cell(saved: dict, fresh: dict) -> str | None:
    """None when the fresh outputs of a code cell match the saved ones, else a short diff."""
    timed = _text(saved.get("source")).lstrip().startswith((":time", "%time"))
    a = normalize(saved.get("outputs", []), timed)
    b = normalize(fresh.get("outputs", []), timed)
    if a == b:
        return None
    diff = difflib.unified_diff(
        _describe(a).split("\n"), _describe(b).split("\n"), "saved", "fresh", lineterm="", n=1
    )
    lines = list(diff)
    if len(lines) > 40:
        lines = lines[:40] + [f"... ({len(lines) - 40} more diff lines)"]
    return "\n".join(lines)


def run(path: pathlib.Path, write: bool, compare: bool | None = None) -> list[str]:
    """Executes the notebook at `path`; returns its problems (error cells, and unless `write`,
    code cells whose outputs differ from the saved ones). `write`: save the outputs in place."""
    if compare is None:
        compare = not write
    saved = nbformat.read(path, as_version=4)
    nb = copy.deepcopy(saved)
    for cell in nb.cells:
        # no timestamps in saved notebooks (record_timing=False below keeps new ones out)
        cell.metadata.pop("execution", None)
    client = NotebookClient(nb, kernel_name="tessera", timeout=300, allow_errors=False,
                            record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    problems = []
    with tempfile.TemporaryDirectory(prefix="tessera-nb-cache-") as cache:
        env = dict(os.environ)
        env.setdefault("TESSERA_CUDA", "off")
        env["TESSERA_CACHE_DIR"] = cache
        try:
            client.execute(env=env)
        except CellExecutionError as e:
            problems.append(f"{path.name}: {str(e).splitlines()[0] if str(e) else e}")
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                problems.append(f"{path.name}: cell {i}: {out.get('ename')}: {out.get('evalue')}")
    if not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"):
        problems.append(f"{path.name}: no code cell produced output")
    if compare and not problems:
        for i, (s, f) in enumerate(zip(saved.cells, nb.cells)):
            if s.cell_type != "code":
                continue
            d = compare_cell(s, f)
            if d is not None:
                problems.append(f"{path.name}: cell {i}: outputs differ from the saved ones "
                                f"(rerun with --write if the change is intended)\n{d}")
    if write and not problems:
        nbformat.validate(nb)
        nbformat.write(nb, path)
    return problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("notebooks", nargs="*", type=pathlib.Path)
    ap.add_argument("--write", action="store_true",
                    help="save the outputs into the notebooks instead of comparing them")
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
