"""docs/notebook.ipynb runs top to bottom, as a user opens it in Jupyter, and
shows what its text says: the NALU extrapolates where Dense does not, snaps to
`y0 = a*b`, and its SavedModel serves without keras_nalu."""

import re
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "notebook.ipynb"

# research: the notebook plots with matplotlib
pytestmark = [pytest.mark.research, pytest.mark.processes]


def test_the_notebook_runs_top_to_bottom_and_says_what_it_shows(tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    printed = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("name") == "stdout"
    )
    errors = dict(re.findall(r"(Dense|NALU): median relative error .*: (\S+)", printed))
    assert float(errors["NALU"]) < 0.1 < float(errors["Dense"]), printed
    assert "['y0 = a*b']" in printed, printed
    served = float(re.search(r"\[\[([\d.]+)\]\]", printed).group(1))
    assert served == pytest.approx(123 * 456, rel=1e-6), printed
    images = [
        output
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]
    assert len(images) == 1  # the extrapolation plot
