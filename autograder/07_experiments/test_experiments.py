"""Hidden checks of 07_experiments: the cost model (against the shapes of PyTorch's conv2d and unfold),
the bytes of the im2col forward's arrays (against PyTorch's tensors), the naive conv op on unseen
shapes (against PyTorch), the power argument's seeds (against torch.special.ndtri), the properties of the three experiments' results, and LossScaler.

The worker runs the notebook with NBGRADER_EXECUTION set, so the experiments are at their
reduced size; the sizes (IMPL_UPDATES, POOL_SEEDS, PREC_SEEDS, STRESS_UPDATES) are read from the
submission's locked setup cell. LossScaler is a class and cannot be called across the protocol:
it is driven through the loss_scaler_run scenario and compared with the reference (loss_scaler's
checks). The experiment's recorded scale sequences are replayed through the student's own scaler,
so that a scaler bug costs only loss_scaler's points.

Where the task describes a run exactly (the seeds, the data, the loader, the number of updates),
the grader repeats a cheap part of it with course_lib and the notebook's given code, on one
thread as the worker runs, and compares: the reference implementation's run and the fused
kernel's gradient check (implementations), the first max-pooling seed (pooling), the first loss
and the number of updates of every precision run and stress test (precision). The checks read no
other task's code: the first loss of a mixed run comes before the scaler's first update.

PYTEST_DONT_REWRITE (failure messages are the assertions' own text, shown to the student)
"""
import functools
from dataclasses import dataclass

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from numpy.lib.stride_tricks import sliding_window_view
from threadpoolctl import threadpool_limits

from course_lib import Tensor, TensorOp, TensorTupleOp, nd, nn, ops, optim, seed_everything
from course_lib.data import DataLoader, load_digits
from course_lib.precision import LossScaler, cast_model, parameter_count
from course_lib.train import accuracy, small_cnn
from course_tools.grading.api import (StudentError, as_float, as_int, as_list, as_mapping, as_numbers,
                                      expect_close, hwio, oihw, task, torch_conv_nchw)

torch.set_num_threads(1)

SMALL_CNN_PARAMETERS = parameter_count(small_cnn())
IMPLEMENTATIONS = ("naive loops", "im2col + autograd", "fused NumPy kernel")
REFERENCE = "im2col + autograd"
PRECISIONS = ("float64", "float32", "mixed float16", "float16 loss")
MIXED = ("mixed float16", "float16 loss")   # the recipe (loss in float32), and the loss in float16

# Contracts of earlier releases (release_versions.task_contracts: the fingerprint of the released
# <task>_code cell), kept so that a student who fetched one is graded on what it asked for:
# experiment_pooling before it asked for gradient_statistics (5a97785), experiment_precision before
# its rewrite (66e10ac: three precisions, the loss in float16, one stress run; its checks are today's,
# parametrised over both cells: _PrecisionCell).
EARLIER_POOLING = "de1e4117d615"
EARLIER_PRECISION = "b4bf2f9a3bf9"

# Everything read here was made by the submission (even the locked setup cell's sizes can be
# rebound by a later cell): each value goes through a reader of course_tools.grading.expect
# before it is converted or compared, so a wrong type fails that check, never the grading.
def _variable(student, name):
    return student.variable(name)


def _count(student, name) -> int:
    """A size of the setup cell (IMPL_UPDATES, STRESS_UPDATES, ...): a positive int."""
    value = as_int(_variable(student, name), name)
    if value < 1:
        raise StudentError(f"{name}: expected a positive int, got {value}")
    return value


# The largest sizes at which the grader repeats a run the task describes: the setup cell's full sizes
# (its values outside grading; graded, it runs smaller ones). A submission that rebinds a size past
# them fails that check; the grader does not train for as long as a submission asks.
REPEATED_AT_MOST = {"IMPL_UPDATES": 30, "IMPL_BATCH": 32, "POOL_EPOCHS": 3}


def _repeated_size(student, name) -> int:
    """A size of a run the grader repeats (REPEATED_AT_MOST): a positive int, at most that."""
    value = _count(student, name)
    if value > REPEATED_AT_MOST[name]:
        raise StudentError(f"{name} is {value}: the grader repeats the run the task describes at the setup cell's "
                           f"sizes only, at most {REPEATED_AT_MOST[name]} (is the setup cell's value rebound later?)")
    return value


def _seeds(student, name) -> int:
    """How many seeds the setup cell's list ``name`` (POOL_SEEDS, PREC_SEEDS) holds: at least one."""
    seeds = as_list(_variable(student, name), name)
    if not seeds:
        raise StudentError(f"{name}: expected at least one seed, got an empty list")
    return len(seeds)


def _results(student, name, keys):
    return as_mapping(_variable(student, name), name, keys, exact=True)


def _fields(record, where, fields):
    return as_mapping(record, where, fields)


def _per_seed(record, where, keys, seeds):
    """Check that each of ``keys`` holds one number per seed (nonzero_by_layer: two, one per pooling layer)."""
    for key in keys:
        values = as_list(record[key], f"{where}[{key!r}] (one value per seed)", seeds)
        as_numbers(values, f"{where}[{key!r}]", shape=(seeds, 2) if key == "nonzero_by_layer" else (seeds,))


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x)


# ----------------------------------------------------------- the experiments' described runs, repeated
# The notebook's given code that the runs use (its conv_variants and train_helpers cells), copied:
# the grader never imports the submission. Everything runs on one BLAS thread, as in the worker,
# so the same computation gives the same numbers (with two threads a sum may round differently,
# and training amplifies that to 1e-3 after 44 updates); the tolerances below allow float32 rounding.
def _one_thread(compute):
    @functools.wraps(compute)
    def run(*args):
        with threadpool_limits(limits=1, user_api="blas"):
            return compute(*args)
    return run


@functools.lru_cache(maxsize=None)
def _digits():
    return load_digits("train"), load_digits("test")


def _vectorized_conv(x, w, b, padding):
    out = ops.conv(nn.nchw_to_nhwc(x), w, padding=padding)
    out = out + ops.broadcast_to(ops.reshape(b, (1, 1, 1, b.shape[0])), out.shape)
    return nn.nhwc_to_nchw(out)


class _FusedConvBackward(TensorTupleOp):
    def __init__(self, padding):
        self.padding = padding

    def compute(self, out_grad, x, w):
        p, k = self.padding, w.shape[0]
        g = out_grad.numpy().transpose(0, 2, 3, 1)
        x_pad = np.pad(x.numpy().transpose(0, 2, 3, 1), ((0, 0), (p, p), (p, p), (0, 0)))
        windows = sliding_window_view(x_pad, (k, k), axis=(1, 2))
        dw = np.tensordot(windows, g, axes=([0, 1, 2], [0, 1, 2])).transpose(1, 2, 0, 3)
        db = g.sum(axis=(0, 1, 2))
        w_np, (h_out, w_out) = w.numpy(), g.shape[1:3]
        dx_pad = np.zeros_like(x_pad)
        for u in range(k):
            for v in range(k):
                dx_pad[:, u:u + h_out, v:v + w_out, :] += g @ w_np[u, v].T
        dx = dx_pad[:, p:p + x.shape[2], p:p + x.shape[3], :].transpose(0, 3, 1, 2)
        return nd.array(dx, device=x.device), nd.array(dw, device=x.device), nd.array(db, device=x.device)


class _FusedConv(TensorOp):
    def __init__(self, padding):
        self.padding = padding

    def compute(self, x, w, b):
        p, k = self.padding, w.shape[0]
        x_pad = np.pad(x.numpy().transpose(0, 2, 3, 1), ((0, 0), (p, p), (p, p), (0, 0)))
        windows = sliding_window_view(x_pad, (k, k), axis=(1, 2))
        z = np.tensordot(windows, w.numpy(), axes=([3, 4, 5], [2, 0, 1])) + b.numpy()
        return nd.array(z.transpose(0, 3, 1, 2), device=x.device)

    def gradient(self, out_grad, node):
        x, w, b = node.inputs
        grads = _FusedConvBackward(self.padding)(out_grad, x, w)
        return grads[0], grads[1], grads[2]


class _ConvWith(nn.Module):
    def __init__(self, conv, conv_fn):
        super().__init__()
        self.weight, self.bias = conv.weight, conv.bias
        self.padding, self.conv_fn = conv.kernel_size // 2, conv_fn

    def forward(self, x):
        return self.conv_fn(x, self.weight, self.bias, self.padding)


def _build_cnn(conv_fn, seed, dtype="float32"):
    seed_everything(seed)
    model = small_cnn()
    model.modules = [_ConvWith(m, conv_fn) if isinstance(m, nn.Conv) else m for m in model.modules]
    return cast_model(model, dtype)


def _train(model, optimizer, loader, updates):
    """run_updates with plain_step: the loss of every update."""
    loss_fn, losses = nn.SoftmaxLoss(), []
    while len(losses) < updates:
        for x, y in loader:
            optimizer.reset_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(float(loss.numpy()))
            if len(losses) == updates:
                break
    return losses


def _norm(arrays):
    return float(np.sqrt(sum(np.sum(np.asarray(a, dtype=np.float64) ** 2) for a in arrays)))


@functools.lru_cache(maxsize=None)
@_one_thread
def _reference_implementation_run(lr, updates, batch_size):
    """experiment_implementations' training run of the REFERENCE implementation: (losses, test accuracy)."""
    (x_train, y_train), (x_test, y_test) = _digits()
    base, model = _build_cnn(_vectorized_conv, 0), _build_cnn(_vectorized_conv, 0)
    for p, q in zip(base.parameters(), model.parameters()):
        q.cached_data = nd.array(p.numpy(), dtype=q.dtype, device=q.device)
    n = updates * batch_size
    loader = DataLoader(x_train[:n], y_train[:n], batch_size=batch_size, shuffle=True, seed=0)
    losses = _train(model, optim.Adam(model.parameters(), lr=lr), loader, updates)
    evaluator = small_cnn()
    for p, q in zip(model.parameters(), evaluator.parameters()):
        q.cached_data = p.realize_cached_data().astype("float32")
    return losses, accuracy(evaluator, x_test, y_test)


@functools.lru_cache(maxsize=None)
@_one_thread
def _reference_fused_grad_diff(check_batch):
    """experiment_implementations' gradient check of the fused kernel against im2col (seed 0, float64,
    the first check_batch training images): {"dA", "dW", "db"}: the largest |difference| over both layers."""
    (x_train, y_train), _ = _digits()
    grads = []
    for conv_fn in (_vectorized_conv, lambda x, w, b, padding: _FusedConv(padding)(x, w, b)):
        model = _build_cnn(conv_fn, 0, "float64")
        x = Tensor(x_train[:check_batch].astype("float64"), requires_grad=True)
        nn.SoftmaxLoss()(model(x), Tensor(y_train[:check_batch], requires_grad=False)).backward()
        layers = [m for m in model.modules if isinstance(m, _ConvWith)]
        grads.append({"dA": [x.grad.numpy()], "dW": [layer.weight.grad.numpy() for layer in layers],
                      "db": [layer.bias.grad.numpy() for layer in layers]})
    reference, fused = grads
    return {key: max(float(np.abs(mine - ref).max()) for mine, ref in zip(fused[key], reference[key]))
            for key in ("dA", "dW", "db")}


@functools.lru_cache(maxsize=None)
@_one_thread
def _reference_pooling_run(lr, batch, seed, epochs):
    """experiment_pooling's max-pooling run of one seed: the values it records for that seed."""
    (x_train, y_train), (x_test, y_test) = _digits()
    seed_everything(seed)
    model = small_cnn(pool="max")
    optimizer = optim.Adam(model.parameters(), lr=lr)
    loader = DataLoader(x_train, y_train, batch_size=batch, shuffle=True, seed=seed)
    _train(model, optimizer, loader, epochs * len(loader))
    test_accuracy = accuracy(model, x_test, y_test)
    optimizer.reset_grad()
    h, inputs = Tensor(x_test[:128], requires_grad=False), []
    for layer in model.modules:
        if isinstance(layer, (nn.MaxPool2d, nn.AvgPool2d)):
            inputs.append(h)
        h = layer(h)
    nn.SoftmaxLoss()(h, Tensor(y_test[:128], requires_grad=False)).backward()
    grads = [t.grad.numpy() for t in inputs]
    return {"test_accuracy": test_accuracy, "nonzero_by_layer": [np.count_nonzero(g) / g.size for g in grads],
            "grad_norm": _norm(grads), "param_grad_norm": _norm(p.grad.numpy() for p in model.parameters())}


@functools.lru_cache(maxsize=None)
@_one_thread
def _reference_first_loss(batch, seed, name):
    """The loss of the first update of experiment_precision's (or the stress test's) run ``name`` of
    ``seed``: the initial weights of seed_everything(seed), the first batch of the shuffled loader of
    that seed. It comes before any update, so no optimizer or scaler enters it."""
    (x_train, y_train), _ = _digits()
    dtype = "float16" if name in MIXED else name
    seed_everything(seed)
    model = cast_model(small_cnn(), dtype)
    x, y = next(iter(DataLoader(x_train.astype(dtype), y_train, batch_size=batch, shuffle=True, seed=seed)))
    logits = model(x)
    return float(nn.SoftmaxLoss()(ops.cast(logits, "float32") if name == "mixed float16" else logits, y).numpy())


# ------------------------------------------------------------------------------------------ cost_model
# (N, C_in, H, W, C_out, K, stride, padding, dtype): small_cnn's two layers, then shapes where every
# plausible slip differs: H != W, strides 2 and 3 whose windows do not tile the padded input exactly
# (the floor matters), an even kernel, a batch of 1 and other dtypes than float32.
COST_CONFIGS = [
    (32, 1, 8, 8, 8, 3, 1, 1, torch.float32),
    (32, 8, 4, 4, 16, 3, 1, 1, torch.float32),
    (2, 3, 9, 7, 5, 3, 2, 0, torch.float64),
    (3, 4, 11, 6, 2, 5, 3, 2, torch.float16),
    (1, 2, 7, 10, 3, 2, 2, 1, torch.float32),
]
COST_IMPLEMENTATIONS = ("naive", "im2col", "fused")


def _cost_label(cfg):
    n, c, h, w, c_out, k, s, p, dtype = cfg
    return f"conv_costs(N={n}, C_in={c}, H={h}, W={w}, C_out={c_out}, K={k}, stride={s}, padding={p}, " \
           f"itemsize={torch.empty(0, dtype=dtype).element_size()})"


@functools.lru_cache(maxsize=None)
def _torch_costs(cfg):
    """The model's numbers from the shapes PyTorch gives: conv2d's output, unfold's column matrix,
    and numel * element_size of each array."""
    n, c, h, w, c_out, k, s, p, dtype = cfg
    x, weight = torch.zeros(n, c, h, w), torch.zeros(c_out, c, k, k)
    out = F.conv2d(x, weight, stride=s, padding=p)
    columns = F.unfold(x, k, padding=p, stride=s)                   # (N, C_in K K, H_out W_out)
    assert columns.shape[2] == out.shape[2] * out.shape[3], "grader: unfold and conv2d disagree"
    item = torch.empty(0, dtype=dtype).element_size()
    arrays = (x.numel() + weight.numel() + out.numel()) * item
    column_bytes = columns.numel() * item
    return {"out_hw": tuple(out.shape[2:]), "flops": 2 * out.numel() * c * k * k, "column_bytes": column_bytes,
            "bytes": {"naive": arrays, "im2col": arrays + 2 * column_bytes, "fused": arrays}}


def _whole(value, what) -> int:
    """A count: an int, or a float with an integral value."""
    number = as_float(value, what)
    if not (np.isfinite(number) and number == int(number)):
        raise StudentError(f"{what}: expected a whole number (an int), got {number!r}")
    return int(number)


def _student_costs(student, cfg, field, peak_flops=1e9, bandwidth=1e9):
    """One field of the submission's conv_costs for ``cfg``, read and checked; a malformed other field
    costs that field's check, not this one."""
    n, c, h, w, c_out, k, s, p, dtype = cfg
    what = _cost_label(cfg)
    got = as_mapping(student.call("student:conv_costs", N=n, C_in=c, H=h, W=w, C_out=c_out, K=k, stride=s, padding=p,
                                  itemsize=torch.empty(0, dtype=dtype).element_size(), peak_flops=peak_flops,
                                  bandwidth=bandwidth), what, (field,))
    where = f"{what}[{field!r}]"
    if field == "out_hw":
        return tuple(_whole(v, f"{where}[{i}]") for i, v in enumerate(as_list(got[field], f"{where} (H_out, W_out)", 2)))
    if field in ("flops", "column_bytes"):
        return _whole(got[field], where)
    per_implementation = as_mapping(got[field], where, COST_IMPLEMENTATIONS)
    read = _whole if field == "bytes" else as_float
    return {name: read(per_implementation[name], f"{where}[{name!r}]") for name in COST_IMPLEMENTATIONS}


@task("cost_model", weight=1)
def test_cost_model_output_size(student):
    """out_hw is the output's spatial size that PyTorch's conv2d gives (strides, padding, H != W)"""
    for cfg in COST_CONFIGS:
        got, expected = _student_costs(student, cfg, "out_hw"), _torch_costs(cfg)["out_hw"]
        assert got == expected, (f"{_cost_label(cfg)}: out_hw is {got}, but the convolution's output is {expected} "
                                 f"(H_out, W_out): how many window positions fit into the padded input, moving by "
                                 f"the stride?")


@task("cost_model", weight=1)
def test_cost_model_flops(student):
    """flops: 2 FLOPs per multiply-add, a dot product of length C_in K^2 per output element"""
    for cfg in COST_CONFIGS:
        got, expected = _student_costs(student, cfg, "flops"), _torch_costs(cfg)["flops"]
        hint = "; that is half the expected count: a multiply-add is 2 FLOPs" if 2 * got == expected else ""
        assert got == expected, f"{_cost_label(cfg)}: flops is {got:,}, expected {expected:,}{hint}"


@task("cost_model", weight=1)
def test_cost_model_column_bytes(student):
    """column_bytes: numel * itemsize of the column matrix (PyTorch's unfold), for the whole batch"""
    for cfg in COST_CONFIGS:
        got, expected = _student_costs(student, cfg, "column_bytes"), _torch_costs(cfg)["column_bytes"]
        hint = "; that is one image's: the column matrix has a row per output position of every image" \
            if got * cfg[0] == expected and cfg[0] > 1 else ""
        assert got == expected, f"{_cost_label(cfg)}: column_bytes is {got:,}, expected {expected:,}{hint}"


@task("cost_model", weight=1)
def test_cost_model_bytes_moved(student):
    """bytes: input, weights and output once each; im2col also writes and reads its column matrix"""
    for cfg in COST_CONFIGS:
        got, expected = _student_costs(student, cfg, "bytes"), _torch_costs(cfg)["bytes"]
        for name in COST_IMPLEMENTATIONS:
            assert got[name] == expected[name], (
                f"{_cost_label(cfg)}: bytes[{name!r}] is {got[name]:,}, expected {expected[name]:,} (input, weights "
                f"and output read or written once{', plus the column matrix written and read' if name == 'im2col' else ''})")


@task("cost_model", weight=1)
def test_cost_model_roofline(student):
    """seconds = max(flops / peak_flops, bytes / bandwidth): compute-bound and memory-bound machines"""
    for peak, bandwidth in ((1e12, 1e6), (1e3, 1e12), (5e10, 2e10)):
        for cfg in COST_CONFIGS[2:4]:
            got, expected = _student_costs(student, cfg, "seconds", peak, bandwidth), _torch_costs(cfg)
            for name in COST_IMPLEMENTATIONS:
                roof = max(expected["flops"] / peak, expected["bytes"][name] / bandwidth)
                assert np.isclose(got[name], roof, rtol=1e-9, atol=0), (
                    f"{_cost_label(cfg)} with peak_flops={peak:g}, bandwidth={bandwidth:g}: seconds[{name!r}] is "
                    f"{got[name]:.6g}, the roofline max(flops / peak_flops, bytes / bandwidth) gives {roof:.6g}")


# --------------------------------------------------------------------------------------- im2col_memory
MEMORY_NODES = ("input", "padded_input", "columns", "matmul_output", "output")


@functools.lru_cache(maxsize=None)
def _torch_memory(cfg):
    """numel * element_size of the im2col forward's arrays, built with PyTorch: the input, F.pad's
    padded input, F.unfold's columns, their product with the kernel, and that product reshaped."""
    n, c, h, w, c_out, k, s, p, dtype = cfg
    x, weight = torch.zeros(n, c, h, w), torch.zeros(c_out, c, k, k)
    padded = F.pad(x, (p, p, p, p))
    columns = F.unfold(x, k, padding=p, stride=s).transpose(1, 2)       # (N, H_out W_out, C_in K K)
    product = columns.reshape(-1, c * k * k) @ weight.reshape(c_out, -1).T
    out_hw = F.conv2d(x, weight, stride=s, padding=p).shape[2:]
    output = product.reshape(n, *out_hw, c_out)
    item = torch.empty(0, dtype=dtype).element_size()
    return {name: t.numel() * item for name, t in zip(MEMORY_NODES, (x, padded, columns, product, output))}


@task("im2col_memory", weight=1)
def test_im2col_memory_bytes(student):
    """the bytes of each array of the im2col forward, against numel * itemsize of PyTorch's (strides, padding, H != W)"""
    for cfg in COST_CONFIGS:
        n, c, h, w, c_out, k, s, p, dtype = cfg
        what = _cost_label(cfg).replace("conv_costs", "im2col_memory")
        got = as_mapping(student.call("student:im2col_memory", N=n, C_in=c, H=h, W=w, C_out=c_out, K=k, stride=s,
                                      padding=p, itemsize=torch.empty(0, dtype=dtype).element_size()),
                         what, MEMORY_NODES)
        expected = _torch_memory(cfg)
        for name in MEMORY_NODES:
            value = _whole(got[name], f"{what}[{name!r}]")
            assert value == expected[name], f"{what}: {name} is {value:,} bytes, expected {expected[name]:,}"


# ------------------------------------------------------------------------------------- seeds_for_power
# (sigma_d, delta, alpha, power): ordinary cases, then a tiny delta (millions of seeds) and a huge one (the
# minimum, 2). At each the exact n is far from a whole number, so rounding up is tested, not float noise.
POWER_CASES = [(1.6, 2.0, 0.05, 0.8), (1.6, 1.0, 0.05, 0.8), (3.3, 0.5, 0.01, 0.9), (0.7, 0.6, 0.1, 0.95),
               (2.0, 1.0, 0.05, 0.5), (2.5, 1.5, 0.2, 0.7)]
POWER_EDGES = [(1.0, 1e-3, 0.05, 0.8), (1.0, 50.0, 0.05, 0.8), (0.3, 2.0, 0.05, 0.8), (0.0, 1.0, 0.05, 0.8)]


def _z(q):
    return float(torch.special.ndtri(torch.tensor(q, dtype=torch.float64)))


def _seeds_alternatives(sigma_d, delta, alpha, power):
    """The right number of seeds, the unrounded n, and what the plausible slips give."""
    n = ((_z(1 - alpha / 2) + _z(power)) * sigma_d / delta) ** 2
    wrong = {"z of 1 - alpha instead of 1 - alpha/2 (a one-sided test)":
             max(2, int(np.ceil(((_z(1 - alpha) + _z(power)) * sigma_d / delta) ** 2))),
             "n rounded down instead of up": max(2, int(np.floor(n))),
             "n rounded to the nearest whole number instead of up": max(2, int(np.round(n))),
             "without the square": max(2, int(np.ceil((_z(1 - alpha / 2) + _z(power)) * sigma_d / delta))),
             "a minimum of 1 seed instead of 2": max(1, int(np.ceil(n)))}
    return max(2, int(np.ceil(n))), n, wrong


def _expect_seeds(student, case):
    right, n, wrong = _seeds_alternatives(*case)
    assert n < 2 or abs(n - round(n)) > 1e-6, f"grader: n = {n} is too close to a whole number for {case}"
    sigma_d, delta, alpha, power = case
    what = f"seeds_for_power({sigma_d}, {delta}, alpha={alpha}, power={power})"
    got = as_int(student.call("student:seeds_for_power", sigma_d, delta, alpha=alpha, power=power), what)
    named = [why for why, value in wrong.items() if value == got and value != right]
    assert got == right, f"{what} is {got}, expected {right}" + (f"; {got} is what {named[0]} gives" if named else "")


@task("seeds_for_power", weight=2)
def test_seeds_for_power_values(student):
    """seeds_for_power against the normal quantiles (torch.special.ndtri) on unseen sigma_d, delta, alpha, power"""
    for case in POWER_CASES:
        _expect_seeds(student, case)


@task("seeds_for_power", weight=1)
def test_seeds_for_power_edges(student):
    """a tiny difference needs millions of seeds, a huge one (or no spread at all) the minimum of 2"""
    for case in POWER_EDGES:
        _expect_seeds(student, case)


# ------------------------------------------------------------------------- experiment_implementations
# (N, C_in, H, W, C_out, K, padding)
NAIVE_CONFIGS = [
    pytest.param((2, 3, 5, 4, 2, 3, 1), id="same-3x3-HneW"),
    pytest.param((1, 2, 6, 5, 3, 1, 0), id="1x1-kernel"),
    pytest.param((2, 1, 4, 6, 2, 5, 2), id="same-5x5"),
    pytest.param((1, 2, 6, 5, 3, 3, 0), id="valid-3x3"),
    pytest.param((3, 2, 3, 4, 1, 2, 1), id="even-kernel-padded"),
]


@pytest.mark.parametrize("cfg", NAIVE_CONFIGS)
@task("experiment_implementations", weight=1)
def test_naive_conv_forward_and_backward(student, rng, cfg):
    """naive_conv (your NaiveConv and NaiveConvBackward) on unseen shapes, against PyTorch"""
    n, c_in, h, w, c_out, k, p = cfg
    x = rng.standard_normal((n, c_in, h, w))
    kernel = rng.standard_normal((k, k, c_in, c_out))
    bias = rng.standard_normal(c_out)
    g = rng.standard_normal((n, c_out, h + 2 * p - k + 1, w + 2 * p - k + 1))
    out, dx, dw_oihw, db = torch_conv_nchw(x, oihw(kernel), padding=p, g=g, bias=bias)
    dw = hwio(dw_oihw)
    got = student.call("student:naive_conv", x, kernel, bias, as_tensors=True, out_grad=g, padding=p)
    label = f"naive_conv: x {x.shape}, W {kernel.shape} (K, K, C_in, C_out), padding {p}"
    expect_close(got["out"], out, f"{label}: output (N, C_out, H_out, W_out)", rtol=1e-9, atol=1e-9)
    for name, grad, expected in zip(("dx", "dW", "db"), got["grads"], (dx, dw, db)):
        assert grad is not None, f"{label}: no gradient reached {name}"
        expect_close(grad, expected, f"{label}: {name}", rtol=1e-9, atol=1e-9)


@task("experiment_implementations", weight=1)
def test_implementation_results_structure(student):
    """impl_results has one complete record per implementation"""
    results = _results(student, "impl_results", IMPLEMENTATIONS)
    updates = _count(student, "IMPL_UPDATES")
    for name in IMPLEMENTATIONS:
        r = _fields(results[name], f"impl_results[{name!r}]",
                    ("grad_diff", "losses", "train_seconds", "test_accuracy", "parameter_count", "peak_bytes"))
        assert isinstance(r["grad_diff"], dict) and set(r["grad_diff"]) == {"dA", "dW", "db"}, \
            f"impl_results[{name!r}]['grad_diff'] needs the keys dA, dW, db"
        losses = as_numbers(r["losses"], f"impl_results[{name!r}]['losses']")
        assert losses.shape == (updates,), f"{name}: one loss per update ({updates}), got shape {losses.shape}"
        assert np.all(np.isfinite(losses)), f"{name}: a training loss is not finite"


@task("experiment_implementations", weight=2)
def test_implementation_gradients_agree(student):
    """the three implementations' gradients agree in float64; the reference's difference is exactly 0"""
    results = _results(student, "impl_results", IMPLEMENTATIONS)
    for name in IMPLEMENTATIONS:
        diffs = _fields(results[name], f"impl_results[{name!r}]", ("grad_diff",))["grad_diff"]
        for key in ("dA", "dW", "db"):
            diff = diffs.get(key) if isinstance(diffs, dict) else None
            assert _is_number(diff) and diff >= 0, f"{name}: grad_diff[{key!r}] = {diff!r} is not a distance"
            assert diff < 1e-9, (f"{name}: {key} differs from the im2col gradient by {diff:.3g}; in float64 the "
                                 f"implementations agree to about 1e-15 (layouts? padding?)")
    assert all(d == 0 for d in results[REFERENCE]["grad_diff"].values()), \
        "the reference's disagreement with itself must be exactly 0"


@task("experiment_implementations", weight=1)
def test_implementation_runs_coincide(student):
    """same weights, same batches: the three training runs coincide and end at the same accuracy"""
    results = _results(student, "impl_results", IMPLEMENTATIONS)
    ours = _fields(results[REFERENCE], REFERENCE, ("losses", "test_accuracy"))
    reference = as_numbers(ours["losses"], f"impl_results[{REFERENCE!r}]['losses']")
    reference_accuracy = as_float(ours["test_accuracy"], f"impl_results[{REFERENCE!r}]['test_accuracy']")
    for name in IMPLEMENTATIONS:
        r = _fields(results[name], name, ("losses", "test_accuracy"))
        losses = as_numbers(r["losses"], f"impl_results[{name!r}]['losses']")
        assert losses.shape == reference.shape and np.allclose(losses, reference, rtol=1e-3, atol=1e-4), (
            f"{name}: its training losses differ from im2col's; every run must start from the same weights "
            f"(copy_parameters) and see the same batches (a fresh DataLoader with seed=0)")
        acc = r["test_accuracy"]
        assert _is_number(acc) and 0.1 < acc <= 1.0, f"{name}: test_accuracy {acc!r} should be a fraction above chance (0.1)"
        assert abs(acc - reference_accuracy) <= 0.01, (
            f"{name}: test accuracy {acc:.3f} differs from im2col's {reference_accuracy:.3f} "
            f"although the runs are the same computation")


@task("experiment_implementations", weight=1)
def test_implementation_measurements(student):
    """equal parameter counts (small_cnn's), positive times and peak memory"""
    results = _results(student, "impl_results", IMPLEMENTATIONS)
    for name in IMPLEMENTATIONS:
        r = _fields(results[name], name, ("parameter_count", "train_seconds", "peak_bytes"))
        assert r["parameter_count"] == SMALL_CNN_PARAMETERS, (
            f"{name}: parameter_count {r['parameter_count']!r}; every model is small_cnn, with small_cnn's count")
        assert _is_number(r["train_seconds"]) and r["train_seconds"] > 0, f"{name}: train_seconds must be positive"
        assert isinstance(r["peak_bytes"], int) and r["peak_bytes"] > 0, f"{name}: peak_bytes must be a positive int"


@task("experiment_implementations", weight=1)
def test_implementation_experiment_repeats_as_described(student):
    """the reference run and the fused kernel's gradient check are the runs the task describes (seed 0, float32, the data, the loader; the largest difference)"""
    results = _results(student, "impl_results", IMPLEMENTATIONS)
    updates, batch_size = _repeated_size(student, "IMPL_UPDATES"), _repeated_size(student, "IMPL_BATCH")
    check_batch, lr = _count(student, "CHECK_BATCH"), as_float(_variable(student, "LR"), "LR")
    expected_losses, expected_accuracy = _reference_implementation_run(lr, updates, batch_size)
    ours = _fields(results[REFERENCE], f"impl_results[{REFERENCE!r}]", ("losses", "test_accuracy", "grad_diff"))
    losses = as_numbers(ours["losses"], f"impl_results[{REFERENCE!r}]['losses']")
    assert losses.shape == (updates,) and np.allclose(losses, expected_losses, rtol=1e-6, atol=0), (
        f"{REFERENCE}: the grader's run of build_cnn(vectorized_conv, seed=0), trained on the first updates * "
        f"batch_size training images with a fresh DataLoader(..., shuffle=True, seed=0), has the losses "
        f"{np.round(expected_losses[:3], 5).tolist()}..., yours start {np.round(losses[:3], 5).tolist()}: "
        f"is every run built from the float32 base model of seed 0, on those images, in that loader?")
    assert np.all(losses.astype(np.float32) == losses), (
        f"{REFERENCE}: its losses are not float32 numbers, so its training did not run in float32: train a model of "
        f"build_cnn(conv_fn, seed=0) (float32) for each implementation (float64 is for the gradient check only)")
    accuracy_ = as_float(ours["test_accuracy"], f"impl_results[{REFERENCE!r}]['test_accuracy']")
    assert abs(accuracy_ - expected_accuracy) < 1e-9, (
        f"{REFERENCE}: test accuracy {accuracy_:.4f}; the same run in the grader ends at {expected_accuracy:.4f}")
    expected = _reference_fused_grad_diff(check_batch)
    diffs = _fields(results["fused NumPy kernel"], "impl_results['fused NumPy kernel']", ("grad_diff",))["grad_diff"]
    for key in ("dA", "dW", "db"):
        diff = as_float(diffs.get(key) if isinstance(diffs, dict) else None,
                        f"impl_results['fused NumPy kernel']['grad_diff'][{key!r}]")
        assert np.isclose(diff, expected[key], rtol=1e-6, atol=0), (
            f"fused NumPy kernel: grad_diff[{key!r}] is {diff:.3g}; the grader's gradient check (build_cnn(conv_fn, "
            f"seed=0, dtype='float64'), the first CHECK_BATCH training images) gives {expected[key]:.3g}, the "
            f"largest |fused - im2col| over every entry of both layers")


# --------------------------------------------------------------------------------- experiment_pooling
POOL_PER_SEED = ("test_accuracy", "train_seconds", "predict_seconds", "nonzero_fraction", "nonzero_by_layer",
                 "grad_norm", "param_grad_norm")


def _pool(student):
    results = _results(student, "pool_results", ("max", "avg"))
    seeds = _seeds(student, "POOL_SEEDS")
    for pool in ("max", "avg"):
        r = _fields(results[pool], f"pool_results[{pool!r}]", POOL_PER_SEED + ("parameter_count", "peak_bytes"))
        _per_seed(r, f"pool_results[{pool!r}]", POOL_PER_SEED, seeds)
    return results


@task("experiment_pooling", weight=1)
def test_pooling_results_structure(student):
    """pool_results has a per-seed record for max and average pooling"""
    results = _pool(student)
    for pool in ("max", "avg"):
        for key in POOL_PER_SEED:
            values = np.asarray(results[pool][key], dtype=float)
            assert np.all(np.isfinite(values)), f"pool_results[{pool!r}][{key!r}]: a value is not finite"
        layers = np.asarray(results[pool]["nonzero_by_layer"], dtype=float)
        assert layers.shape == (len(results[pool]["test_accuracy"]), 2), \
            f"pool_results[{pool!r}]['nonzero_by_layer']: two fractions (one per pooling layer) per seed"


@task("experiment_pooling", weight=2)
def test_max_pooling_gradient_is_sparse(student):
    """max pooling with 2x2 windows: at most 1 in 4 pooling inputs gets a gradient, in each layer"""
    results = _pool(student)
    r = results["max"]
    fractions = np.asarray(r["nonzero_fraction"], dtype=float)
    layers = np.asarray(r["nonzero_by_layer"], dtype=float)
    assert np.all((fractions > 0) & (fractions <= 0.25 + 1e-9)), (
        f"max pooling's nonzero_fraction should be in (0, 1/4]: got {np.round(fractions, 4).tolist()} "
        f"(is it measured at the pooling *inputs*?)")
    assert np.all((layers > 0) & (layers <= 0.25 + 1e-9)), (
        f"max pooling's nonzero_by_layer should be in (0, 1/4] for both layers: got {np.round(layers, 4).tolist()}")


@task("experiment_pooling", weight=1)
def test_average_pooling_gradient_is_dense(student):
    """average pooling spreads the gradient: a much denser gradient than max pooling"""
    results = _pool(student)
    avg = np.asarray(results["avg"]["nonzero_fraction"], dtype=float)
    mx = np.asarray(results["max"]["nonzero_fraction"], dtype=float)
    assert np.all((avg >= 0.5) & (avg <= 1.0)), (
        f"average pooling sends g/4 to all four inputs of a window: nonzero_fraction should be near 1, got "
        f"{np.round(avg, 4).tolist()}")
    assert avg.mean() > mx.mean(), "average pooling should give a denser gradient than max pooling"


@task("experiment_pooling", weight=1)
def test_pooling_fractions_are_consistent(student):
    """nonzero_fraction is the fraction over both layers together (the layers have 512 and 256 entries per image)"""
    results = _pool(student)
    for pool in ("max", "avg"):
        layers = np.asarray(results[pool]["nonzero_by_layer"], dtype=float)
        overall = np.asarray(results[pool]["nonzero_fraction"], dtype=float)
        expected = (2 * layers[:, 0] + layers[:, 1]) / 3   # (N, 8, 8, 8) and (N, 16, 4, 4) entries
        assert np.allclose(overall, expected, rtol=0, atol=1e-9), (
            f"{pool}: nonzero_fraction should be non-zero entries / all entries over both pooling inputs; it does "
            f"not match nonzero_by_layer")


def _statistics_alternatives(grads):
    """The right statistics of ``grads`` and the plausible wrong formulas for each (issue 25: at the
    grading size every layer of max pooling has exactly 1/4 non-zero, so the notebook's own run
    cannot tell these apart; a constructed input can)."""
    nonzero = np.array([np.count_nonzero(g) for g in grads], dtype=float)
    sizes = np.array([g.size for g in grads], dtype=float)
    norms = np.array([np.sqrt(np.sum(g ** 2)) for g in grads])
    right = {"nonzero_fraction": nonzero.sum() / sizes.sum(), "grad_norm": float(np.sqrt(np.sum(norms ** 2)))}
    wrong = {"nonzero_fraction": {"the mean of the per-layer fractions": float(np.mean(nonzero / sizes)),
                                  "the first layer's fraction": nonzero[0] / sizes[0],
                                  "the last layer's fraction": nonzero[-1] / sizes[-1]},
             "grad_norm": {"the sum of the layers' norms": float(norms.sum()),
                           "the mean of the layers' norms": float(norms.mean()),
                           "the sum of squares, without the square root": float(np.sum(norms ** 2)),
                           "the last layer's norm": float(norms[-1])}}
    return right, wrong


def _constructed_gradients(rng, n):
    """Pooling-input gradients of small_cnn's shapes whose layers differ in sparsity: a random share
    of exact zeros per layer, the rest normal values."""
    grads = []
    for shape, share in (((n, 8, 8, 8), rng.uniform(0.05, 0.3)), ((n, 16, 4, 4), rng.uniform(0.6, 0.95))):
        g = rng.standard_normal(shape)
        g[rng.random(shape) >= share] = 0.0
        grads.append(g)
    return grads


@task("experiment_pooling", weight=2, not_for=EARLIER_POOLING)
def test_gradient_statistics_on_constructed_gradients(student, rng):
    """gradient_statistics on gradients whose layers differ in sparsity: the fraction over all entries and the joint norm"""
    for n in (3, 1):
        grads = _constructed_gradients(rng, n)
        right, wrong = _statistics_alternatives(grads)
        for key, alternatives in wrong.items():   # the input must separate every wrong formula from the right one
            assert all(abs(v - right[key]) > 1e-3 * max(1.0, abs(right[key])) for v in alternatives.values()), \
                f"grader: the constructed input does not separate the formulas of {key}"
        shapes = [g.shape for g in grads]
        got = as_mapping(student.call("student:gradient_statistics", *grads), "gradient_statistics(...)",
                         ("nonzero_by_layer", "nonzero_fraction", "grad_norm"))
        by_layer = as_numbers(got["nonzero_by_layer"], "gradient_statistics(...)['nonzero_by_layer']", shape=(2,))
        expect_close(by_layer, [np.count_nonzero(g) / g.size for g in grads],
                     f"gradient_statistics, gradients {shapes}: nonzero_by_layer", rtol=1e-12, atol=1e-12)
        for key in ("nonzero_fraction", "grad_norm"):
            value = as_float(got[key], f"gradient_statistics(...)[{key!r}]")
            named = next((what for what, v in wrong[key].items() if np.isclose(value, v, rtol=1e-9, atol=0)), None)
            assert np.isclose(value, right[key], rtol=1e-9, atol=0), (
                f"gradient_statistics, gradients {shapes}: {key} is {value:.6g}, expected {right[key]:.6g}"
                + (f"; {value:.6g} is {named}" if named else ""))


@task("experiment_pooling", weight=1)
def test_pooling_measurements(student):
    """pooling has no parameters; times, memory and gradient norms are positive; both models learn"""
    results = _pool(student)
    for pool in ("max", "avg"):
        r = results[pool]
        assert r["parameter_count"] == SMALL_CNN_PARAMETERS, (
            f"{pool}: parameter_count {r['parameter_count']!r}; pooling has no parameters, so both models have "
            f"small_cnn's count")
        assert isinstance(r["peak_bytes"], int) and r["peak_bytes"] > 0, f"{pool}: peak_bytes must be a positive int"
        for key in ("train_seconds", "predict_seconds", "grad_norm", "param_grad_norm"):
            assert all(_is_number(v) and v > 0 for v in r[key]), f"{pool}: every {key} must be positive"
        acc = np.asarray(r["test_accuracy"], dtype=float)
        assert np.all((acc >= 0) & (acc <= 1)) and acc.mean() > 0.5, (
            f"{pool} pooling: mean test accuracy {acc.mean():.2f}; after training it should be well above "
            f"chance (0.1)")


@task("experiment_pooling", weight=1, not_for=EARLIER_POOLING)
def test_pooling_run_repeats_as_described(student):
    """the first max-pooling seed is the run the task describes (its seed, loader and updates) and its statistics those of the trained model"""
    results = _pool(student)
    seeds = as_list(_variable(student, "POOL_SEEDS"), "POOL_SEEDS")
    seed = as_int(seeds[0], "POOL_SEEDS[0]")
    epochs, batch = _repeated_size(student, "POOL_EPOCHS"), _count(student, "BATCH")
    expected = _reference_pooling_run(as_float(_variable(student, "LR"), "LR"), batch, seed, epochs)
    r = results["max"]
    got = {key: as_float(r[key][0], f"pool_results['max'][{key!r}][0]")
           for key in ("test_accuracy", "grad_norm", "param_grad_norm")}
    assert abs(got["test_accuracy"] - expected["test_accuracy"]) < 1e-9, (
        f"max pooling, seed {seed}: test accuracy {got['test_accuracy']:.4f}; the grader's run (seed_everything({seed}), "
        f"small_cnn(pool='max'), Adam, a DataLoader(X_TRAIN, Y_TRAIN, batch_size=BATCH, shuffle=True, seed={seed}), "
        f"epochs * len(loader) updates) ends at {expected['test_accuracy']:.4f}")
    by_layer = np.asarray(r["nonzero_by_layer"][0], dtype=float)
    assert np.allclose(by_layer, expected["nonzero_by_layer"], rtol=0, atol=1e-12), (
        f"max pooling, seed {seed}: nonzero_by_layer {np.round(by_layer, 4).tolist()}; the grader's trained model gives "
        f"{np.round(expected['nonzero_by_layer'], 4).tolist()} on the fixed batch")
    assert np.isclose(got["grad_norm"], expected["grad_norm"], rtol=1e-6, atol=0), (
        f"max pooling, seed {seed}: grad_norm {got['grad_norm']:.6g}; the grader's trained model gives "
        f"{expected['grad_norm']:.6g} on the fixed batch (the first 128 test images)")
    assert np.isclose(got["param_grad_norm"], expected["param_grad_norm"], rtol=1e-6, atol=0), (
        f"max pooling, seed {seed}: param_grad_norm {got['param_grad_norm']:.6g}; the grader gets "
        f"{expected['param_grad_norm']:.6g}: the Euclidean norm of every parameter's .grad, which the fixed batch's "
        f"backward filled")


# ------------------------------------------------------------------------------- experiment_precision
PREC_PER_SEED = ("test_accuracy", "skipped_steps", "train_seconds")


@dataclass(frozen=True)
class _PrecisionCell:
    """What a release's experiment_precision cell asked for, as the checks read it. Each check that
    fits both is parametrised over today's cell and the one released before 66e10ac (_each_cell)."""
    precisions: tuple[str, ...]            # precision_results' rows
    float16_loss: str                      # the row whose loss is float16: its first step, at 2^16, overflows
    recipe: str | None                     # the mixed row with the loss in float32, where the cell had one
    stress_runs: tuple[str, ...] | None    # stress_results' runs, keyed by row; None: stress_results is one run

    @property
    def mixed(self) -> tuple[str, ...]:
        """The rows trained with a LossScaler."""
        return tuple(name for name in (self.recipe, self.float16_loss) if name is not None)

    def stress(self, student) -> list[tuple[str, str, dict]]:
        """stress_results as (where, label, run): ``where`` names the variable as the cell has it,
        ``label`` names the run in messages."""
        if self.stress_runs is None:
            return [("stress_results", "stress test", _stress_run(_variable(student, "stress_results"), "stress_results"))]
        return [(f"stress_results[{name!r}]", f"stress test, {name}", run) for name, run in _stress(student, self.stress_runs).items()]


# Today's cell: four precisions, the recipe's mixed row next to a float16-loss row, a stress test of each.
# Before 66e10ac: three precisions, "mixed float16" computed its loss in float16, one stress test.
# Both ran the student's own LossScaler: the checks charge a scaler bug, a wrong overflow flag included,
# to loss_scaler alone, for either cell.
PRECISION_NOW = _PrecisionCell(PRECISIONS, float16_loss="float16 loss", recipe="mixed float16", stress_runs=MIXED)
PRECISION_EARLIER = _PrecisionCell(PRECISIONS[:3], float16_loss="mixed float16", recipe=None, stress_runs=None)


def _each_cell(weight):
    """Parametrise a check of experiment_precision over PRECISION_NOW and PRECISION_EARLIER, at
    ``weight`` each: the earlier cell's case names its contract, so it grades that release only."""
    return pytest.mark.parametrize("cell", [
        pytest.param(PRECISION_NOW, id="four-precisions", marks=task("experiment_precision", weight=weight)),
        pytest.param(PRECISION_EARLIER, id="three-precisions",
                     marks=task("experiment_precision", weight=weight, contract=EARLIER_PRECISION))])


def _precision(student, precisions=PRECISIONS):
    """precision_results for ``precisions`` (today's rows, or an earlier release's), its fields checked."""
    results = _results(student, "precision_results", precisions)
    seeds = _seeds(student, "PREC_SEEDS")
    for name in precisions:
        where = f"precision_results[{name!r}]"
        r = _fields(results[name], where, PREC_PER_SEED + (
            "losses", "scales", "parameter_count", "parameter_bytes", "peak_bytes"))
        _per_seed(r, where, PREC_PER_SEED, seeds)
        for key in ("losses", "scales"):
            as_numbers(r[key], f"{where}[{key!r}]", shape=(None,))
        for key in ("parameter_count", "parameter_bytes"):
            as_float(r[key], f"{where}[{key!r}]")
    return results


def _stress_run(run, where):
    """One stress test's record, its fields checked."""
    run = _fields(run, where, ("init_scale", "growth_interval", "scales", "losses", "skipped_steps"))
    as_float(run["init_scale"], f"{where}['init_scale']")
    for key in ("scales", "losses"):
        as_numbers(run[key], f"{where}[{key!r}]", shape=(None,))
    return run


def _stress(student, names=MIXED):
    """stress_results: one run per mixed row (``names``), each with its scales, losses and skipped steps."""
    runs = _results(student, "stress_results", names)
    return {name: _stress_run(runs[name], f"stress_results[{name!r}]") for name in names}


def _steps_at_or_above(scales, init_scale, threshold=2.0 ** 16):
    """(taken, skipped): the steps that started with a scale >= threshold and were taken / skipped
    (a step is skipped exactly when the scale drops after it)."""
    scales = np.asarray(scales, dtype=float)
    before = np.concatenate([[float(init_scale)], scales[:-1]])
    high, dropped = before >= threshold, scales < before
    return int(np.sum(high & ~dropped)), int(np.sum(high & dropped))


@_each_cell(weight=1)
def test_precision_results_structure(student, cell):
    """precision_results has a record per precision; float64 and float32 skip nothing"""
    results = _precision(student, cell.precisions)
    for name in cell.precisions:
        r = results[name]
        losses = np.asarray(r["losses"], dtype=float)
        assert losses.ndim == 1 and losses.size > 0 and np.all(np.isfinite(losses)), \
            f"{name}: the recorded losses (first seed) must be a non-empty list of finite numbers"
        assert all(_is_number(t) and t > 0 for t in r["train_seconds"]), f"{name}: train_seconds must be positive"
        assert isinstance(r["peak_bytes"], int) and r["peak_bytes"] > 0, f"{name}: peak_bytes must be a positive int"
    for name in ("float64", "float32"):
        assert list(results[name]["skipped_steps"]) == [0] * len(results[name]["skipped_steps"]), \
            f"{name} has no loss scaler: its skipped_steps are 0"
        assert list(results[name]["scales"]) == [], f"{name} has no loss scaler: its scales list is empty"


@_each_cell(weight=2)
def test_parameter_bytes_by_precision(student, cell):
    """parameter bytes: 8, 4 and 2 per parameter, for small_cnn's parameter count"""
    results = _precision(student, cell.precisions)
    counts = {name: results[name]["parameter_count"] for name in cell.precisions}
    assert all(c == SMALL_CNN_PARAMETERS for c in counts.values()), (
        f"parameter_count should be small_cnn's for every precision (the dtype does not change it), got {counts}")
    b64, b32 = results["float64"]["parameter_bytes"], results["float32"]["parameter_bytes"]
    b16 = [results[name]["parameter_bytes"] for name in cell.mixed]
    assert b32 == 4 * SMALL_CNN_PARAMETERS, f"float32 parameters take 4 bytes each: got {b32} bytes"
    assert all(2 * b == b32 for b in b16), \
        f"float16 parameters take half the bytes of float32 ones: got {' and '.join(map(str, b16))} for {b32}"
    assert b64 == 2 * b32, f"float64 parameters take twice the bytes of float32 ones: got {b64} and {b32}"


@_each_cell(weight=1)
def test_mixed_run_scales(student, cell):
    """each mixed run records one scale per update; with a float16 loss the first step (at 2^16) is skipped"""
    results = _precision(student, cell.precisions)
    for name in cell.mixed:
        run = results[name]
        scales = np.asarray(run["scales"], dtype=float)
        assert scales.shape == np.asarray(run["losses"]).shape, \
            f"{name}: record the scale after every update (as many scales as losses)"
        assert scales.size > 0 and np.all(np.isfinite(scales) & (scales > 0)), \
            f"{name}: the scales must be positive numbers, one per update"
    if not _flags_overflows(student):
        return  # which steps the runs skipped follows the student's flag: loss_scaler's checks charge it
    name = cell.float16_loss
    run = results[name]
    assert np.asarray(run["scales"], dtype=float)[0] < 2.0 ** 16, (
        f"{name}: the seed of the backward pass is S = 2^16, which is inf in float16, so the first step must "
        f"be skipped and the scale backed off below 2^16")
    assert all(isinstance(k, int) and k >= 1 for k in run["skipped_steps"]), (
        f"{name}: every seed's run starts with a step at S = 2^16 that must be skipped, so skipped_steps >= 1; "
        f"got {run['skipped_steps']}")


@task("experiment_precision", weight=2)
def test_a_float16_loss_never_steps_at_2_to_16_and_the_recipe_does(student):
    """with the loss in float16 no step is taken at S >= 2^16 (the seed S is inf); with the recipe's float32 loss steps are"""
    results, stress = _precision(student), _stress(student)
    init = as_float(_variable(student, "MIXED_INIT_SCALE"), "MIXED_INIT_SCALE")
    flagged = _flags_overflows(student)   # else the float16 loss's skipped steps follow the wrong flag
    for what, scales, start in (("main run", results["float16 loss"]["scales"], init),
                                ("stress test", stress["float16 loss"]["scales"], stress["float16 loss"]["init_scale"])):
        taken, _ = _steps_at_or_above(scales, start)
        assert taken == 0 or not flagged, (f"float16 loss, {what}: {taken} {'step was' if taken == 1 else 'steps were'} taken at a scale >= 2^16; with the loss in "
                            f"float16 the seed S = 2^16 is inf and every such step must be skipped")
    taken, _ = _steps_at_or_above(results["mixed float16"]["scales"], init)
    assert taken >= 1, ("mixed float16 (the recipe): no step was taken at a scale >= 2^16, as if the seed were a float16 "
                        "number; the recipe computes the loss in float32, from ops.cast(model(x), 'float32')")


@_each_cell(weight=2)
def test_stress_test_backs_off_and_grows(student, cell):
    """each stress test from 2^24: skipped steps, the scale backs off below 2^24 and later grows again"""
    updates = _count(student, "STRESS_UPDATES")
    for where, label, s in cell.stress(student):
        assert s["init_scale"] == 2.0 ** 24 and s["growth_interval"] == 10, \
            f"{where} should record init_scale 2**24 and growth_interval 10"
        scales = np.asarray(s["scales"], dtype=float)
        assert scales.shape == (updates,), f"{where}['scales']: one scale per update ({updates}), got {scales.shape}"
        losses = np.asarray(s["losses"], dtype=float)
        if not _flags_overflows(student):   # the back-off and growth follow the student's flag
            assert losses.shape == (updates,), f"{where}: one scale and one loss per update ({updates})"
            continue
        assert isinstance(s["skipped_steps"], int) and s["skipped_steps"] >= 1, \
            f"{label}: a 2^24 scale overflows float16 at once: at least one step must be skipped"
        assert scales[0] < 2.0 ** 24, f"{label}: after the first (overflowing) step the scale must be below 2^24"
        # Whether the run was long enough to show growth is judged on its overflow pattern replayed
        # through the reference scaler: a scaler that never grows is loss_scaler's fault alone.
        reference = LossScaler(init_scale=2.0 ** 24, growth_interval=10)
        grew_after_backoff = False
        for overflow in _overflows(scales, 2.0 ** 24):
            before = reference.scale_value
            reference.update(not overflow)
            grew_after_backoff |= reference.skipped_steps > 0 and reference.scale_value > before
        assert grew_after_backoff, (
            f"{label}: after backing off, the run must go on for at least growth_interval finite steps, "
            f"so that the scale grows again")
        assert losses.shape == (updates,) and np.all(np.isfinite(losses)), \
            f"{where}['losses']: one finite loss per update"


@_each_cell(weight=1)
def test_stress_test_counts_its_skipped_steps(student, cell):
    """each stress test's skipped_steps is what your scaler counts for the times its scale backed off"""
    for where, _, s in cell.stress(student):
        scales = np.asarray(s["scales"], dtype=float)
        drops = int(np.sum(_overflows(scales, s["init_scale"])))
        counted = _own_replay(student, scales, s["init_scale"], 10)[1]
        assert s["skipped_steps"] == counted, (
            f"{where}['skipped_steps'] is {s['skipped_steps']}, but the scale backed off {drops} times "
            f"and your LossScaler counts {counted} skipped steps for them: record scaler.skipped_steps after the run")


@_each_cell(weight=1)
def test_precisions_learn_alike(student, cell):
    """every precision learns (accuracy well above chance); float64 and float32 runs coincide"""
    results = _precision(student, cell.precisions)
    flagged = _flags_overflows(student)
    for name in cell.precisions:
        acc = np.asarray(results[name]["test_accuracy"], dtype=float)
        assert np.all((acc >= 0) & (acc <= 1)), f"{name}: test accuracies are fractions between 0 and 1, got {acc}"
        if name in cell.mixed and not flagged:
            continue  # a wrong overflow flag lets inf steps through and the run diverges: loss_scaler's fault
        assert acc.mean() > 0.5, (
            f"{name}: mean test accuracy {acc.mean():.2f}; after training it should be well above chance (0.1)")
    l64 = np.asarray(results["float64"]["losses"], dtype=float)
    l32 = np.asarray(results["float32"]["losses"], dtype=float)
    assert l64.shape == l32.shape and np.allclose(l64, l32, rtol=1e-2, atol=1e-3), (
        "float64 and float32 train the same model from the same seed on the same batches: their losses should "
        "agree to well within 1%")
    a32 = np.mean(results["float32"]["test_accuracy"])
    for name in (cell.mixed if flagged else ()):   # a wrong flag lets inf steps diverge the run
        a16 = np.mean(results[name]["test_accuracy"])
        assert abs(a16 - a32) < 0.15, (f"{name}: mean accuracy {a16:.3f} is far from float32's {a32:.3f}: "
                                       f"is loss scaling skipping or corrupting updates?")


@task("experiment_precision", weight=1)
def test_precision_runs_start_and_last_as_described(student):
    """every run trains epochs * len(loader) updates from the weights of seed_everything(seed) on the shuffled loader of its seed (the first loss, before any update)"""
    results, stress = _precision(student), _stress(student)
    seed = as_int(as_list(_variable(student, "PREC_SEEDS"), "PREC_SEEDS")[0], "PREC_SEEDS[0]")
    epochs, batch = _count(student, "PREC_EPOCHS"), _count(student, "BATCH")
    updates = epochs * -(-len(_digits()[0][1]) // batch)
    runs = [(f"precision_results[{name!r}]", results[name]["losses"], seed, name) for name in PRECISIONS]
    runs += [(f"stress_results[{name!r}]", stress[name]["losses"], 0, name) for name in MIXED]
    for where, losses, run_seed, name in runs:
        losses = np.asarray(losses, dtype=float)
        if where.startswith("precision"):
            assert losses.shape == (updates,), (
                f"{where}['losses']: {losses.size} losses; {epochs} epoch{'' if epochs == 1 else 's'} of {updates // epochs} batches of {batch} "
                f"are epochs * len(loader) = {updates} updates")
        expected = _reference_first_loss(batch, run_seed, name)
        assert losses.size and np.isclose(losses[0], expected, rtol=1e-6, atol=0), (
            f"{where}: the first loss is {losses[0] if losses.size else None!r}; from the weights of "
            f"seed_everything({run_seed}) and small_cnn(), on the first batch of DataLoader(..., batch_size=BATCH, "
            f"shuffle=True, seed={run_seed}), the grader computes {expected:.6g} (the loss before the first update)")


# ---------------------------------------------------------------------------------------- loss_scaler
def _overflows(scales, init_scale):
    """The overflow pattern a recorded scale sequence implies: a step overflowed exactly when the
    scale dropped after it (the runs record the scale after every update, not the flags)."""
    before = np.concatenate([[float(init_scale)], np.asarray(scales, dtype=float)[:-1]])
    return list(np.asarray(scales, dtype=float) < before)


def _assert_replays(student, scales, init_scale, growth_interval, what):
    """The experiment's scale sequence against the student's OWN LossScaler driven through the same
    overflow pattern: this judges the experiment (one update per step, the right flag, the scale
    recorded after each update), and a scaler bug is charged to loss_scaler alone, whose checks
    compare the scaler with the reference. Returns the skipped steps that run counted."""
    expected, skipped = _own_replay(student, scales, init_scale, growth_interval)
    wrong = np.flatnonzero(scales != expected)
    if wrong.size:
        i = int(wrong[0])
        raise AssertionError(
            f"{what}: after update {i + 1} the run recorded the scale {scales[i]:g}, but your LossScaler given the "
            f"same pattern of overflows (an overflow wherever the recorded scale dropped) is at {expected[i]:g}: "
            f"call scaler.update(finite) once per step, with that step's flag, and record scale_value after it")
    return skipped


def _own_replay(student, scales, init_scale, growth_interval):
    """The student's LossScaler driven through the overflow pattern of ``scales`` (an inf gradient
    where the scale dropped, a finite one elsewhere): (its scales after each step, its skipped_steps)."""
    settings = {"init_scale": float(init_scale), "growth_interval": int(growth_interval)}
    steps = [[np.array([np.inf] if overflow else [1.0], np.float16)] for overflow in _overflows(scales, init_scale)]
    if not steps:
        return np.array([]), 0
    _, columns = _run_scaler_columns(student, settings, steps)
    return columns["scale"], int(columns["skipped"][-1])


# Steps whose overflow flag a right unscale gives: an inf or a NaN in the first, a middle or the last
# parameter, and all finite. The experiment's runs inherit the student's flag (the run skips, or takes,
# the steps the flag says), so the parts of experiment_precision that need a right flag (skipped steps,
# back-off, accuracy) are held back while it is wrong: a flag bug is charged to loss_scaler alone.
_FLAG_STEPS = [[np.array([np.inf], np.float16), np.array([1.0], np.float16), np.array([1.0], np.float16)],
               [np.array([1.0], np.float16), np.array([np.nan], np.float16), np.array([1.0], np.float16)],
               [np.array([1.0], np.float16), np.array([1.0], np.float16), np.array([-np.inf], np.float16)],
               [np.array([1.0], np.float16), np.array([2.0], np.float16), np.array([3.0], np.float16)]]


def _flags_overflows(student) -> bool:
    """Whether the student's unscale flags exactly the steps with an inf or a NaN (loss_scaler's checks
    say what is wrong with it when it does not)."""
    try:
        records = _run_scaler(student, {"init_scale": 2.0}, _FLAG_STEPS)
        return [r["finite"] for r in records] == [False, False, False, True]
    except (AssertionError, StudentError, KeyError, TypeError, IndexError):
        return False


# The two checks below read the experiment's runs (the notebook's experiment_precision cell), so
# they grade that task, against the student's own scaler: loss_scaler's points come from driving
# the scaler directly and comparing it with the reference.
@_each_cell(weight=2)
def test_stress_scales_follow_the_rules(student, cell):
    """the stress tests' scale sequences are what your LossScaler gives for their overflows (one update per step)"""
    for where, label, s in cell.stress(student):
        scales = np.asarray(s["scales"], dtype=float)
        assert scales.ndim == 1 and scales.size > 0, f"{where}['scales'] is empty"
        skipped = _assert_replays(student, scales, 2.0 ** 24, 10, f"{label} (init 2^24, growth_interval 10)")
        assert s["skipped_steps"] == skipped, (
            f"{label}: scaler.skipped_steps is {s['skipped_steps']}, but the scale backed off {skipped} times")


@_each_cell(weight=1)
def test_mixed_run_scales_follow_the_rules(student, cell):
    """the mixed runs' scale sequences are what your LossScaler gives for their overflows (one update per step)"""
    results = _precision(student, cell.precisions)
    init, growth = as_float(_variable(student, "MIXED_INIT_SCALE"), "MIXED_INIT_SCALE"), _count(student, "MIXED_GROWTH")
    for name in cell.mixed:
        run = results[name]
        scales = np.asarray(run["scales"], dtype=float)
        assert scales.ndim == 1 and scales.size > 0, f"precision_results[{name!r}]['scales'] is empty"
        skipped = _assert_replays(student, scales, float(init), int(growth),
                                  f"{name} run, first seed (init {init:g}, growth_interval {growth})")
        assert run["skipped_steps"][0] == skipped, (
            f"{name}, first seed: skipped_steps is {run['skipped_steps'][0]}, but the scale backed off {skipped} times")


def _float16(values):
    with np.errstate(over="ignore"):
        return np.array(values).astype(np.float16)


def _run_scaler(student, settings, steps):
    """The student's LossScaler driven through ``steps``: one record per step."""
    return _run_scaler_columns(student, settings, steps)[0]


def _run_scaler_columns(student, settings, steps):
    """(records, the same run as columns {"scale", "good", "skipped", "finite"})."""
    steps = [[np.asarray(g) for g in step] for step in steps]
    return student.loss_scaler_run(settings, steps)


def _reference_run(settings, flags):
    scaler = LossScaler(**settings)
    out = []
    for finite in flags:
        scaler.update(finite)
        out.append((scaler.scale_value, scaler.good_steps, scaler.skipped_steps))
    return out


def _expect_run(columns, settings, flags, what, rtol, atol=0.0):
    """(scale_value, good_steps, skipped_steps) after every step against the reference scaler's,
    compared column by column, all three before a failure is raised (each comparison, a right column
    too, is evidence for naming the mistake); a mismatch is reported at the first step where any of
    the three differs."""
    reference = _reference_run(settings, flags)
    failed = False
    for i, key in enumerate(("scale", "good", "skipped")):
        try:
            expect_close(columns[key], np.array([r[i] for r in reference], dtype=float), what,
                         rtol=rtol if key == "scale" else 0, atol=atol if key == "scale" else 0)
        except AssertionError:
            failed = True
    if failed:
        got = [(float(s), int(g), int(k)) for s, g, k in zip(columns["scale"], columns["good"], columns["skipped"])]
        step = next(j for j, (mine, ref) in enumerate(zip(got, reference))
                    if not (np.isclose(mine[0], ref[0], rtol=rtol, atol=atol) and mine[1:] == ref[1:]))
        raise AssertionError(f"{what}, step {step + 1} ({'finite' if flags[step] else 'overflow'}): "
                             f"(scale_value, good_steps, skipped_steps) = {got[step]}, expected "
                             f"{reference[step]}") from None


@task("loss_scaler", weight=1)
def test_unscale_values(student, rng):
    """unscale: every parameter's gradient, converted to float32, divided by the scale"""
    grads = [(rng.standard_normal(shape) * 300).astype(np.float16) for shape in ((3,), (2, 4), (1, 2, 3))]
    record = _run_scaler(student, {"init_scale": 256.0}, [grads])[0]
    assert record["finite"] is True, "unscale: all gradients are finite here, finite must be True"
    assert len(record["grads"]) == len(grads), f"unscale: one gradient per parameter ({len(grads)})"
    for i, (got, g) in enumerate(zip(record["grads"], grads)):
        expect_close(got, g.astype(np.float32) / 256.0, f"unscale: float16 gradient {i} of shape {g.shape} / 256",
                     rtol=1e-6, atol=0, dtype="float32")


@task("loss_scaler", weight=1)
def test_unscale_converts_before_dividing(student):
    """unscale divides in float32: small gradients divided by a large scale do not underflow"""
    grads = [np.array([2.0 ** -8, -(2.0 ** -12), 3 * 2.0 ** -14], dtype=np.float16)]
    record = _run_scaler(student, {"init_scale": 2.0 ** 22}, [grads])[0]
    expect_close(record["grads"][0], grads[0].astype(np.float32) / 2.0 ** 22,
                 "unscale of float16 gradients around 2^-10 by the scale 2^22 (in float16 the quotients would "
                 "underflow to 0: convert first, then divide)", rtol=1e-6, atol=0, dtype="float32")


@task("loss_scaler", weight=2)
def test_unscale_detects_any_non_finite_gradient(student):
    """unscale reports False as soon as any element of any gradient is inf or NaN"""
    f16 = np.float16
    cases = [
        ("inf in the first of three parameters", [np.array([1, np.inf], f16), np.ones(3, f16), np.ones((2, 2), f16)]),
        ("NaN in the middle parameter", [np.ones(2, f16), np.array([[0, np.nan]], f16), np.ones(1, f16)]),
        ("-inf in the last parameter", [np.ones(2, f16), np.ones(2, f16), np.array([5, -np.inf, 1], f16)]),
        ("an overflowed float16 gradient (70000 -> inf) among finite ones",
         [_float16([70000.0, 1.0]), np.ones(4, f16)]),
        ("float32 gradients with a NaN", [np.array([1.0, np.nan], np.float32)]),
    ]
    records = _run_scaler(student, {"init_scale": 4.0}, [grads for _, grads in cases])
    for (what, _), record in zip(cases, records):
        assert record["finite"] is False, f"unscale: {what}, but finite is {record['finite']}"
    ok = _run_scaler(student, {"init_scale": 1.0}, [[np.array([65504.0, -65504.0], f16), np.zeros(3, f16)]])[0]
    assert ok["finite"] is True, "unscale: 65504 and -65504 (float16's largest values) are finite"


@task("loss_scaler", weight=2)
def test_update_follows_a_long_sequence(student, rng):
    """update: scale, good_steps and skipped_steps over a long sequence of finite and overflowing steps"""
    flags = [True] * 7 + [False, False] + [True] * 4 + [False] + [True] * 9 + list(rng.random(15) < 0.75)
    settings = {"init_scale": 64.0, "growth_interval": 3}
    steps = [[np.array([1.0, -2.0], np.float16) if f else np.array([np.inf], np.float16)] for f in flags]
    _, columns = _run_scaler_columns(student, settings, steps)
    _expect_run(columns, settings, flags, "LossScaler(init_scale=64, growth_interval=3)", rtol=0)


# Two settings (weight 1/2 each), so that a mistake only a floor or custom factors reveal is seen twice.
CUSTOM_SCALERS = [
    ({"init_scale": 100.0, "growth_factor": 3.0, "backoff_factor": 0.1, "growth_interval": 2, "min_scale": 0.5},
     [True, True, True, False, False, False, False, True, True, True, True],
     "LossScaler(init 100, growth x3, back-off x0.1, growth_interval 2, min_scale 0.5)"),
    ({"init_scale": 24.0, "growth_factor": 1.5, "backoff_factor": 0.25, "growth_interval": 3, "min_scale": 2.0},
     [False, False, True, True, True, False, True, True, True, True, False, False, True],
     "LossScaler(init 24, growth x1.5, back-off x0.25, growth_interval 3, min_scale 2)"),
]


@pytest.mark.parametrize("settings,flags,what", [pytest.param(*c, id=f"settings{i}", marks=task("loss_scaler", weight=0.5))
                                                 for i, c in enumerate(CUSTOM_SCALERS)])
def test_update_custom_factors_and_floor(student, settings, flags, what):
    """update: custom growth and back-off factors, and the scale never falls below min_scale"""
    steps = [[np.array([0.5], np.float16) if f else np.array([np.nan], np.float16)] for f in flags]
    _, columns = _run_scaler_columns(student, settings, steps)
    _expect_run(columns, settings, flags, what, rtol=1e-12, atol=1e-8)
