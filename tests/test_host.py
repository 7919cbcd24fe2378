"""course_lib.host.to_numpy: the one conversion to NumPy (checks, gradcheck, figures, tests, grader)."""
import numpy as np
import pytest
import torch

from course_lib import Tensor, nd
from course_lib.host import to_numpy


def test_tensors_and_ndarrays_come_back_as_host_copies(device):
    values = np.arange(6.0).reshape(2, 3)
    t = Tensor(values, device=device, dtype="float64")
    for value in (t, t.realize_cached_data(), t.realize_cached_data()[0:1, 1:3]):
        host = to_numpy(value)
        assert type(host) is np.ndarray
    np.testing.assert_array_equal(to_numpy(t), values)
    np.testing.assert_array_equal(host, values[0:1, 1:3])
    host[...] = -1  # a copy: the device data is untouched
    np.testing.assert_array_equal(t.numpy(), values)


def test_bare_device_arrays_torch_tensors_and_numpy_arrays(device):
    raw = device.xp.asarray(np.array([1.0, 2.0]))
    assert to_numpy(raw).tolist() == [1.0, 2.0] and type(to_numpy(raw)) is np.ndarray
    assert to_numpy(torch.tensor([1.0, 2.0], requires_grad=True)).tolist() == [1.0, 2.0]
    a = np.ones(3)
    assert to_numpy(a) is a


def test_arrays_only_takes_course_lib_arrays_and_numpy_arrays_nothing_else(device):
    assert to_numpy([[1, 2]]).shape == (1, 2) and to_numpy(3.0).shape == ()
    assert to_numpy(nd.array([1.0], device=device), arrays_only=True).tolist() == [1.0]
    imitations = [[1.0, 2.0], 3.0, np.ma.masked_array([1.0]), torch.tensor([1.0]),
                  device.xp.asarray(np.array([1.0]))]
    for value in imitations[:-1] if device.is_host else imitations:
        with pytest.raises(TypeError, match="Conv.compute: got a .*, expected an NDArray"):
            to_numpy(value, "Conv.compute", arrays_only=True)


def test_an_ndarray_whose_numpy_lies_is_refused():
    class Sneaky(nd.NDArray):
        __slots__ = ()

        def numpy(self):
            return [1.0, 2.0]

    sneaky = nd.array([1.0, 2.0])
    sneaky.__class__ = Sneaky
    with pytest.raises(TypeError, match="gave a list"):
        to_numpy(sneaky, "forward")
