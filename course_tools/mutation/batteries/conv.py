"""Batteries of 04_conv_backward: the naive backward, the im2col forward, the op's gradient, the fixed
input gradient.

Problem sizes are drawn so that batch, channels in and out and the kernel's sides differ from each
other (and sometimes coincide), with strides that leave rows and columns unread, with and without
padding, and dilation where the task has it.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..observe import observe
from .battery import Battery
from .inputs import layouts, ndarray, values


@st.composite
def geometry(draw, dilation=True, max_side=7):
    """{n, c_in, c_out, h, w, kh, kw, s, p, d} with at least one output position."""
    g = {key: draw(st.integers(1, 3)) for key in ("n", "c_in", "c_out")}
    g["kh"], g["kw"] = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    g["s"], g["p"] = draw(st.integers(1, 3)), draw(st.integers(0, 2))
    g["d"] = draw(st.integers(1, 2)) if dilation else 1
    g["h"] = draw(st.integers(max(1, g["d"] * (g["kh"] - 1) + 1 - 2 * g["p"]), max_side))
    g["w"] = draw(st.integers(max(1, g["d"] * (g["kw"] - 1) + 1 - 2 * g["p"]), max_side))
    return g


def out_hw(g):
    return tuple((n + 2 * g["p"] - g["d"] * (k - 1) - 1) // g["s"] + 1 for n, k in ((g["h"], g["kh"]), (g["w"], g["kw"])))


_FIXED_GEOMETRY = [  # the hidden suite's kinds of problems: batch > 1, C_in != C_out, unread rows, padding
    dict(n=2, c_in=3, c_out=2, h=5, w=6, kh=3, kw=2, s=2, p=1, d=1),
    dict(n=1, c_in=1, c_out=1, h=4, w=4, kh=2, kw=2, s=1, p=0, d=1),
    dict(n=3, c_in=2, c_out=4, h=7, w=5, kh=3, kw=3, s=3, p=0, d=1),
    dict(n=2, c_in=2, c_out=3, h=6, w=6, kh=2, kw=3, s=2, p=2, d=2),
]


@st.composite
def _naive_case(draw):
    g = draw(geometry())
    dt_a, dt_w, dt_z = (draw(st.sampled_from((np.float32, np.float64))) for _ in range(3))
    ho, wo = out_hw(g)
    return {"g": g, "dz": draw(values(dt_z, (g["n"], g["c_out"], ho, wo))),
            "a_pad": draw(values(dt_a, (g["n"], g["c_in"], g["h"] + 2 * g["p"], g["w"] + 2 * g["p"]))),
            "w": draw(values(dt_w, (g["c_out"], g["c_in"], g["kh"], g["kw"])))}


def _random_case(g, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    ho, wo = out_hw(g)
    return {"g": g, "dz": rng.standard_normal((g["n"], g["c_out"], ho, wo)).astype(dtype),
            "a_pad": np.pad(rng.standard_normal((g["n"], g["c_in"], g["h"], g["w"])),
                            ((0, 0), (0, 0), (g["p"],) * 2, (g["p"],) * 2)).astype(dtype),
            "w": rng.standard_normal((g["c_out"], g["c_in"], g["kh"], g["kw"])).astype(dtype)}


def _naive(ns, case):
    g = case["g"]
    dz, a_pad, w = case["dz"].copy(), case["a_pad"].copy(), case["w"].copy()
    return observe(lambda: ns["naive"].conv2d_backward(dz, a_pad, w, g["p"], g["s"], g["d"]), (dz, a_pad, w))


@st.composite
def _forward_case(draw):
    g = draw(geometry())
    dtype = draw(st.sampled_from((np.float32, np.float64)))
    return {"g": g, "a": draw(values(dtype, (g["n"], g["h"], g["w"], g["c_in"]))),
            "b": draw(values(dtype, (g["kh"], g["kw"], g["c_in"], g["c_out"]))),
            "layouts": (draw(layouts), draw(layouts))}


def _nhwc(case):
    a = np.transpose(case["a_pad"], (0, 2, 3, 1))
    p = case["g"]["p"]
    return {"g": case["g"], "a": a[:, p:a.shape[1] - p, p:a.shape[2] - p, :],
            "b": np.transpose(case["w"], (2, 3, 1, 0)), "dz": np.transpose(case["dz"], (0, 2, 3, 1)),
            "layouts": ("strided", "reversed")}


def _im2col(ns, case):
    g = case["g"]
    a, b = ndarray(case["a"], case["layouts"][0]), ndarray(case["b"], case["layouts"][1])
    return observe(lambda: ns["Conv"](g["s"], g["p"], g["d"]).compute(a, b), (a, b))


@st.composite
def _gradient_case(draw):
    case = draw(_forward_case())
    g = case["g"]
    case["dz"] = draw(values(case["a"].dtype, (g["n"], *out_hw(g), g["c_out"])))
    return case


def _conv_gradient(ns, case):
    g, Tensor, ops = case["g"], ns["Tensor"], ns["ops"]
    a, b = Tensor(case["a"].copy(), dtype=str(case["a"].dtype)), Tensor(case["b"].copy(), dtype=str(case["b"].dtype))
    dz = Tensor(case["dz"].copy(), dtype=str(case["dz"].dtype))

    def grads():
        node = ops.conv(a, b, stride=g["s"], padding=g["p"], dilation=g["d"])
        return node.op.gradient(dz, node)
    return observe(grads, (a, b, dz))


def _fixed_case_of(case):
    g = case["g"]
    return {**case, "g": {**g, "d": 1}}


@st.composite
def _fixed_backward_case(draw):
    g = draw(geometry(dilation=False))
    dtype = draw(st.sampled_from((np.float32, np.float64)))
    return {"g": g, "dz": draw(values(dtype, (g["n"], g["c_out"], *out_hw(g)))),
            "w": draw(values(dtype, (g["c_out"], g["c_in"], g["kh"], g["kw"])))}


def _fixed_backward(ns, case):
    g = case["g"]
    dz, w = case["dz"].copy(), case["w"].copy()
    return observe(lambda: ns["fixed_input_gradient"](dz, w, (g["h"], g["w"]), g["s"], g["p"]), (dz, w))


_NAIVE_FIXED = tuple(_random_case(g, i) for i, g in enumerate(_FIXED_GEOMETRY))
BATTERIES = {
    "conv_naive_backward": Battery(_naive, cases=_naive_case(), fixed=_NAIVE_FIXED),
    "conv_im2col_forward": Battery(_im2col, cases=_forward_case(), fixed=tuple(_nhwc(c) for c in _NAIVE_FIXED)),
    "conv_backward": Battery(_conv_gradient, cases=_gradient_case(), fixed=tuple(_nhwc(c) for c in _NAIVE_FIXED)),
    "conv_fixed_backward": Battery(_fixed_backward, cases=_fixed_backward_case(), fixed=tuple(
        _random_case(g, i) for i, g in enumerate(_FIXED_GEOMETRY) if g["d"] == 1)),
}
