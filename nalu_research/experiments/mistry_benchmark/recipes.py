"""Each unit of Mistry et al.'s benchmark with the recipe their script gives
it (lfs_batch_jobs/single_layer_task/benchmarking/single_layer_benchmark.sh),
then the package's own recipes: data, each a `Unit` whose training settings
are a `nalu_research.recipe.Recipe`."""

import dataclasses

import numpy as np

from nalu_research.recipe import Recipe

OPERATIONS = ("add", "sub", "mul", "div")
ADAM_EPSILON = 1e-8  # PyTorch's, their optimizer's
# Their sparsity schedule of the NAU family (`--regualizer-scaling-start
# 20000 --regualizer-scaling-end 35000`) at their strengths.
NAU_PENALTY = [0.01, 20_000, 35_000]
NMU_PENALTY = [10.0, 20_000, 35_000]
# The NPU's L1 weight (`--regualizer-beta-start/-end`, growing 10-fold every
# 10,000 iterations): theirs for mul, and for div; add and sub (which they
# do not run the NPU on) take mul's.
NPU_L1 = {
    "add": [1e-7, 1e-5],
    "sub": [1e-7, 1e-5],
    "mul": [1e-7, 1e-5],
    "div": [1e-9, 1e-7],
}


@dataclasses.dataclass(frozen=True)
class Unit:
    """A unit of the benchmark: its engine model, name, how it trains (the
    settings of its `recipe`) and what that is (`description`: where it
    differs from theirs), and whether their iNALU protocol runs beside it
    (`InaluProtocol`)."""

    model: str
    name: str
    settings: dict
    description: str
    inalu_protocol: bool = False

    @property
    def recipe(self):
        """Its `Recipe`, made when asked for (a `Recipe` checks its settings
        with Keras, which importing the benchmark does not import)."""
        return Recipe(**self.settings)

    def to_json(self, operations):
        """What a record keeps of it: its name, model, description and
        recipe (`Recipe.config`, its L1 of `operations`)."""
        return {
            "model": self.model,
            "name": self.name,
            "description": self.description,
            **self.recipe.config(operations),
            **({"inalu_protocol": True} if self.inalu_protocol else {}),
        }


def nac_range(fan_in=2, fan_out=1):
    """Their NAC's initial range `r` (stable_nalu `nac_w_optimal_r`): `W_hat`
    and `M_hat` ~ U[-r, r] with `max(fan_in + fan_out, 5)` times the variance
    of `tanh(W_hat) * sigmoid(M_hat)` equal to 2, found by bisection on
    [1e-6, 10] (the steps and tolerances of `scipy.optimize.bisect`, without
    its import's time at start-up)."""

    def variance(r):
        return (1 - np.tanh(r) / r) * (r - np.tanh(r / 2)) / (2 * r)

    fan = max(fan_in + fan_out, 5)
    low, step = 1e-6, 10 - 1e-6
    below = fan * variance(low) - 2
    while True:
        step /= 2
        middle = low + step
        value = fan * variance(middle) - 2
        if value * below >= 0:
            low = middle
        if value == 0 or step < 2e-12 + 4 * np.finfo(float).eps * middle:
            return float(middle)


def _uniform(r):
    return {"class_name": "RandomUniform", "config": {"minval": -r, "maxval": r}}


def _normal(mean):
    return {"class_name": "RandomNormal", "config": {"mean": mean, "stddev": 0.2}}


def _theirs(**settings):
    """Their optimizer: Adam with PyTorch's epsilon, 1e-3 unless set."""
    return {"adam_epsilon": ADAM_EPSILON, **settings}


def recipes():
    """`{key: Unit}`: each unit with the settings of Mistry et al.'s script
    for it, then the package's own recipes."""
    nac = {
        "w_hat_initializer": _uniform(nac_range()),
        "m_hat_initializer": _uniform(nac_range()),
    }
    inalu = {
        "w_hat_initializer": _normal(0.88),
        "m_hat_initializer": _normal(0.5),
        "mul_w_hat_initializer": _normal(0.88),
        "mul_m_hat_initializer": _normal(0.5),
        "gate_initializer": _normal(0.0),
    }
    npu = {"learning_rate": 5e-3, "regularization": None, "l1": NPU_L1}
    npu_text = (
        "Adam 5e-3; their L1 of every weight, its weight 1e-7 growing 10-fold "
        "every 10,000 iterations to 1e-5 (div: 1e-9 to 1e-7); W_re glorot "
        "uniform, gate 0.5. Unlike theirs (unclipped), ours clips W to "
        "[-1, 1] in the forward pass and after each update."
    )
    glorot = {"kernel_initializer": "glorot_uniform"}
    nmru = {"learning_rate": 1e-2, "clipnorm": 1.0, "regularization": NMU_PENALTY}
    # fmt: off
    return {
        "nac": Unit("single-nac", "NAC+", _theirs(
            regularization=None, layer_options={"nac": nac}),
            "Adam 1e-3; W_hat, M_hat ~ U[-r, r] with their r (nac_w_optimal_r); "
            "no penalty, no clipping."),
        "nacmul": Unit("single-nac", "NAC*", _theirs(regularization=None,
            layer_options={"nac": {**nac, "multiplicative": True}}),
            "Their MNAC --nac-mul normal: the NAC in log space, exp(log(|x| + "
            "1e-7) @ W) (NAC(multiplicative=True)); the NAC's init, Adam 1e-3, "
            "no penalty."),
        "nalu": Unit("single-nalu", "NALU", _theirs(
            regularization=None, layer_options={"nalu": nac}),
            "Adam 1e-3; one NAC for both paths, its init as the NAC's; the gate "
            "glorot uniform; no penalty."),
        # Their penalty counts from their iteration 10,001 (`epoch_i >
        # 10000`), our update step 10,002.
        "inalu": Unit("single-inalu", "iNALU", _theirs(
            clipvalue=0.1, regularization=[4.0, 10_002, 10_002], penalty_gate=True,
            layer_options={"inalu": inalu}),
            "Adam 1e-3, gradients clipped to 0.1 by value; init N(0.88 / 0.5 / "
            "0, 0.2); their penalty 0.05 * sum of mean(relu(20 - |w|)) after "
            "iteration 10,000 (4 x ours), only while the run's last "
            "interpolation MSE is below 1; their reinitialisation "
            "(InaluProtocol), a run re-drawn at the evaluation before the "
            "iteration theirs would (at most 990 earlier), Adam's state kept. "
            "Without their penalty's term on the gate.", inalu_protocol=True),
        "nau": Unit("single-nau", "NAU", _theirs(regularization=NAU_PENALTY),
            "Adam 1e-3; W ~ U[-0.5, 0.5] clipped to [-1, 1]; penalty 0.01 "
            "ramped in from 20,000 to 35,000."),
        "nmu": Unit("single-nmu", "NMU", _theirs(regularization=NMU_PENALTY),
            "Adam 1e-3; W ~ U[0.25, 0.75] clipped to [0, 1]; penalty 10 ramped "
            "in from 20,000 to 35,000."),
        "npu": Unit("single-npu", "NPU", _theirs(**npu, layer_options={"npu": glorot}),
            npu_text + " W_im starts at 0."),
        "realnpu": Unit("single-realnpu", "RealNPU", _theirs(
            **npu, layer_options={"realnpu": glorot}), npu_text),
        "nmru": Unit("single-nmru", "NMRU", _theirs(
            **nmru, layer_options={"nmru": {"sign_retrieval": True}}),
            "Their SignNMRU (nalm-division sltr-in2.sh): Adam 1e-2, gradient "
            "norm clipped to 1, penalty 10 ramped in from 20,000 to 35,000."),
        # The package's own recipes.
        "nau-centered": Unit("single-nau", "NAU centered", _theirs(
            regularization=NAU_PENALTY,
            layer_options={"nau": {"centered_gradient": True}}),
            "Ours: the NAU's recipe, its gradient taken of the batch-centered "
            "inputs."),
        "nmu-center": Unit("single-nmu", "NMU center 0.75", _theirs(
            regularization=NMU_PENALTY, nmu_center=0.75),
            "Ours: the NMU's recipe, started on U[0.5, 1] (NMUUniform center "
            "0.75)."),
        "nmru-unsigned": Unit("single-nmru", "NMRU unsigned", _theirs(**nmru),
            "The NMRU as the package makes it by default (no sign retrieval: "
            "it multiplies the signed values and their reciprocals), by the "
            "NMRU's recipe above: what the sign retrieval changes."),
        "realnpu-ours": Unit("single-realnpu", "RealNPU (ours)", _theirs(
            learning_rate=5e-3, regularization="default"),
            "Ours as the package ships it: W clipped, the NAU's penalty on W "
            "and the gate, 10 ramped in from 20,000 to 35,000; Adam 5e-3."),
    }
    # fmt: on


RECIPES = recipes()
# The operations their figures run each unit on (csv_merger.r: their 23 unit
# x operation cells but G-NALU's 4, a unit the package does not have: 19),
# and our recipes on those of the unit they change; the NMRU (their
# nalm-division code) is in none.
# fmt: off
PAPER_OPS = {
    "nac": ("add", "sub"), "nacmul": ("mul", "div"), "nalu": OPERATIONS,
    "inalu": OPERATIONS, "nau": ("add", "sub"), "nmu": ("mul",),
    "npu": ("mul", "div"), "realnpu": ("mul", "div"),
    "nau-centered": ("add", "sub"), "nmu-center": ("mul",),
    "realnpu-ours": ("mul", "div"),
}
# fmt: on
