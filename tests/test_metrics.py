import pytest

from keras_nalu.tasks import mean_squared_error, paper_scale


def test_mean_squared_error_by_hand():
    assert mean_squared_error([[1.0], [2.0]], [[2.0], [4.0]]) == pytest.approx(2.5)


def test_mean_squared_error_rejects_mismatched_shapes():
    with pytest.raises(
        ValueError, match="y_true.shape=\\(2,\\), y_pred.shape=\\(2, 1\\)"
    ):
        mean_squared_error([1.0, 2.0], [[1.0], [2.0]])


def test_paper_scale_is_percent_of_random_error():
    assert paper_scale(0.5, 2.0) == pytest.approx(25.0)
    assert paper_scale(4.0, 2.0) == pytest.approx(200.0)


@pytest.mark.parametrize("random_error", [0.0, -1.0, float("nan")])
def test_paper_scale_rejects_non_positive_random_error(random_error):
    with pytest.raises(ValueError, match="`random_error`"):
        paper_scale(1.0, random_error)
