"""The naive loop conv against PyTorch and the seed's worked example."""
import numpy as np
import pytest
import torch

from course_lib.naive import conv2d_backward, conv2d_forward


@pytest.mark.parametrize("padding,stride,dilation,k", [(0, 1, 1, 3), (1, 2, 1, 3), (2, 1, 2, 3), (1, 3, 1, 2)])
def test_naive_conv_matches_torch(padding, stride, dilation, k):
    rng = np.random.default_rng(k + stride)
    a = rng.standard_normal((2, 3, 7, 8))
    w = rng.standard_normal((4, 3, k, k + 1))  # non-square on purpose
    b = rng.standard_normal(4)
    a_pad = np.pad(a, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    z = conv2d_forward(a_pad, w, b, stride, dilation)
    ta, tw, tb = (torch.tensor(v, requires_grad=True) for v in (a, w, b))
    tz = torch.nn.functional.conv2d(ta, tw, tb, stride=stride, padding=padding, dilation=dilation)
    np.testing.assert_allclose(z, tz.detach().numpy(), rtol=1e-10, atol=1e-10)
    dz = rng.standard_normal(z.shape)
    tz.backward(torch.tensor(dz))
    da, dw, db = conv2d_backward(dz, a_pad, w, padding, stride, dilation)
    assert da.shape == a.shape and dw.shape == w.shape
    np.testing.assert_allclose(da, ta.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dw, tw.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(db, dz.sum((0, 2, 3)))


def test_naive_conv_backward_reproduces_the_worked_example():
    a = np.arange(1.0, 10.0).reshape(1, 1, 3, 3)
    w = np.ones((1, 1, 2, 2))
    da, dw, db = conv2d_backward(np.ones((1, 1, 2, 2)), a, w)
    np.testing.assert_array_equal(dw[0, 0], [[12, 16], [24, 28]])
    np.testing.assert_array_equal(da[0, 0], [[1, 2, 1], [2, 4, 2], [1, 2, 1]])
    assert db.tolist() == [4.0]


def test_naive_conv_backward_of_zero_gradient_is_zero():
    rng = np.random.default_rng(0)
    da, dw, db = conv2d_backward(np.zeros((2, 4, 3, 3)), rng.standard_normal((2, 3, 5, 5)),
                                 rng.standard_normal((4, 3, 3, 3)))
    assert not da.any() and not dw.any() and not db.any()


def test_naive_conv_rejects_incompatible_shapes():
    with pytest.raises(ValueError, match=r"\(2, 5, 3, 3\)"):
        conv2d_backward(np.zeros((2, 5, 3, 3)), np.zeros((2, 3, 5, 5)), np.zeros((4, 3, 3, 3)))
    with pytest.raises(ValueError, match="channels"):
        conv2d_forward(np.zeros((1, 2, 5, 5)), np.zeros((4, 3, 3, 3)), np.zeros(4))


def test_naive_conv_backward_rejects_dz_of_the_wrong_spatial_size():
    with pytest.raises(ValueError, match=r"expected dz of shape \(2, 4, 3, 3\)"):
        conv2d_backward(np.zeros((2, 4, 2, 3)), np.zeros((2, 3, 5, 5)), np.zeros((4, 3, 3, 3)))
