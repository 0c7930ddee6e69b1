"""Every examples/*.ipynb executes under nbclient without an error cell, and each code cell's
fresh outputs equal the saved ones, measured timings masked (the rule is in run_notebooks.py)."""

import pathlib

import pytest

from run_notebooks import ROOT, compare_cell, mask_measured, run

NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "examples/ has no notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_outputs_match_the_saved_ones(path: pathlib.Path):
    problems = run(path, write=False)
    assert problems == [], "\n".join(problems)


def test_training_and_autotuning_notebooks_show_images():
    """The training and autotuning notebooks show their plots as SVG images with a text form."""
    import nbformat

    for name in ("training.ipynb", "autotuning.ipynb"):
        nb = nbformat.read(ROOT / "examples" / name, as_version=4)
        images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
                  if "image/svg+xml" in o.get("data", {})]
        assert images, f"{name} shows no image"
        for o in images:
            assert o["data"]["image/svg+xml"].startswith("<svg xmlns=\"http://www.w3.org/2000/svg\"")
            assert o["data"]["text/plain"].startswith("figure")


def test_only_measured_figures_are_masked():
    row = "| k_0 | 64x64x16 | cpu    |  91.622 µs |         - |      0.04 |   0.0000 | -       | measured |"
    model = "| k_0 | 64x64x16 | sm_90  |    2.002 µs |   100.0%* |      2.05 |   0.0020 | memory  | model    |"
    masked = mask_measured(row, timed=False)
    assert masked == "| k_0 | 64x64x16 | cpu    | # |         - | # | # | -       | measured |"
    assert mask_measured(model, timed=False) == model
    html = ('<tr><td>k_0</td><td style="text-align:right">91.622 µs</td><td>measured</td></tr>'
            '<tr><td>k_0</td><td style="text-align:right">2.002 µs</td><td>model</td></tr>')
    assert mask_measured(html, timed=False) == (
        '<tr><td>k_0</td><td style="text-align:right">#</td><td>measured</td></tr>'
        '<tr><td>k_0</td><td style="text-align:right">2.002 µs</td><td>model</td></tr>')
    assert mask_measured("loss 1.5909 after 40 steps", timed=False) == "loss 1.5909 after 40 steps"
    assert mask_measured("19.2 ms median of 49 runs", timed=True) == "# T median of # run"
    # a :timeit line's units and plurals change with the machine's speed
    assert (mask_measured("118 ms ± 15.1 ms per loop (mean ± std. dev. of 7 runs, 10 loops each)",
                          timed=True)
            == mask_measured("9.5 µs ± 312 ns per loop (mean ± std. dev. of 7 runs, 1 loop each)",
                             timed=True))


def test_a_changed_output_is_reported():
    def cell(source, *outputs):
        return {"cell_type": "code", "source": source, "outputs": list(outputs)}

    def stream(text):
        return {"output_type": "stream", "name": "stdout", "text": text}

    def bundle(**data):
        return {"output_type": "display_data", "data": data, "metadata": {}}

    # prints chunked differently are the same output
    assert compare_cell(cell("x", stream("a\n"), stream("b\n")), cell("x", stream("a\nb\n"))) is None
    assert compare_cell(cell("x", stream("loss 1.59\n")), cell("x", stream("loss 1.58\n")))
    # timings of a :time cell are masked, its words are not
    t1, t2 = "1.2 ms median of 9 runs", "3.4 ms median of 5 runs"
    assert compare_cell(cell(":time f()", bundle(**{"text/plain": t1})),
                        cell(":time f()", bundle(**{"text/plain": t2}))) is None
    assert compare_cell(cell("f()", bundle(**{"text/plain": t1})),
                        cell("f()", bundle(**{"text/plain": t2})))
    # images: the same mime types, an SVG byte for byte
    svg = {"text/plain": "figure: 1 series", "image/svg+xml": "<svg>a</svg>\n"}
    assert compare_cell(cell("fig", bundle(**svg)), cell("fig", bundle(**svg))) is None
    assert compare_cell(cell("fig", bundle(**svg)),
                        cell("fig", bundle(**{**svg, "image/svg+xml": "<svg>b</svg>\n"})))
    assert compare_cell(cell("fig", bundle(**svg)),
                        cell("fig", bundle(**{"text/plain": "figure: 1 series"})))
