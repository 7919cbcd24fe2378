"""nn layers against PyTorch's, with the same weights copied across, on every device."""
import numpy as np
import pytest
import torch

from course_lib import Tensor, nn
from course_lib.host import to_numpy

RTOL = {"float64": 1e-10, "float32": 1e-4}


def _close(ours, theirs, dtype):
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=RTOL[dtype], atol=RTOL[dtype])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("cin,cout,k,stride,hw", [(3, 4, 3, 1, 8), (2, 5, 3, 2, 9), (4, 2, 5, 1, 7),
                                                  (3, 3, 1, 1, 5), (1, 16, 3, 2, 10)])
def test_conv_module_matches_torch_conv2d(device, cin, cout, k, stride, hw, dtype):
    rng = np.random.default_rng(cin * 100 + k)
    layer = nn.Conv(cin, cout, k, stride=stride, device=device, dtype=dtype)
    ref = torch.nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2).to(getattr(torch, dtype))
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(layer.weight.numpy().transpose(3, 2, 0, 1)))
        ref.bias.copy_(torch.tensor(layer.bias.numpy()))
    x = rng.standard_normal((2, cin, hw, hw)).astype(dtype)
    ours_x, ref_x = Tensor(x, device=device), torch.tensor(x, requires_grad=True)
    ours_y, ref_y = layer(ours_x), ref(ref_x)
    assert ours_y.shape == tuple(ref_y.shape) and ours_y.device == device
    _close(ours_y, ref_y, dtype)
    g = rng.standard_normal(ours_y.shape).astype(dtype)
    ours_y.backward(Tensor(g, device=device))
    ref_y.backward(torch.tensor(g))
    _close(ours_x.grad, ref_x.grad, dtype)
    np.testing.assert_allclose(layer.weight.grad.numpy(), ref.weight.grad.numpy().transpose(2, 3, 1, 0),
                               rtol=RTOL[dtype], atol=RTOL[dtype])
    _close(layer.bias.grad, ref.bias.grad, dtype)


def test_conv_module_initialisation_is_kaiming_uniform():
    layer = nn.Conv(16, 32, 3)
    bound = np.sqrt(6.0 / (16 * 9))
    w = layer.weight.numpy()
    assert w.shape == (3, 3, 16, 32)
    assert np.abs(w).max() <= bound
    assert np.abs(w).max() > 0.9 * bound  # uses the whole range, not a narrower one
    assert abs(w.std() - bound / np.sqrt(3)) < 0.05 * bound


def test_conv_module_rejects_wrong_channel_count():
    with pytest.raises(ValueError, match=r"\(N, 3, H, W\).*\(2, 4, 8, 8\)"):
        nn.Conv(3, 4, 3)(Tensor(np.zeros((2, 4, 8, 8), dtype="float32")))


def test_conv_module_takes_a_square_kernel_as_a_pair_and_refuses_a_rectangle():
    assert nn.Conv(2, 3, (5, 5)).weight.shape == (5, 5, 2, 3)
    with pytest.raises(ValueError, match=r"square.*\(3, 5\)"):
        nn.Conv(2, 3, (3, 5))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_linear_matches_torch(device, dtype):
    rng = np.random.default_rng(1)
    layer = nn.Linear(5, 3, device=device, dtype=dtype)
    x = rng.standard_normal((4, 5)).astype(dtype)
    ref_x = torch.tensor(x, requires_grad=True)
    ref_w = torch.tensor(layer.weight.numpy(), requires_grad=True)
    ref_b = torch.tensor(layer.bias.numpy(), requires_grad=True)
    ref_y = ref_x @ ref_w + ref_b
    ours_x = Tensor(x, device=device)
    ours_y = layer(ours_x)
    _close(ours_y, ref_y, dtype)
    ours_y.sum().backward()
    ref_y.sum().backward()
    _close(ours_x.grad, ref_x.grad, dtype)
    _close(layer.weight.grad, ref_w.grad, dtype)
    _close(layer.bias.grad, ref_b.grad, dtype)


@pytest.mark.parametrize("layer,ref", [(nn.MaxPool2d(2), torch.nn.MaxPool2d(2)),
                                       (nn.MaxPool2d(3, 1, 1), torch.nn.MaxPool2d(3, 1, 1)),
                                       (nn.AvgPool2d(2), torch.nn.AvgPool2d(2)),
                                       (nn.AvgPool2d(3, 2, 1), torch.nn.AvgPool2d(3, 2, 1))])
def test_pooling_modules_take_nchw_like_torch(device, layer, ref):
    x = np.random.default_rng(2).integers(0, 4, (2, 3, 7, 7)).astype("float64")  # ties on purpose
    ours_x, ref_x = Tensor(x, device=device), torch.tensor(x, requires_grad=True)
    ours_y, ref_y = layer(ours_x), ref(ref_x)
    _close(ours_y, ref_y, "float64")
    g = np.random.default_rng(3).standard_normal(ours_y.shape)
    ours_y.backward(Tensor(g, device=device))
    ref_y.backward(torch.tensor(g))
    _close(ours_x.grad, ref_x.grad, "float64")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_softmax_loss_matches_cross_entropy(device, dtype):
    rng = np.random.default_rng(4)
    logits = (rng.standard_normal((6, 5)) * 10).astype(dtype)
    labels = rng.integers(0, 5, 6)
    ours = Tensor(logits, device=device)
    loss = nn.SoftmaxLoss()(ours, Tensor(labels, device=device))
    ref = torch.tensor(logits, requires_grad=True)
    ref_loss = torch.nn.functional.cross_entropy(ref, torch.tensor(labels))
    assert loss.shape == () and loss.dtype == dtype
    _close(loss, ref_loss, dtype)
    loss.backward()
    ref_loss.backward()
    _close(ours.grad, ref.grad, dtype)


def test_softmax_loss_rejects_mismatched_labels():
    with pytest.raises(ValueError, match=r"\(4, 3\).*\(5,\)"):
        nn.SoftmaxLoss()(Tensor(np.zeros((4, 3))), Tensor(np.zeros(5, dtype="int64")))


def test_module_finds_nested_parameters_once():
    shared = nn.Linear(3, 3)
    model = nn.Sequential(nn.Conv(1, 2, 3), nn.ReLU(), nn.Flatten(), shared, nn.Sequential(shared, nn.Tanh()))
    params = model.parameters()
    assert len(params) == 4  # conv weight+bias, linear weight+bias (shared counted once)
    model.eval()
    assert not model.modules[0].training and not model.modules[4].modules[1].training


def test_flatten_keeps_batch_axis(device):
    x = Tensor(np.arange(24.0).reshape(2, 3, 2, 2), device=device)
    y = nn.Flatten()(x)
    assert y.shape == (2, 12) and y.device == device
    np.testing.assert_array_equal(y.numpy(), np.arange(24.0).reshape(2, 12))
