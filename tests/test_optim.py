"""SGD and Adam against torch.optim on the same parameters and gradients, on every device."""
import numpy as np
import pytest
import torch

from course_lib import Tensor, nn, optim


def _run(device, ours_factory, ref_factory, steps=5):
    rng = np.random.default_rng(0)
    start = rng.standard_normal((4, 3))
    grads = [rng.standard_normal((4, 3)) for _ in range(steps)]
    p = nn.Parameter(start, device=device, dtype="float64")
    ref = torch.tensor(start, requires_grad=True)
    opt, ref_opt = ours_factory([p]), ref_factory([ref])
    for g in grads:
        p.grad = Tensor(g, device=device, requires_grad=False)
        ref.grad = torch.tensor(g)
        opt.step()
        ref_opt.step()
    np.testing.assert_allclose(p.numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert not np.allclose(p.numpy(), start) and p.device == device


@pytest.mark.parametrize("momentum,weight_decay", [(0.0, 0.0), (0.9, 0.0), (0.9, 0.01), (0.0, 0.1)])
def test_sgd_matches_torch(device, momentum, weight_decay):
    _run(device, lambda ps: optim.SGD(ps, lr=0.1, momentum=momentum, weight_decay=weight_decay),
         lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=momentum, weight_decay=weight_decay))


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_adam_matches_torch(device, weight_decay):
    _run(device, lambda ps: optim.Adam(ps, lr=0.01, weight_decay=weight_decay),
         lambda ps: torch.optim.Adam(ps, lr=0.01, weight_decay=weight_decay))


def test_optimizer_keeps_parameter_dtype_and_skips_missing_grads(device):
    a = nn.Parameter(np.ones(3), device=device, dtype="float32")
    b = nn.Parameter(np.ones(3), device=device, dtype="float32")
    a.grad = Tensor(np.ones(3), device=device, dtype="float32")
    opt = optim.SGD([a, b], lr=0.5)
    opt.step()
    assert a.dtype == "float32" and a.device == device
    np.testing.assert_array_equal(a.numpy(), [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(b.numpy(), [1, 1, 1])
    opt.reset_grad()
    assert a.grad is None


def test_optimizer_rejects_empty_parameter_list():
    with pytest.raises(ValueError, match="empty"):
        optim.SGD([], lr=0.1)
