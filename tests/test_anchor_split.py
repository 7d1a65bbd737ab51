"""`examples/anchor_split.py`: the controlled run of the anchor's stuck seeds
(its full run is in docs/experiments/units-benchmark/units_anchor_split.json)."""

import json

import pytest

from nalu_research.experiments import anchor_split
from nalu_research.experiments.anchor_split import SMALL_SPLIT


def test_the_named_seeds_are_what_their_constants_say_and_get_moved(tmp_path):
    anchor_split.main(
        ["--stuck", "1", "11", "--solved", "0", "2", "--iterations", "40",
         "--eval-every", "20", "--eval-size", "64",
         "--regularization", "10", "20", "40", "--json", str(tmp_path / "split.json"),
         "--checkpoint-dir", str(tmp_path / "checkpoints")]
    )  # fmt: skip
    runs = json.loads((tmp_path / "split.json").read_text())["runs"]
    assert [(r["seed"], r["arm"]) for r in runs] == [
        (1, "moved"), (11, "moved"), (0, "projected"), (2, "projected")
    ]  # fmt: skip
    for r in runs:
        if r["arm"] == "moved":  # stuck seeds of tensorflow's draw: small splits
            assert abs(r["split_drawn"]) < SMALL_SPLIT
            assert r["split_moved"] == pytest.approx(
                anchor_split.TARGET * (1 if r["split_drawn"] > 0 else -1), abs=1e-5
            )
        else:
            assert abs(r["split_drawn"]) > 0.4
            assert r["split_moved"] == pytest.approx(0.0, abs=1e-5)
    assert not (tmp_path / "checkpoints").exists()


def test_a_seed_in_both_arms_is_refused(capsys):
    with pytest.raises(SystemExit):
        anchor_split.AnchorSplit().parse_args(["--stuck", "1", "--solved", "1"])
    assert "a seed is in both --stuck and --solved" in capsys.readouterr().err
