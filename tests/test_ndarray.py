"""NDArray views (permute, broadcast, slicing, flip, as_strided) and writes (pad, setitem) vs NumPy."""
import re

import numpy as np
import pytest

from course_lib import nd
from course_lib.nd import NDArray, compact_strides


def re_shape(shape):
    """A regex matching the text of ``shape`` as a tuple, e.g. '(3, 4)'."""
    return re.escape(str(tuple(shape)))


def arange_array(shape, device, dtype="float64"):
    """(np array, NDArray) holding 0, 1, 2, ... in row-major order."""
    x = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    return x, nd.array(x, device=device)


# ---------------------------------------------------------------------------- compact strides
@pytest.mark.parametrize("shape, strides", [
    ((2, 3, 4), (12, 4, 1)),
    ((5,), (1,)),
    ((), ()),
    ((3, 1, 2), (2, 2, 1)),
])
def test_compact_strides_are_row_major(shape, strides):
    assert compact_strides(shape) == strides


def test_new_array_is_compact_and_owns_a_copy(device):
    x = np.arange(6.0).reshape(2, 3)
    a = nd.array(x, device=device)
    assert a.is_compact() and a.strides == (3, 1) and a.offset == 0
    x[0, 0] = 100.0
    assert a.numpy()[0, 0] == 0.0


def test_python_numbers_become_float32(device):
    assert nd.array([[1, 2], [3, 4]], device=device).dtype == "float32"
    assert nd.array(2.5, device=device).shape == ()


# ---------------------------------------------------------------------------- permute / compact
@pytest.mark.parametrize("axes", [(1, 0, 2), (2, 0, 1), (2, 1, 0), (-1, 0, 1)])
def test_permute_is_a_view_and_compact_copies_it(device, axes):
    x, a = arange_array((2, 3, 4), device)
    p = a.permute(axes)
    expected = np.transpose(x, axes)
    assert p.shape == expected.shape
    assert p.handle is a.handle, "permute must not copy"
    assert not p.is_compact()
    np.testing.assert_array_equal(p.numpy(), expected)
    c = p.compact()
    assert c.is_compact() and c.strides == compact_strides(expected.shape)
    assert c.handle is not a.handle
    np.testing.assert_array_equal(c.numpy(), expected)
    buffer = NDArray.make((c.handle.size,), device=device, handle=c.handle).numpy()
    np.testing.assert_array_equal(buffer, expected.reshape(-1), err_msg="compact buffer is not row-major")


def test_permute_rejects_a_non_permutation(device):
    _, a = arange_array((2, 3), device)
    with pytest.raises(ValueError):
        a.permute((0, 0))


def test_compact_of_a_compact_array_is_the_array(device):
    _, a = arange_array((2, 3), device)
    assert a.compact() is a


# ---------------------------------------------------------------------------- broadcast_to
@pytest.mark.parametrize("shape, new_shape", [
    ((3, 1), (3, 4)),
    ((3, 1), (2, 3, 4)),
    ((1, 4), (3, 4)),
    ((), (2, 3)),
    ((), ()),
    ((1,), (5,)),
    ((1,), (2, 5)),
    ((2, 1, 3), (4, 2, 5, 3)),
])
def test_broadcast_to_matches_numpy_with_zero_strides(device, shape, new_shape):
    x, a = arange_array(shape, device)
    b = a.broadcast_to(new_shape)
    assert b.shape == new_shape
    assert b.handle is a.handle, "broadcast_to must not copy"
    lead = len(new_shape) - len(shape)
    for axis, n in enumerate(new_shape):
        if axis < lead or shape[axis - lead] != n:
            assert b.strides[axis] == 0, f"axis {axis} is broadcast: stride must be 0, got {b.strides}"
    np.testing.assert_array_equal(b.numpy(), np.broadcast_to(x, new_shape))
    np.testing.assert_array_equal(b.compact().numpy(), np.broadcast_to(x, new_shape))


@pytest.mark.parametrize("shape, new_shape", [((3,), (4,)), ((2, 3), (3,)), ((2, 3), (2, 3, 3))])
def test_broadcast_to_incompatible_shape_raises_naming_shapes(device, shape, new_shape):
    _, a = arange_array(shape, device)
    with pytest.raises(ValueError, match=re_shape(shape)):
        a.broadcast_to(new_shape)


# ---------------------------------------------------------------------------- slicing
@pytest.mark.parametrize("index", [
    (slice(None, None, 2), slice(1, 6, 3)),
    (slice(None, None, -1),),
    (slice(5, 0, -2), slice(None, None, -3)),
    (slice(-3, None), slice(2, -1)),
    (slice(1, 5), slice(6, 1, -2)),
    (slice(3, 3),),
    (slice(None), slice(None, None, 10)),
], ids=str)
def test_slicing_with_steps_matches_numpy(device, index):
    x, a = arange_array((6, 7), device)
    view = a[index]
    expected = x[index]
    assert view.shape == expected.shape
    assert view.handle is a.handle, "slicing must not copy"
    np.testing.assert_array_equal(view.numpy(), expected)
    np.testing.assert_array_equal(view.compact().numpy(), expected)


def test_slice_of_a_slice_composes(device):
    x, a = arange_array((8, 9), device)
    np.testing.assert_array_equal(a[1:7:2, ::-1][::-1, 2:8:3].numpy(), x[1:7:2, ::-1][::-1, 2:8:3])


@pytest.mark.parametrize("index, numpy_index", [
    ((1, slice(2, 4)), (slice(1, 2), slice(2, 4))),
    ((-1,), (slice(2, 3),)),
    ((0, -2), (slice(0, 1), slice(3, 4))),
    (2, (slice(2, 3),)),
], ids=str)
def test_integer_index_keeps_its_axis(device, index, numpy_index):
    """needle semantics: a[1, 2:4] of a (3, 5) array has shape (1, 2)."""
    x, a = arange_array((3, 5), device)
    view = a[index]
    assert view.ndim == 2
    np.testing.assert_array_equal(view.numpy(), x[numpy_index])


@pytest.mark.parametrize("index", [(3,), (0, 5), (-4,), (0, 0, 0)], ids=str)
def test_out_of_range_index_raises_index_error(device, index):
    _, a = arange_array((3, 5), device)
    with pytest.raises(IndexError):
        a[index]


# ---------------------------------------------------------------------------- flip
@pytest.mark.parametrize("shape, strides, offset, flip_axes", [
    ((3, 4), (-4, -1), 11, (0, 1)),
    ((3, 4), (4, -1), 3, (1,)),
    ((3, 4), (-4, 1), 8, (0,)),
    ((2, 3, 2), (-6, 2, -1), 7, (0, 2)),
])
def test_make_with_negative_strides_and_offset_is_a_flip(device, shape, strides, offset, flip_axes):
    x = np.arange(int(np.prod(shape)), dtype="float64")
    view = NDArray.make(shape, strides=strides, device=device, handle=device.xp.asarray(x), offset=offset)
    expected = np.flip(x.reshape(shape), flip_axes)
    np.testing.assert_array_equal(view.numpy(), expected)
    c = view.compact()
    assert c.is_compact()
    np.testing.assert_array_equal(c.numpy(), expected)


@pytest.mark.parametrize("axes", [(0,), (1,), (2,), (0, 2), (0, 1, 2), (-1,)])
def test_flip_matches_numpy_and_is_compact(device, axes):
    x, a = arange_array((2, 3, 4), device)
    f = a.flip(axes)
    assert f.is_compact()
    np.testing.assert_array_equal(f.numpy(), np.flip(x, axes))


@pytest.mark.parametrize("make_view, numpy_view", [
    (lambda a: a.permute((1, 0)), lambda x: x.T),
    (lambda a: a[::2, 1:], lambda x: x[::2, 1:]),
    (lambda a: a[::-1, ::3], lambda x: x[::-1, ::3]),
    (lambda a: a[1:, :].permute((1, 0))[::-2, :], lambda x: x[1:, :].T[::-2, :]),
    (lambda a: a[1:2, :].broadcast_to((3, 1, 7)), lambda x: np.broadcast_to(x[1:2, :], (3, 1, 7))),
], ids=["permuted", "sliced", "negative-stride", "sliced-permuted", "broadcast"])
def test_flip_of_a_non_compact_view(device, make_view, numpy_view):
    x, a = arange_array((5, 7), device)
    view = make_view(a)
    expected_view = numpy_view(x)
    for axes in [(0,), (-1,), tuple(range(view.ndim))]:
        np.testing.assert_array_equal(view.flip(axes).numpy(), np.flip(expected_view, axes))
    np.testing.assert_array_equal(a.numpy(), x, err_msg="flip must not modify its input")


# ---------------------------------------------------------------------------- pad
@pytest.mark.parametrize("widths, value", [
    (((1, 2), (0, 3)), 0.0),
    (((0, 0), (2, 2)), -1.5),
    (((3, 0), (0, 1)), 7.0),
])
def test_pad_matches_numpy(device, widths, value):
    x, a = arange_array((3, 4), device)
    p = a.pad(widths, value)
    np.testing.assert_array_equal(p.numpy(), np.pad(x, widths, constant_values=value))
    assert p.dtype == "float64"


def test_pad_of_a_non_compact_view(device):
    x, a = arange_array((4, 5), device)
    p = a.permute((1, 0))[::-2, :].pad(((1, 1), (2, 0)))
    np.testing.assert_array_equal(p.numpy(), np.pad(x.T[::-2, :], ((1, 1), (2, 0))))


@pytest.mark.parametrize("widths", [((1, 1),), ((1, -1), (0, 0)), ((1, 1), (0, 0), (0, 0))], ids=str)
def test_bad_pad_widths_raise(device, widths):
    _, a = arange_array((3, 4), device)
    with pytest.raises(ValueError, match=re_shape((3, 4))):
        a.pad(widths)


# ---------------------------------------------------------------------------- setitem
@pytest.mark.parametrize("index", [
    (slice(1, 3), slice(None, None, 2)),
    (slice(None, None, -2), slice(4, 0, -1)),
    (2, slice(1, 5)),
], ids=str)
def test_setitem_array_writes_in_place(device, index, rng):
    x, a = arange_array((4, 6), device)
    handle = a.handle
    expected = x.copy()
    shape = expected[tuple(slice(i, i + 1) if isinstance(i, int) else i for i in index)].shape
    values = rng.standard_normal(shape)
    a[index] = nd.array(values, device=device)
    expected[tuple(slice(i, i + 1) if isinstance(i, int) else i for i in index)] = values
    assert a.handle is handle, "setitem must write into the existing buffer"
    np.testing.assert_array_equal(a.numpy(), expected)


@pytest.mark.parametrize("index", [
    (slice(None, None, 2), slice(None, None, -1)),
    (slice(1, None), 3),
    (slice(None), slice(None)),
], ids=str)
def test_setitem_scalar_writes_in_place(device, index):
    x, a = arange_array((4, 6), device)
    a[index] = -7.0
    expected = x.copy()
    expected[tuple(slice(i, i + 1) if isinstance(i, int) else i for i in index)] = -7.0
    np.testing.assert_array_equal(a.numpy(), expected)


def test_setitem_on_a_strided_view_changes_the_base_array(device, rng):
    x, a = arange_array((4, 6), device)
    view = a[::2, 1:]                       # (2, 5), non-compact
    view[0:2, ::2] = nd.array(np.full((2, 3), -1.0), device=device)
    transposed = a.permute((1, 0))          # (6, 4)
    transposed[0:2, 1] = 9.0
    expected = x.copy()
    expected[::2, 1:][0:2, ::2] = -1.0
    expected.T[0:2, 1:2] = 9.0
    np.testing.assert_array_equal(a.numpy(), expected)
    np.testing.assert_array_equal(view.numpy(), expected[::2, 1:])


def test_setitem_from_a_non_compact_array(device):
    x, a = arange_array((3, 3), device)
    y, b = arange_array((3, 3), device)
    a[:, :] = b.permute((1, 0))[::-1, :]
    np.testing.assert_array_equal(a.numpy(), y.T[::-1, :])


def test_setitem_with_wrong_shape_raises(device):
    _, a = arange_array((4, 6), device)
    with pytest.raises(ValueError, match=re_shape((2, 2))):
        a[0:2, 0:3] = nd.array(np.zeros((2, 2)), device=device)


# ---------------------------------------------------------------------------- reshape / is_compact
@pytest.mark.parametrize("make_view", [
    lambda a: a.permute((1, 0)),
    lambda a: a[:, ::2],
    lambda a: a[1:, :],
    lambda a: a[0:1, :].broadcast_to((3, 6)),
    lambda a: a[::-1, :],
], ids=["permuted", "stepped", "offset", "broadcast", "flipped-view"])
def test_reshape_of_a_non_compact_array_raises(device, make_view):
    _, a = arange_array((4, 6), device)
    view = make_view(a)
    assert not view.is_compact()
    with pytest.raises(ValueError, match="compact"):
        view.reshape((view.size,))
    np.testing.assert_array_equal(view.compact().reshape((view.size,)).numpy(), view.numpy().reshape(-1))


@pytest.mark.parametrize("new_shape, expected_shape", [
    ((6, 4), (6, 4)), ((24,), (24,)), ((2, -1), (2, 12)), ((-1, 3, 2), (4, 3, 2)), ((1, 24, 1), (1, 24, 1)),
])
def test_reshape_of_a_compact_array_is_a_view(device, new_shape, expected_shape):
    x, a = arange_array((4, 6), device)
    r = a.reshape(new_shape)
    assert r.shape == expected_shape and r.handle is a.handle and r.is_compact()
    np.testing.assert_array_equal(r.numpy(), x.reshape(expected_shape))


@pytest.mark.parametrize("new_shape", [(5, 5), (-1, 5), (-1, -1)], ids=str)
def test_reshape_to_a_wrong_size_raises_naming_shapes(device, new_shape):
    _, a = arange_array((4, 6), device)
    with pytest.raises(ValueError, match=re.escape(str(new_shape))):
        a.reshape(new_shape)


@pytest.mark.parametrize("make_view, compact", [
    (lambda a: a, True),
    (lambda a: a[:, :], True),
    (lambda a: a.reshape((6, 4)), True),
    (lambda a: a.permute((0, 1)), True),
    (lambda a: a[1:], False),
    (lambda a: a[:3], False),
    (lambda a: a[:, ::2], False),
    (lambda a: a.permute((1, 0)), False),
    (lambda a: a[0:1].broadcast_to((2, 6)), False),
], ids=["fresh", "full-slice", "reshaped", "identity-permute", "offset", "prefix", "stepped",
        "transposed", "broadcast"])
def test_is_compact(device, make_view, compact):
    _, a = arange_array((4, 6), device)
    assert make_view(a).is_compact() is compact


# ---------------------------------------------------------------------------- as_strided / make
def test_as_strided_sliding_windows(device):
    x, a = arange_array((6,), device)
    windows = a.as_strided((4, 3), (1, 1))
    np.testing.assert_array_equal(windows.numpy(), np.lib.stride_tricks.sliding_window_view(x, 3))
    np.testing.assert_array_equal(windows.numpy()[1], [1.0, 2.0, 3.0])


def test_as_strided_keeps_the_offset(device):
    x, a = arange_array((4, 4), device)
    view = a[1:, 1:].as_strided((3,), (5,))     # the diagonal from (1, 1)
    np.testing.assert_array_equal(view.numpy(), [5.0, 10.0, 15.0])


@pytest.mark.parametrize("shape, strides, offset, size", [
    ((3, 4), (4, 1), 0, 11),
    ((3, 4), (4, 1), 1, 12),
    ((3,), (-1,), 1, 3),
    ((2, 2), (2, 3), 0, 5),
])
def test_make_outside_the_buffer_raises(device, shape, strides, offset, size):
    handle = device.xp.zeros(size)
    with pytest.raises(ValueError, match="outside"):
        NDArray.make(shape, strides=strides, device=device, handle=handle, offset=offset)


def test_make_with_mismatched_strides_raises(device):
    with pytest.raises(ValueError, match="strides"):
        NDArray.make((2, 3), strides=(3,), device=device, handle=device.xp.zeros(6))


def test_as_strided_outside_the_buffer_raises(device):
    _, a = arange_array((6,), device)
    with pytest.raises(ValueError):
        a.as_strided((4, 3), (2, 1))
