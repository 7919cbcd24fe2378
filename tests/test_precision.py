"""Experiment 07's precision tools (casts, loss scaling, mixed-precision training), on every device."""
import warnings

import numpy as np

from course_lib import Tensor, nn, optim
from course_lib.precision import LossScaler, MixedPrecisionTrainer, cast_model, parameter_bytes, parameter_count
from course_lib.train import small_cnn


def test_parameter_bytes_halve_in_float16_and_count_stays(device):
    model = small_cnn(device=device)
    count, bytes32 = parameter_count(model), parameter_bytes(model)
    assert count == (3 * 3 * 1 * 8 + 8) + (3 * 3 * 8 * 16 + 16) + (64 * 10 + 10)
    assert bytes32 == 4 * count
    cast_model(model, "float16")
    assert parameter_count(model) == count and parameter_bytes(model) * 2 == bytes32
    assert cast_model(model, "float64") is model and parameter_bytes(model) == 2 * bytes32
    assert all(p.device == device and p.dtype == "float64" for p in model.parameters())


def _param_with_grad(values, device, dtype="float16"):
    p = nn.Parameter(np.ones(len(values)), device=device, dtype=dtype)
    p.grad = Tensor(np.array(values), device=device, dtype=dtype, requires_grad=False)
    return p


def test_loss_scaler_unscales_in_float32_and_detects_overflow(device):
    scaler = LossScaler(init_scale=1024.0)
    grads, finite = scaler.unscale([_param_with_grad([1024.0, 2048.0], device)])
    assert finite and grads[0].dtype == "float32" and grads[0].device == device
    np.testing.assert_array_equal(grads[0].numpy(), [1.0, 2.0])
    _, finite = scaler.unscale([_param_with_grad([1.0, np.inf], device)])
    assert not finite
    _, finite = scaler.unscale([_param_with_grad([np.nan, 1.0], device)])
    assert not finite


def test_loss_scaler_backs_off_on_overflow_and_grows_after_interval():
    scaler = LossScaler(init_scale=8.0, growth_interval=3)
    scaler.update(False)
    assert scaler.scale_value == 4.0 and scaler.skipped_steps == 1
    for _ in range(2):
        scaler.update(True)
    assert scaler.scale_value == 4.0
    scaler.update(True)
    assert scaler.scale_value == 8.0 and scaler.good_steps == 0
    scaler.update(True)
    scaler.update(False)  # an overflow resets the run of good steps
    assert scaler.good_steps == 0 and scaler.scale_value == 4.0


def test_mixed_precision_training_learns_and_skips_nonfinite_steps(device):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype("float16")
    y = (x.astype(float) @ np.array([1.0, -1.0, 0.5, 2.0]) > 0).astype("int64")
    model = nn.Sequential(nn.Linear(4, 8, device=device), nn.ReLU(), nn.Linear(8, 2, device=device))
    trainer = MixedPrecisionTrainer(model, lambda ps: optim.SGD(ps, lr=0.5),
                                    LossScaler(init_scale=2.0 ** 30))  # far too large: overflows first
    loss_fn = nn.SoftmaxLoss()
    xs, ys = Tensor(x, device=device, requires_grad=False), Tensor(y, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the expected overflows are handled, never warned about
        losses = [trainer.step(lambda: loss_fn(model(xs), ys)) for _ in range(60)]
    assert all(p.dtype == "float16" and p.device == device for p in model.parameters())
    assert all(m.dtype == "float32" and m.device == device for m in trainer.masters)
    assert trainer.scaler.skipped_steps >= 1 and trainer.scaler.scale_value < 2.0 ** 30
    assert losses[-1] < 0.5 * losses[0]


def test_cast_is_differentiable_and_returns_gradients_in_the_input_dtype(device):
    from course_lib import ops

    x = Tensor(np.array([1.5, -2.0, 3.0]), device=device, dtype="float16")
    y = ops.cast(x, "float32")
    assert y.dtype == "float32" and ops.cast(y, "float32") is y
    ops.summation(y * y).backward()
    assert x.grad.dtype == "float16"
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, -4.0, 6.0])


def _ten_class_step(device, scale, float32_loss):
    """One mixed-precision step of a linear classifier (loss about ln 10 = 2.3) with scale S."""
    from course_lib import ops

    rng = np.random.default_rng(1)
    x = Tensor(rng.standard_normal((64, 4)), device=device, dtype="float16", requires_grad=False)
    y = Tensor(rng.integers(0, 10, 64), device=device)
    model = nn.Sequential(nn.Linear(4, 10, device=device))
    for p in model.parameters():
        p.cached_data = (p.realize_cached_data() * 0.01).astype(p.dtype)  # logits near 0: loss near 2.3
    trainer = MixedPrecisionTrainer(model, lambda ps: optim.SGD(ps, lr=0.1), LossScaler(init_scale=scale))
    loss_fn = nn.SoftmaxLoss()
    if float32_loss:
        loss = trainer.step(lambda: loss_fn(ops.cast(model(x), "float32"), y))
    else:
        loss = trainer.step(lambda: loss_fn(model(x), y))
    return loss, trainer.scaler.skipped_steps


def test_what_overflows_under_loss_scaling_is_the_seed_not_the_scaled_loss(device):
    """With the loss in float16: at S = 2^15 the scaled loss 2.3 * 2^15 is inf in float16, yet the
    step is taken (the backward pass starts from the seed S, which is finite); at S = 2^16 the seed
    itself is inf (65536 > 65504) and the step is skipped. With the loss in float32 (the recipe),
    S = 2^16 is an ordinary number and the step is taken."""
    loss, skipped = _ten_class_step(device, 2.0 ** 15, float32_loss=False)
    assert 2.0 < loss < 2.6 and loss * 2.0 ** 15 > 65504 and skipped == 0
    assert _ten_class_step(device, 2.0 ** 16, float32_loss=False)[1] == 1
    assert _ten_class_step(device, 2.0 ** 16, float32_loss=True)[1] == 0
