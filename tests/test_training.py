"""The small CNN learns the digits, on every device: accuracy well above chance in a few
seconds, and the same training on the CUDA path as on NumPy with the same seed."""
import functools

import numpy as np
import pytest

import course_lib
from course_lib import optim
from course_lib.data import DataLoader, load_digits
from course_lib.demo import main as demo_main
from course_lib.seeding import seed_everything
from course_lib.train import accuracy, small_cnn, train_epoch


def _train(seed, device, epochs=3, pool="max"):
    seed_everything(seed)
    x, y = load_digits("train")
    model = small_cnn(pool=pool, device=device)
    opt = optim.Adam(model.parameters(), lr=0.01)
    losses = [train_epoch(model, DataLoader(x, y, batch_size=64, shuffle=True, seed=seed, device=device), opt)
              for _ in range(epochs)]
    return model, losses


@functools.lru_cache(maxsize=None)
def _trained(device):
    """Three epochs from seed 0 on ``device``: (model, losses, test accuracy), trained once."""
    model, losses = _train(0, device)
    x_te, y_te = load_digits("test")
    return model, losses, accuracy(model, x_te, y_te, device=device)


def test_small_cnn_reaches_high_accuracy_on_held_out_digits(device):
    model, losses, acc = _trained(device)
    assert all(p.device == device for p in model.parameters())
    assert losses[-1] < losses[0]
    assert acc > 0.9  # chance is 0.1


def test_average_pooling_model_learns_too():
    # average pooling learns more slowly here (experiment 07 measures by how much)
    model, _ = _train(1, course_lib.cpu(), epochs=5, pool="avg")
    x_te, y_te = load_digits("test")
    assert accuracy(model, x_te, y_te) > 0.75


def test_training_is_reproducible_with_a_seed(device):
    _, first = _train(5, device, epochs=1)
    _, again = _train(5, device, epochs=1)
    _, other = _train(6, device, epochs=1)
    assert first == again and first != other


@pytest.mark.cuda
def test_cuda_path_trains_like_numpy_with_the_same_seed():
    """Same seed, same batches, same initial weights (drawn on the host): the CUDA path's
    losses and test accuracy match NumPy's. On the stand-in they agree to float32 rounding;
    a real GPU sums in another order, hence the tolerance."""
    from conftest import cuda_device

    _, cpu_losses, cpu_acc = _trained(course_lib.cpu())
    _, cuda_losses, cuda_acc = _trained(cuda_device())
    np.testing.assert_allclose(cuda_losses, cpu_losses, rtol=2e-2)
    assert abs(cuda_acc - cpu_acc) <= 0.02 and cpu_acc > 0.9


def test_demo_prints_accuracy(capsys):
    acc = demo_main(["--epochs", "2"])
    out = capsys.readouterr().out
    assert "test accuracy" in out and acc > 0.8
