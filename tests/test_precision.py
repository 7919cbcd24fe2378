import numpy as np

from course_lib import Tensor, nd, nn, optim
from course_lib.precision import (LossScaler, MixedPrecisionTrainer, cast_model, measure,
                                  parameter_bytes, parameter_count)
from course_lib.train import small_cnn


def test_parameter_bytes_halve_in_float16_and_count_stays():
    model = small_cnn()
    count, bytes32 = parameter_count(model), parameter_bytes(model)
    assert count == (3 * 3 * 1 * 8 + 8) + (3 * 3 * 8 * 16 + 16) + (64 * 10 + 10)
    assert bytes32 == 4 * count
    cast_model(model, "float16")
    assert parameter_count(model) == count and parameter_bytes(model) * 2 == bytes32
    assert cast_model(model, "float64") is model and parameter_bytes(model) == 2 * bytes32


def _param_with_grad(values, dtype="float16"):
    p = nn.Parameter(np.ones(len(values)), dtype=dtype)
    p.grad = Tensor(np.array(values), dtype=dtype, requires_grad=False)
    return p


def test_loss_scaler_unscales_in_float32_and_detects_overflow():
    scaler = LossScaler(init_scale=1024.0)
    grads, finite = scaler.unscale([_param_with_grad([1024.0, 2048.0])])
    assert finite and grads[0].dtype == "float32"
    np.testing.assert_array_equal(grads[0].numpy(), [1.0, 2.0])
    _, finite = scaler.unscale([_param_with_grad([1.0, np.inf])])
    assert not finite
    _, finite = scaler.unscale([_param_with_grad([np.nan, 1.0])])
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


def test_mixed_precision_training_learns_and_skips_nonfinite_steps():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype("float16")
    y = (x.astype(float) @ np.array([1.0, -1.0, 0.5, 2.0]) > 0).astype("int64")
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    trainer = MixedPrecisionTrainer(model, lambda ps: optim.SGD(ps, lr=0.5),
                                    LossScaler(init_scale=2.0 ** 30))  # far too large: overflows first
    loss_fn = nn.SoftmaxLoss()
    losses = [trainer.step(lambda: loss_fn(model(Tensor(x)), Tensor(y))) for _ in range(60)]
    assert all(p.dtype == "float16" for p in model.parameters())
    assert all(m.dtype == "float32" for m in trainer.masters)
    assert trainer.scaler.skipped_steps >= 1 and trainer.scaler.scale_value < 2.0 ** 30
    assert losses[-1] < 0.5 * losses[0]


def test_measure_reports_time_and_a_peak_that_covers_the_arrays_made():
    with measure() as m:
        big = nd.ones((1000, 1000), dtype="float64")
        del big
    assert m.peak_bytes >= 8 * 1000 * 1000 and m.seconds > 0
