"""The Feynman equations: the table read by form, the data's rules, the
constant reader and recovery, the units a formula becomes, and the one-
equation and CSV commands at a small budget."""

import collections
import json
import math

import numpy as np
import pytest
import sympy

from keras_nalu import expressions, snap_weights
from keras_nalu.testing import check_unit
from nalu_research.experiments import feynman as experiment
from nalu_research.experiments.feynman import peers, scoring, tables
from nalu_research.experiments.feynman.formula import Formula
from nalu_research.layers import ScaledPower
from nalu_research.tasks import feynman

pytestmark = pytest.mark.research


def test_the_table_has_the_issues_counts_by_form():
    equations = feynman.equations()
    assert len(equations) == 100
    found = collections.Counter(e.form for e in equations)
    # fmt: off
    assert found == feynman.FORM_COUNTS == {
        "product": 38, "sum": 7, "rational": 14, "root": 12, "transcendental": 29,
    }
    # fmt: on


@pytest.mark.parametrize(
    "name, form",
    [
        ("I.12.2", "product"),  # q1*q2*r/(4*pi*epsilon*r**3): r cancels
        ("I.47.23", "product"),  # sqrt(gamma*pr/rho)
        ("I.13.4", "sum"),  # m*(v**2 + u**2 + w**2)/2, once expanded
        ("I.16.6", "rational"),  # (u + v)/(1 + u*v/c**2)
        ("I.32.17", "rational"),  # a square of a sum below
        ("I.10.7", "root"),  # m_0/sqrt(1 - v**2/c**2)
        ("I.26.2", "transcendental"),  # arcsin(n*sin(theta2))
    ],
)
def test_an_equation_is_read_by_its_form(name, form):
    assert feynman.equation(name).form == form


def test_names_sympy_knows_are_the_variables():
    current = feynman.equation("II.13.17")  # 1/(4*pi*epsilon*c**2)*2*I/r
    symbols = dict(zip(current.variables, current.symbols, strict=True))
    assert symbols["I"].is_positive and current.expression.has(symbols["I"])
    assert not current.expression.has(sympy.I) and current.expression.has(sympy.pi)
    # fmt: off
    named = [("I.39.11", "gamma"), ("III.15.14", "E_n"),
             ("I.30.5", "lambd"), ("III.17.37", "beta")]
    # fmt: on
    for name, variable in named:
        equation = feynman.equation(name)
        assert sympy.Symbol(variable, positive=True) in equation.expression.free_symbols
    assert feynman.equation("I.44.4").expression.has(sympy.log)  # ln
    assert feynman.equation("I.26.2").expression.has(sympy.asin)  # arcsin
    with pytest.raises(ValueError, match="not its variables"):
        feynman.parse("a*b", ("a",))


def test_the_data_follow_the_stated_rules():
    equation = feynman.equation("I.12.2")
    low, high = np.array(equation.ranges).T
    x, y = equation.sample(1000, seed=0)
    assert x.shape == (1000, 4) and np.all(x >= low) and np.all(x <= high)
    np.testing.assert_allclose(y, equation(x))
    far, _ = equation.sample(1000, seed=0, region="extrapolation")
    assert np.all(far >= high) and np.all(far <= 2 * high)
    again, _ = equation.sample(1000, seed=0)
    other, _ = equation.sample(1000, seed=1)
    np.testing.assert_array_equal(x, again)
    assert not np.array_equal(x, other)
    noisy = feynman.noisy(y, seed=0)
    rms = np.sqrt(np.mean(y**2))
    assert abs(np.std(noisy - y) / rms - feynman.NOISE) < 0.002


def test_the_extrapolation_set_keeps_only_real_finite_points():
    # arcsin(n*sin(theta2)) is not real on much of its far box.
    equation = feynman.equation("I.26.2")
    low, high = equation.region("extrapolation")
    x = np.random.default_rng(0).uniform(low, high, (2000, 2))
    assert not np.all(np.isfinite(equation(x)))
    x, y = equation.sample(2000, seed=0, region="extrapolation")
    assert len(y) == 2000 and np.all(np.isfinite(y))


@pytest.mark.parametrize(
    "value, read",
    [
        (0.3989422804, 1 / sympy.sqrt(2 * sympy.pi)),
        (-0.0795774715, -1 / (4 * sympy.pi)),
        (0.6, sympy.Rational(3, 5)),
        (4.1887902048, 4 * sympy.pi / 3),
        (0.0477464829, 3 / (20 * sympy.pi)),
        (0.123456, None),
    ],
)
def test_the_constant_reader(value, read):
    assert feynman.read_constant(value) == read


def test_recovery_allows_constants_within_1e_4_and_nothing_else():
    equation = feynman.equation("I.10.7")
    m_0, v, c = equation.symbols
    half = sympy.Rational(1, 2)
    assert feynman.recovered(
        1.00003 * m_0 / (1 - 0.99999 * v**2 / c**2) ** half, equation
    )
    assert not feynman.recovered(1.001 * m_0 / (1 - v**2 / c**2) ** half, equation)
    assert not feynman.recovered(m_0 / (1 - v**2 / c**2), equation)
    assert not feynman.recovered(m_0 * (1 + v**2 / (2 * c**2)), equation)


def test_a_formula_recovered_has_its_form_too():
    # 3/(20*pi) = 0.04775 is also 1/21 within 1e-2: the looser reading must
    # not lose what the strict one reads.
    equation = feynman.equation("II.8.7")
    variables = dict(zip(equation.variables, equation.symbols, strict=True))
    q, epsilon, d = (variables[n] for n in ("q", "epsilon", "d"))
    found = float(3 / (20 * np.pi)) * q**2 / (epsilon * d)
    assert feynman.recovered(found, equation)
    assert feynman.recovered(found, equation, rtol=feynman.FORM_RTOL)


def test_the_power_unit_keeps_the_interface():
    check_unit(
        ScaledPower(
            2, kernel_initializer="random_uniform", scale_initializer="random_uniform"
        )
    )


def test_a_formula_becomes_units_that_snap_and_read_back():
    # m_0 * (1 - v**2/c**2) ** (-1/2): the product m_0 and one sum.
    formula = Formula(
        a=np.array([1.0, 0.0, 0.0]),
        log_scale=0.0,
        betas=[-0.5],
        terms=[[(-1.0, np.array([0.0, 2.0, -2.0]))]],
    )
    equation = feynman.equation("I.10.7")
    x, y = equation.sample(500, seed=0)
    np.testing.assert_allclose(formula(x), y, rtol=1e-12)
    model = formula.model()
    np.testing.assert_allclose(np.asarray(model(x))[:, 0], y, rtol=1e-12)
    snapped, report = snap_weights(model, (x, y), rtol=1e-9)
    expression = expressions(snapped, equation.variables, positive=True)[0]
    assert sympy.simplify(expression - equation.expression) == 0
    assert feynman.recovered(expression, equation)


def test_gplearn_programs_are_read_into_sympy():
    equation = feynman.equation("I.12.1")  # mu*Nn
    x, y = equation.sample(200, seed=0)
    estimator, generations = peers.gplearn_peer(
        x, y, seconds=0, seed=0, functions=peers.GPLEARN_FUNCTIONS
    )
    assert generations == 1
    read = peers.gplearn_expression(estimator, equation.symbols)
    values = scoring.evaluate(read, equation.symbols, x)
    predicted = estimator.predict(x)
    assert read.free_symbols <= set(equation.symbols)
    np.testing.assert_allclose(values, predicted, rtol=1e-6)


def printed_formulas(out):
    return [
        line.split("y = ", 1)[1].split("  (")[0]
        for line in out.splitlines()
        if line.strip().startswith("seed ")
    ]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("I.12.2", "q1*q2/(4*pi*epsilon*r**2)"),  # a product of powers
        ("II.37.1", "B*mom*(chi + 1)"),  # a sum: B*mom + B*mom*chi
    ],
)
def test_the_one_equation_command_prints_the_formula(name, expected, tmp_path, capsys):
    path = tmp_path / "one.json"
    # fmt: off
    status = experiment.Feynman().main(
        ["--equation", name, "--seeds", "1", "--examples", "2000",
         "--peers", "--json", str(path)]
    )
    # fmt: on
    assert status == 0
    out = capsys.readouterr().out
    [printed] = printed_formulas(out)
    truth = feynman.equation(name)
    names = dict(zip(truth.variables, truth.symbols, strict=True))
    found = sympy.sympify(printed, locals=names)
    assert sympy.simplify(found - sympy.sympify(expected, locals=names)) == 0
    assert "(recovered;" in out
    record = json.loads(path.read_text())
    [row] = record["runs"]
    assert row["seeds"][0]["ours"]["extrapolation"] < tables.EXTRAPOLATED
    assert record["counts"][truth.form]["ours"] == 1


def test_the_csv_command_finds_the_law_of_your_data(tmp_path, capsys):
    rng = np.random.default_rng(0)
    mass, speed = rng.uniform(1, 10, (2, 3000))
    energy = 0.5 * mass * speed**2
    path = tmp_path / "data.csv"
    lines = ["mass,speed,energy"] + [
        ",".join(repr(float(v)) for v in values)
        for values in zip(mass, speed, energy, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    status = experiment.Feynman().main(
        ["--csv", str(path), "--json", str(tmp_path / "csv.json")]
    )
    assert status == 0
    out = capsys.readouterr().out
    assert "y = mass*speed**2/2" in out
    error = float(out.split("median relative error ")[1].split(" ")[0])
    assert error < 1e-9 and math.isfinite(error)


def test_the_tables_count_majorities_by_form():
    def seed(ours, gplearn):
        return {
            "ours": {"recovered": ours, "extrapolation": 0.0, "formula": "x"},
            "gplearn": {"recovered": gplearn, "extrapolation": 1.0},
        }

    # fmt: off
    rows = [
        {"equation": "A", "form": "product", "formula": "x",
         "seeds": [seed(True, False), seed(True, True), seed(False, False)]},
        {"equation": "B", "form": "sum", "formula": "x",
         "seeds": [seed(True, True), seed(False, True), seed(False, False)]},
    ]
    # fmt: on
    counts = tables.counts(rows, 3)
    # fmt: off
    assert counts["product"] == {
        "equations": 1, "ours": 1, "gplearn": 0, "ours_form": 1,
        "gplearn_form": 0, "ours_extrapolated": 1, "gplearn_extrapolated": 0,
    }
    # fmt: on
    assert counts["sum"]["ours"] == 0 and counts["sum"]["gplearn"] == 1
    assert counts["all"]["ours"] == 1 and counts["all"]["gplearn"] == 1
    header, lines = tables.equations_table(rows)
    assert [line[3] for line in lines] == ["2/3", "1/3"]
    assert all(len(line) == len(header) for line in lines)
    assert tables.recovered_yet_far(rows) == []
