"""Hidden checks of 03_ndarray: strides, views (shape, strides AND offset, compared with NumPy's own
views), flip and pad on non-compact inputs, and the Flip / Dilate / UnDilate ops with their
gradients."""
import numpy as np
import pytest

from course_tools.grading.api import StudentError, as_float, as_list, expect_close, task, view_of

# A check of one task never builds its input with another task's method: a non-compact input
# arrives as a view made here (view_of), so a stubbed permute costs permute alone.


def element_strides(view: np.ndarray) -> list:
    return [s // view.itemsize for s in view.strides]


def element_offset(view: np.ndarray, base: np.ndarray) -> int:
    return (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // base.itemsize


def check_view(got, expected, base, what, compact=None):
    """got: the ndarray_steps answer; expected: the same view made by NumPy from ``base``."""
    if list(got["shape"]) != list(expected.shape):
        raise AssertionError(f"{what}: the view has shape {tuple(got['shape'])}, expected {expected.shape}")
    expect_close(got["values"], expected, what, rtol=0, atol=0)
    if expected.size:
        # the stride of an axis of length 1 is never used: any value is right
        want = [s if n > 1 else None for s, n in zip(element_strides(expected), expected.shape)]
        have = [s if n > 1 else None for s, n in zip(got["strides"], expected.shape)]
        if have != want:
            shown = ", ".join("any" if s is None else str(s) for s in want)
            raise AssertionError(f"{what}: the view has strides {tuple(got['strides'])}, expected ({shown}) "
                                 f"(in elements)")
        offset = element_offset(expected, base)
        if got["offset"] != offset:
            raise AssertionError(f"{what}: the view has offset {got['offset']}, expected {offset}")
    if compact is not None and got["compact"] != compact:
        raise AssertionError(f"{what}: is_compact() is {got['compact']}, expected {compact}")


def check_copy(got, expected, what, dtype=None):
    """A result that must be a fresh compact (row-major) array with these values."""
    expect_close(got["values"], expected, what, rtol=0, atol=0, dtype=dtype)
    if not got["compact"] or got["offset"] != 0:
        raise AssertionError(f"{what}: the result is not compact (strides {tuple(got['strides'])}, offset "
                             f"{got['offset']}); return a row-major copy (.compact())")


def numpy_index(index, shape):
    """The NumPy selection of an NDArray index (ints keep their axis, as in needle)."""
    out = []
    for item, n in zip(index, shape):
        if isinstance(item, int):
            i = item % n
            out.append(slice(i, i + 1))
        else:
            out.append(slice(*item))
    return tuple(out)


def show(index):
    parts = []
    for item in index:
        if isinstance(item, int):
            parts.append(str(item))
        else:
            parts.append(":".join("" if v is None else str(v) for v in item).rstrip(":") or ":")
    return f"[{', '.join(parts)}]"


# ---------------------------------------------------------------------------------------------
# compact_strides

STRIDE_SHAPES = [(), (7,), (2, 3, 4), (4, 1, 3), (1, 1), (2, 3, 4, 5, 6), (6, 1), (1, 5, 2, 1)]


@task("ndarray_compact_strides")
@pytest.mark.parametrize("shape", STRIDE_SHAPES, ids=[str(s) for s in STRIDE_SHAPES])
def test_compact_strides(student, shape):
    """compact_strides gives row-major strides (in elements) for shapes of 0 to 5 axes"""
    want = element_strides(np.empty(shape))
    got = as_list(student.request("compact_strides", list(shape)), f"compact_strides({shape})")
    assert list(got) == want, f"compact_strides({shape}): got {tuple(got)}, expected {tuple(want)}"


@task("ndarray_compact_strides", weight=2)
def test_new_arrays_are_compact(student, rng):
    """a newly created NDArray has row-major strides, offset 0 and is_compact() is True"""
    x = rng.standard_normal((3, 2, 5))
    got = student.ndarray_steps(x, [])
    check_view(got, x, x, "nd.array of a (3, 2, 5) array", compact=True)
    got = student.ndarray_steps(x, [["compact"]])
    check_view(got, x, x, "nd.array(x).compact() of a (3, 2, 5) array", compact=True)


# ---------------------------------------------------------------------------------------------
# permute

PERMUTES = [(1, 0, 2), (2, 0, 1), (0, 2, 1), (2, 1, 0), (1, 2, 0), (-1, -3, -2), (0, 1, 2)]


@task("ndarray_permute")
@pytest.mark.parametrize("axes", PERMUTES, ids=[str(a) for a in PERMUTES])
def test_permute_is_a_view(student, rng, axes):
    """permute reorders shape and strides (negative axes allowed) and copies nothing"""
    x = rng.standard_normal((2, 3, 4))
    got = student.ndarray_steps(x, [["permute", list(axes)]])
    check_view(got, np.transpose(x, axes), x, f"permute({axes}) of a (2, 3, 4) array",
               compact=tuple(a % 3 for a in axes) == (0, 1, 2))


@task("ndarray_permute", weight=2)
def test_permute_of_a_permuted_view(student, rng):
    """permute of an array that is already a permuted (non-compact) view"""
    x = rng.standard_normal((2, 3, 4, 5))
    got = student.ndarray_steps(x, [["permute", [3, 1, 0, 2]], ["permute", [2, 0, 3, 1]]])
    check_view(got, x.transpose(3, 1, 0, 2).transpose(2, 0, 3, 1), x,
               "permute((3, 1, 0, 2)) then permute((2, 0, 3, 1)) of a (2, 3, 4, 5) array")


@task("ndarray_permute")
def test_permute_matrix_transpose(student, rng):
    """the transpose of a (5, 2) matrix"""
    x = rng.standard_normal((5, 2))
    check_view(student.ndarray_steps(x, [["permute", [1, 0]]]), x.T, x, "permute((1, 0)) of a (5, 2) matrix",
               compact=False)


# ---------------------------------------------------------------------------------------------
# broadcast_to

BROADCASTS = [((4, 1), (4, 3)), ((1, 5), (2, 5)), ((2, 1), (3, 2, 4)), ((5,), (2, 3, 5)), ((1, 1, 1), (2, 1, 3)),
              ((3, 2), (3, 2)), ((2, 1, 1), (2, 3, 2)), ((1,), (4,)), ((), (2, 3))]


@task("ndarray_broadcast_to")
@pytest.mark.parametrize("src,dst", BROADCASTS, ids=[f"{s}->{d}" for s, d in BROADCASTS])
def test_broadcast_to_is_a_view_with_zero_strides(student, rng, src, dst):
    """broadcast_to gives stride 0 to new leading axes and to stretched size-1 axes"""
    x = rng.standard_normal(src)
    check_view(student.ndarray_steps(x, [["broadcast_to", list(dst)]]), np.broadcast_to(x, dst), x,
               f"broadcast_to {src} -> {dst}", compact=src == dst)


@task("ndarray_broadcast_to", weight=2)
def test_broadcast_to_of_a_permuted_view(student, rng):
    """broadcast_to of a transposed (non-compact) matrix keeps its strides"""
    x = rng.standard_normal((1, 4))
    got = student.ndarray_steps(view_of(x, x.T), [["broadcast_to", [2, 4, 3]]])
    check_view(got, np.broadcast_to(x.T, (2, 4, 3)), x, "a (1, 4) matrix transposed, then broadcast to (2, 4, 3)")


@task("ndarray_broadcast_to")
def test_broadcast_to_of_a_slice_keeps_the_offset(student, rng):
    """broadcast_to of a view that starts inside the buffer (offset kept)"""
    x = rng.standard_normal((3, 4))
    got = student.ndarray_steps(view_of(x, x[1:2, :]), [["broadcast_to", [5, 1, 4]]])
    check_view(got, np.broadcast_to(x[1:2, :], (5, 1, 4)), x, "x[1:2, :] of a (3, 4) array broadcast to (5, 1, 4)")


# ---------------------------------------------------------------------------------------------
# getitem (_slice_view)

GETITEMS = [
    [[1, 3, None]],
    [[None, None, 2], [None, None, None], [1, None, 3]],
    [[None, None, -1]],
    [[None, None, None], [3, 0, -1], [None, None, -2]],
    [[2, None, -2], [None, None, 3]],
    [1],
    [-1, [1, 3, None], -2],
    [[None, None, None], 0, [4, 0, -3]],
    [[0, 1, None], [None, None, -1], 3],
    [[-2, None, None], [-1, -5, -1]],
    [[None, None, None], [None, None, None], [None, None, 4]],
    [[1, 2, None], 2, [3, 5, None]],
]


@task("ndarray_getitem")
@pytest.mark.parametrize("index", GETITEMS, ids=[show(i) for i in GETITEMS])
def test_getitem_is_a_view(student, rng, index):
    """slicing with steps (negative too) and integers (axis kept): shape, strides and offset of the view"""
    x = rng.standard_normal((3, 4, 5))
    got = student.ndarray_steps(x, [["getitem", index]])
    expected = x[numpy_index(index + [[None, None, None]] * (3 - len(index)), x.shape)]
    check_view(got, expected, x, f"a{show(index)} of a (3, 4, 5) array")


@task("ndarray_getitem")
def test_getitem_empty_selection(student, rng):
    """a selection that is empty along one axis (start past the end) has length 0 there"""
    x = rng.standard_normal((3, 4))
    got = student.ndarray_steps(x, [["getitem", [[5, 9, None], [None, None, None]]]])
    if list(got["shape"]) != [0, 4]:
        raise AssertionError(f"a[5:9, :] of a (3, 4) array: shape {tuple(got['shape'])}, expected (0, 4)")
    got = student.ndarray_steps(x, [["getitem", [[None, None, None], [2, 2, None]]]])
    if list(got["shape"]) != [3, 0]:
        raise AssertionError(f"a[:, 2:2] of a (3, 4) array: shape {tuple(got['shape'])}, expected (3, 0)")


@task("ndarray_getitem", weight=2)
def test_getitem_of_views(student, rng):
    """slicing a slice (offsets add up) and slicing a permuted view"""
    x = rng.standard_normal((4, 5, 6))
    got = student.ndarray_steps(x, [["getitem", [[1, None, None], [None, None, 2], [5, 0, -1]]],
                                    ["getitem", [[None, None, -2], [1, None, None], 2]]])
    check_view(got, x[1:, ::2, 5:0:-1][::-2, 1:, 2:3], x, "a[1:, ::2, 5:0:-1][::-2, 1:, 2] of a (4, 5, 6) array")
    got = student.ndarray_steps(view_of(x, x.transpose(2, 0, 1)), [["getitem", [[1, 5, 3], -1, [None, None, -1]]]])
    check_view(got, x.transpose(2, 0, 1)[1:5:3, -1:, ::-1], x, "a.permute((2, 0, 1))[1:5:3, -1, ::-1] of (4, 5, 6)")


@task("ndarray_getitem", weight=2)
def test_setitem_writes_through_the_view(student, rng):
    """writing into a strided selection (setitem uses the same view)"""
    x = rng.standard_normal((4, 5))
    expected = x.copy()
    expected[1:4:2, ::-2] = -7.0
    got = student.ndarray_steps(x, [["setitem", [[1, 4, 2], [None, None, -2]], -7.0]])
    expect_close(got["values"], expected, "after a[1:4:2, ::-2] = -7.0 on a (4, 5) array", rtol=0, atol=0)
    value = rng.standard_normal((1, 5))
    expected = x.copy()
    expected[2:3, :] = value
    got = student.ndarray_steps(x, [["setitem", [2], value]])
    expect_close(got["values"], expected, "after a[2] = (a (1, 5) array) on a (4, 5) array", rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# flip

FLIPS = [[0], [1], [2], [0, 2], [1, 2], [0, 1, 2], [-1], [-3, -2]]


@task("ndarray_flip")
@pytest.mark.parametrize("axes", FLIPS, ids=[str(a) for a in FLIPS])
def test_flip_values_and_compact(student, rng, axes):
    """flip reverses the given axes and returns a compact array"""
    x = rng.standard_normal((3, 4, 5))
    check_copy(student.ndarray_steps(x, [["flip", axes]]), np.flip(x, axes), f"flip({tuple(axes)}) of (3, 4, 5)")


@task("ndarray_flip")
def test_flip_with_an_int_axis(student, rng):
    """flip with a single int axis"""
    x = rng.standard_normal((4, 3))
    check_copy(student.ndarray_steps(x, [["flip", 1]]), np.flip(x, 1), "flip(1) of (4, 3)")


@task("ndarray_flip", weight=2)
def test_flip_of_a_permuted_view(student, rng):
    """flip of a permuted (non-compact) view"""
    x = rng.standard_normal((2, 3, 4))
    check_copy(student.ndarray_steps(view_of(x, x.transpose(2, 0, 1)), [["flip", [0, 2]]]),
               np.flip(x.transpose(2, 0, 1), (0, 2)), "a.permute((2, 0, 1)).flip((0, 2)) of (2, 3, 4)")
    check_copy(student.ndarray_steps(view_of(x, x.transpose(1, 2, 0)), [["flip", [1]]]),
               np.flip(x.transpose(1, 2, 0), 1), "a.permute((1, 2, 0)).flip((1,)) of (2, 3, 4)")


# Two slices, each a case of its own (weight 1 each): a diagnosis needs two inputs that agree.
OFFSET_FLIPS = [((slice(1, 3), slice(2, 5), slice(1, None)), (0, 1), "a[1:3, 2:5, 1:].flip((0, 1)) of (4, 5, 3)"),
                ((slice(2, 3),), (2,), "a[2].flip((2,)) of (4, 5, 3)")]


@pytest.mark.parametrize("index,axes,what", [pytest.param(*c, id=f"case{i}", marks=task("ndarray_flip"))
                                             for i, c in enumerate(OFFSET_FLIPS)])
def test_flip_of_a_view_with_an_offset(student, rng, index, axes, what):
    """flip of a slice that starts inside the buffer (its offset counts)"""
    x = rng.standard_normal((4, 5, 3))
    check_copy(student.ndarray_steps(view_of(x, x[index]), [["flip", list(axes)]]), np.flip(x[index], axes), what)


@task("ndarray_flip")
def test_flip_of_a_broadcast_view(student, rng):
    """flip of a broadcast view (stride 0)"""
    x = rng.standard_normal((4, 1))
    check_copy(student.ndarray_steps(view_of(x, np.broadcast_to(x, (2, 4, 3))), [["flip", [0, 1, 2]]]),
               np.flip(np.broadcast_to(x, (2, 4, 3)), (0, 1, 2)), "a (4, 1) column broadcast to (2, 4, 3), flipped")


@task("ndarray_flip")
def test_flip_twice_is_the_identity(student, rng):
    """flipping the same axes twice gives the input back; a size-1 axis flips to itself"""
    x = rng.standard_normal((3, 1, 4))
    check_copy(student.ndarray_steps(x, [["flip", [0, 2]], ["flip", [2, 0]]]), x, "flip((0, 2)) twice of (3, 1, 4)")
    check_copy(student.ndarray_steps(x, [["flip", [1]]]), x, "flip((1,)) of (3, 1, 4) (a size-1 axis)")


# ---------------------------------------------------------------------------------------------
# pad

PADS = [[[1, 2], [0, 3]], [[0, 0], [2, 2]], [[3, 0], [0, 1]], [[0, 0], [0, 0]], [[2, 2], [1, 1]]]


@task("ndarray_pad")
@pytest.mark.parametrize("widths", PADS, ids=[str(w) for w in PADS])
def test_pad_matches_numpy(student, rng, widths):
    """pad with (before, after) pairs per axis, as np.pad"""
    x = rng.standard_normal((3, 2))
    check_copy(student.ndarray_steps(x, [["pad", widths]]), np.pad(x, widths), f"pad {widths} of a (3, 2) array")


@task("ndarray_pad")
def test_pad_with_a_value(student, rng):
    """pad with a fill value other than 0"""
    x = rng.standard_normal((2, 3))
    widths = [[0, 2], [1, 0]]
    got = student.ndarray_steps(x, [["pad", widths, 4.5]])
    expect_close(got["values"], np.pad(x, widths, constant_values=4.5), "pad [[0, 2], [1, 0]] with value 4.5",
                 rtol=0, atol=0)


@task("ndarray_pad", weight=2)
def test_pad_images_and_vectors(student, rng):
    """pad an (N, H, W, C) image on H and W only, and a vector"""
    img = rng.standard_normal((2, 3, 4, 2))
    widths = [[0, 0], [2, 2], [1, 1], [0, 0]]
    check_copy(student.ndarray_steps(img, [["pad", widths]]), np.pad(img, widths), f"pad {widths} of (2, 3, 4, 2)")
    v = rng.standard_normal(4)
    check_copy(student.ndarray_steps(v, [["pad", [[1, 3]]]]), np.pad(v, [(1, 3)]), "pad [[1, 3]] of (4,)")


@task("ndarray_pad")
def test_pad_of_a_permuted_view(student, rng):
    """pad of a transposed (non-compact) matrix"""
    x = rng.standard_normal((2, 4))
    check_copy(student.ndarray_steps(view_of(x, x.T), [["pad", [[1, 0], [2, 1]]]]),
               np.pad(x.T, [(1, 0), (2, 1)]), "pad [[1, 0], [2, 1]] of a transposed (2, 4) matrix")


@task("ndarray_pad")
def test_pad_keeps_float32(student, rng):
    """pad of a float32 array keeps float32"""
    x = rng.standard_normal((2, 2)).astype(np.float32)
    check_copy(student.ndarray_steps(x, [["pad", [[1, 1], [1, 1]]]]), np.pad(x, 1), "pad of a float32 (2, 2) array",
               dtype="float32")


# ---------------------------------------------------------------------------------------------
# Flip op

OP_FLIPS = [((2, 3, 4), (0,)), ((2, 3, 4), (1, 2)), ((2, 3, 4), (-1, 0)), ((3, 2, 2, 3), (1, 2)), ((5,), (0,))]


@task("op_flip")
@pytest.mark.parametrize("shape,axes", OP_FLIPS, ids=[f"{s}-{a}" for s, a in OP_FLIPS])
def test_flip_op_forward(student, rng, shape, axes):
    """Flip(axes).compute"""
    x = rng.standard_normal(shape)
    expect_close(student.forward("Flip", {"axes": axes}, x), np.flip(x, axes), f"Flip({axes}).compute of {shape}",
                 rtol=0, atol=0, dtype="float64")


@task("op_flip", weight=2)
@pytest.mark.parametrize("shape,axes", OP_FLIPS[1:4], ids=[f"{s}-{a}" for s, a in OP_FLIPS[1:4]])
def test_flip_op_gradient(student, rng, shape, axes):
    """Flip(axes).gradient is the same flip of out_grad"""
    x, g = rng.standard_normal(shape), rng.standard_normal(shape)
    got = student.gradient("Flip", {"axes": axes}, [x], g)
    expect_close(got[0], np.flip(g, axes), f"Flip({axes}).gradient for an input of shape {shape}", rtol=0, atol=0)


@task("op_flip")
def test_flip_op_backward(student, rng):
    """ops.flip(x, (0, 2)).backward(out_grad) gives x.grad = flip(out_grad, (0, 2))"""
    x, g = rng.standard_normal((3, 2, 4)), rng.standard_normal((3, 2, 4))
    got = student.call("course_lib.ops:flip", x, as_tensors=True, out_grad=g, axes=(0, 2))
    expect_close(got["out"], np.flip(x, (0, 2)), "ops.flip(x, (0, 2)) of (3, 2, 4)", rtol=0, atol=0)
    expect_close(got["grads"][0], np.flip(g, (0, 2)), "x.grad after ops.flip(x, (0, 2)).backward(out_grad)",
                 rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# Dilate and UnDilate ops

def numpy_dilate(x, axes, d):
    axes = {a % x.ndim for a in axes}
    out = np.zeros(tuple(n * (d + 1) if i in axes else n for i, n in enumerate(x.shape)), dtype=x.dtype)
    out[tuple(slice(None, None, d + 1) if i in axes else slice(None) for i in range(x.ndim))] = x
    return out


def numpy_undilate(x, axes, d):
    axes = {a % x.ndim for a in axes}
    return x[tuple(slice(None, None, d + 1) if i in axes else slice(None) for i in range(x.ndim))]


@task("op_dilate", weight=2)
def test_dilate_worked_example(student):
    """the 2 x 2 example of the notebook dilated by 1 on both axes (4 x 4, zeros after every element)"""
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    got = student.forward("Dilate", {"axes": (0, 1), "dilation": 1}, x)
    if np.shape(got) != (4, 4):
        raise AssertionError(f"Dilate((0, 1), 1).compute of the 2 x 2 example: shape {np.shape(got)}, expected (4, 4)")
    if not np.array_equal(got, numpy_dilate(x, (0, 1), 1)):
        raise AssertionError("Dilate((0, 1), 1).compute of the 2 x 2 example [[1, 2], [3, 4]]: wrong values (the "
                             "zeros go AFTER every element, also after the last row and column)")


DILATES = [((3,), (0,), 2), ((2, 3), (1,), 1), ((2, 3, 2), (0, 2), 2), ((3, 2), (-1,), 3), ((2, 2, 3), (0, 1, 2), 1),
           ((2, 3), (0, 1), 0), ((1, 4, 2), (-2,), 1)]


@task("op_dilate")
@pytest.mark.parametrize("shape,axes,d", DILATES, ids=[f"{s}-{a}-{d}" for s, a, d in DILATES])
def test_dilate_forward(student, rng, shape, axes, d):
    """Dilate(axes, d).compute: d zeros after every element along the axes (negative axes, d = 0 too)"""
    x = rng.standard_normal(shape)
    expect_close(student.forward("Dilate", {"axes": axes, "dilation": d}, x), numpy_dilate(x, axes, d),
                 f"Dilate({axes}, {d}).compute of {shape}", rtol=0, atol=0, dtype="float64")


@task("op_dilate")
def test_dilate_keeps_float32(student, rng):
    """Dilate of a float32 array is float32"""
    x = rng.standard_normal((2, 3)).astype(np.float32)
    expect_close(student.forward("Dilate", {"axes": (0,), "dilation": 2}, x), numpy_dilate(x, (0,), 2),
                 "Dilate((0,), 2).compute of float32 (2, 3)", rtol=0, atol=0, dtype="float32")


@task("op_dilate", weight=2)
@pytest.mark.parametrize("shape,axes,d", DILATES[1:5], ids=[f"{s}-{a}-{d}" for s, a, d in DILATES[1:5]])
def test_dilate_gradient(student, rng, shape, axes, d):
    """Dilate.gradient keeps every (d+1)-th element of out_grad (undilate)"""
    x = rng.standard_normal(shape)
    g = rng.standard_normal(numpy_dilate(x, axes, d).shape)
    got = student.gradient("Dilate", {"axes": axes, "dilation": d}, [x], g)
    expect_close(got[0], numpy_undilate(g, axes, d), f"Dilate({axes}, {d}).gradient for an input of shape {shape}",
                 rtol=0, atol=0)


@task("op_dilate")
def test_dilate_backward(student, rng):
    """ops.dilate(x, (1,), 2).backward(out_grad) through reverse mode"""
    x = rng.standard_normal((2, 3))
    g = rng.standard_normal((2, 9))
    got = student.call("course_lib.ops:dilate", x, as_tensors=True, out_grad=g, axes=(1,), dilation=2)
    expect_close(got["grads"][0], g[:, ::3], "x.grad after ops.dilate(x, (1,), 2).backward(out_grad)", rtol=0, atol=0)


UNDILATES = [((6, 4), (0, 1), 1), ((7,), (0,), 1), ((5, 8), (0, 1), 2), ((3, 5, 4), (0, 2), 1), ((2, 5), (-1,), 0),
             ((3, 9), (1,), 3), ((4, 3), (1,), 5), ((5, 2, 3), (-3, -1), 2)]


@task("op_undilate")
@pytest.mark.parametrize("shape,axes,d", UNDILATES, ids=[f"{s}-{a}-{d}" for s, a, d in UNDILATES])
def test_undilate_forward(student, rng, shape, axes, d):
    """UnDilate(axes, d).compute keeps every (d+1)-th element (sizes that are not multiples of d+1 too)"""
    x = rng.standard_normal(shape)
    expect_close(student.forward("UnDilate", {"axes": axes, "dilation": d}, x), numpy_undilate(x, axes, d),
                 f"UnDilate({axes}, {d}).compute of {shape}", rtol=0, atol=0, dtype="float64")


@task("op_undilate")
@pytest.mark.parametrize("shape,axes,d", [((6, 4), (0, 1), 1), ((3, 9), (1,), 3)], ids=["both-axes", "last-axis"])
def test_undilate_returns_a_compact_array(student, rng, shape, axes, d):
    """UnDilate.compute returns a compact array (the notebook asks for .compact()), not a strided view of its input"""
    x = rng.standard_normal(shape)
    got = student.forward_view("UnDilate", {"axes": axes, "dilation": d}, x)
    check_copy(got, numpy_undilate(x, axes, d), f"UnDilate({axes}, {d}).compute of {shape}")


@task("op_undilate", weight=2)
@pytest.mark.parametrize("shape,axes,d", UNDILATES, ids=[f"{s}-{a}-{d}" for s, a, d in UNDILATES])
def test_undilate_gradient(student, rng, shape, axes, d):
    """UnDilate.gradient puts out_grad back at every (d+1)-th position, zeros elsewhere, in the input's shape"""
    x = rng.standard_normal(shape)
    g = rng.standard_normal(numpy_undilate(x, axes, d).shape)
    expected = np.zeros(shape)
    expected[tuple(slice(None, None, d + 1) if i in {a % len(shape) for a in axes} else slice(None)
                   for i in range(len(shape)))] = g
    got = student.gradient("UnDilate", {"axes": axes, "dilation": d}, [x], g)
    try:
        expect_close(got[0], expected, f"UnDilate({axes}, {d}).gradient for an input of shape {shape}", rtol=0, atol=0)
    except AssertionError:
        if np.shape(got[0]) != shape:  # a wrong shape is evidence too, with its own message
            raise AssertionError(f"UnDilate({axes}, {d}).gradient for an input of shape {shape}: the gradient has "
                                 f"shape {np.shape(got[0])}, expected {shape} (crop what dilate adds at the end)") from None
        raise


@task("op_undilate")
def test_undilate_backward_worked_example(student):
    """the notebook's example: undilate of 5 elements by 1, backward with out_grad (10, 20, 30)"""
    got = student.call("course_lib.ops:undilate", np.arange(1.0, 6.0), as_tensors=True,
                       out_grad=np.array([10.0, 20.0, 30.0]), axes=(0,), dilation=1)
    grad = got["grads"][0]
    if grad is None or np.shape(grad) != (5,):
        raise AssertionError(f"undilate of a (5,) tensor: x.grad has shape {None if grad is None else np.shape(grad)}, "
                             f"expected (5,) (crop the extra trailing zeros that dilate makes)")
    if not np.array_equal(grad, [10.0, 0.0, 20.0, 0.0, 30.0]):
        raise AssertionError("undilate of [1, 2, 3, 4, 5] by 1, backward with out_grad [10, 20, 30]: wrong values")


# ---------------------------------------------------------------------------------------------
# adjoint_check (a notebook function; NumPy only, nothing of course_lib is called)
# The pairs are grader-provided functions that remember the arrays the student's check passes them:
# the expected gap is computed here from those very draws, with the formula of the contract.

class Recorded:
    """One side of a linear map, run in the grader: checks the shape it is given, remembers the input."""

    def __init__(self, fn, in_shape, name):
        self.fn, self.in_shape, self.name, self.inputs = fn, tuple(in_shape), name, []

    def __call__(self, v):
        v = np.array(v, dtype=np.float64)
        if v.shape != self.in_shape:
            raise ValueError(f"{self.name} was given an array of shape {v.shape}, expected {self.in_shape}")
        self.inputs.append(v)
        return np.asarray(self.fn(v), dtype=np.float64)


def adjoint_gap(student, forward, backward, x_shape, y_shape, trials, seed, what):
    """(the student's gap, the gap computed here from the same draws) for one pair."""
    f, g = Recorded(forward, x_shape, "forward"), Recorded(backward, y_shape, "backward")
    got = student.call("student:adjoint_check", student.grader_function(f), student.grader_function(g),
                       x_shape=list(x_shape), y_shape=list(y_shape), trials=trials, seed=seed)
    got = as_float(got, f"adjoint_check({what})")
    if len(f.inputs) != trials or len(g.inputs) != trials:
        raise AssertionError(f"adjoint_check({what}, trials={trials}) called forward {len(f.inputs)} and backward "
                             f"{len(g.inputs)} times; expected once each per trial")
    for name, inputs in (("x", f.inputs), ("y", g.inputs)):
        if any(not np.any(v) for v in inputs) or any(np.array_equal(a, b) for a, b in zip(inputs, inputs[1:])):
            raise AssertionError(f"adjoint_check({what}): every trial should draw a new random {name} "
                                 f"(one generator for all the trials)")
    tiny = np.finfo(np.float64).tiny
    gaps = []
    for x, y in zip(f.inputs, g.inputs):
        lhs, rhs = float(np.sum(forward(x) * y)), float(np.sum(x * backward(y)))
        gaps.append(abs(lhs - rhs) / max(abs(lhs), tiny))
    return got, max(gaps)


def numpy_dilate0(x, d):
    out = np.zeros((x.shape[0] * (d + 1),) + x.shape[1:])
    out[::d + 1] = x
    return out


ADJOINT = ["adjoint", "scaled-up", "scaled-down", "several-axes", "dilate-undilate", "pad-crop"]
NOT_ADJOINT = ["other-matrix", "twice-the-transpose", "not-transposed-axes", "undilate-shifted", "crop-wrong-side"]


def adjoint_pair(name, rng):
    """(forward, backward, x_shape, y_shape) of one named pair."""
    m = rng.standard_normal((5, 3))
    w = rng.standard_normal((4, 3, 2))
    other = rng.standard_normal((3, 5))
    pairs = {
        "adjoint": (lambda x: m @ x, lambda y: m.T @ y, (3,), (5,)),
        "scaled-up": (lambda x: 1e7 * (m @ x), lambda y: 1e7 * (m.T @ y), (3,), (5,)),
        "scaled-down": (lambda x: 1e-7 * (m @ x), lambda y: 1e-7 * (m.T @ y), (3,), (5,)),
        # (2, 3, 4) -> (4, 3, 2): reverse the axes, weight elementwise; back: weight, reverse again
        "several-axes": (lambda x: np.transpose(x) * w, lambda y: np.transpose(y * w), (2, 3, 4), (4, 3, 2)),
        "dilate-undilate": (lambda x: numpy_dilate0(x, 2), lambda y: y[::3], (3, 2, 2), (9, 2, 2)),
        "pad-crop": (lambda x: np.pad(x, ((1, 2), (0, 3))), lambda y: y[1:-2, :-3], (2, 4), (5, 7)),
        "other-matrix": (lambda x: m @ x, lambda y: other @ y, (3,), (5,)),
        "twice-the-transpose": (lambda x: 1e-5 * (m @ x), lambda y: 2e-5 * (m.T @ y), (3,), (5,)),
        "not-transposed-axes": (lambda x: np.transpose(x) * w, lambda y: np.transpose(y) * np.transpose(w),
                                (2, 3, 4), (4, 3, 2)),
        "undilate-shifted": (lambda x: numpy_dilate0(x, 2), lambda y: y[1::3], (3, 2, 2), (9, 2, 2)),
        "crop-wrong-side": (lambda x: np.pad(x, ((1, 2), (0, 3))), lambda y: y[2:-1, :-3], (2, 4), (5, 7)),
    }
    return pairs[name]


@task("adjoint_check")
@pytest.mark.parametrize("name", ADJOINT)
def test_adjoint_check_passes_adjoint_pairs(student, rng, name):
    """adjoint_check of a map and its transpose: rounding level, and the value of the formula on the same draws"""
    forward, backward, x_shape, y_shape = adjoint_pair(name, rng)
    got, want = adjoint_gap(student, forward, backward, x_shape, y_shape, 3, 11, name)
    if not got < 1e-12 or abs(got - want) > 1e-12:
        raise AssertionError(f"adjoint_check on a map of shape {x_shape} -> {y_shape} and its adjoint ({name}) "
                             f"returned {got:.3g}; the relative gap of those draws is {want:.3g}")


@task("adjoint_check")
@pytest.mark.parametrize("name", NOT_ADJOINT)
def test_adjoint_check_measures_other_pairs(student, rng, name):
    """adjoint_check of a map and a partner that is not its transpose: the largest relative gap of the draws"""
    forward, backward, x_shape, y_shape = adjoint_pair(name, rng)
    got, want = adjoint_gap(student, forward, backward, x_shape, y_shape, 4, 5, name)
    if not np.isclose(got, want, rtol=1e-6, atol=1e-12):
        raise AssertionError(f"adjoint_check on a map of shape {x_shape} -> {y_shape} and a partner that is not "
                             f"its adjoint ({name}, trials=4) returned {got:.6g}; the largest relative gap "
                             f"|<f(x), y> - <x, g(y)>| / max(|<f(x), y>|, tiny) of those draws is {want:.6g}")


@task("adjoint_check")
def test_adjoint_check_trials(student, rng):
    """adjoint_check calls each side once per trial and keeps the largest gap"""
    m, w = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    got, want = adjoint_gap(student, lambda x: m @ x, lambda y: w @ y, (4,), (4,), 7, 3, "trials=7")
    if not np.isclose(got, want, rtol=1e-6, atol=1e-12):
        raise AssertionError(f"adjoint_check with trials=7 returned {got:.6g}; the largest gap of the 7 draws is "
                             f"{want:.6g}")


@task("adjoint_check")
def test_adjoint_check_zero_forward(student, rng):
    """a forward that is the zero map: <f(x), y> = 0, so the gap divides by np.finfo(np.float64).tiny"""
    m = 1e-3 * rng.standard_normal((3, 4))  # small: |<x, g(y)>| / tiny stays finite
    got, want = adjoint_gap(student, lambda x: np.zeros(3), lambda y: m.T @ y, (4,), (3,), 2, 9, "zero forward")
    if not np.isclose(got, want, rtol=1e-6, atol=0):
        raise AssertionError(f"adjoint_check with forward(x) = 0 and a nonzero backward returned {got:.6g}; "
                             f"expected |<x, g(y)>| / np.finfo(np.float64).tiny = {want:.6g}")


@task("adjoint_check")
def test_adjoint_check_draws_from_its_seed(student, rng):
    """the same seed draws the same x and y; another seed draws others"""
    m = rng.standard_normal((2, 3))
    drawn = []
    for seed in (4, 4, 5):
        f, g = Recorded(lambda x: m @ x, (3,), "forward"), Recorded(lambda y: m.T @ y, (2,), "backward")
        student.call("student:adjoint_check", student.grader_function(f), student.grader_function(g),
                     x_shape=[3], y_shape=[2], trials=2, seed=seed)
        drawn.append(np.concatenate([v.reshape(-1) for v in f.inputs + g.inputs]) if f.inputs and g.inputs else None)
    if drawn[0] is None or drawn[1] is None or drawn[0].shape != drawn[1].shape or not np.array_equal(drawn[0], drawn[1]):
        raise AssertionError("adjoint_check called twice with seed=4 drew different x and y: draw them from "
                             "np.random.default_rng(seed)")
    if drawn[2] is not None and drawn[2].shape == drawn[0].shape and np.array_equal(drawn[0], drawn[2]):
        raise AssertionError("adjoint_check drew the same x and y with seed=4 and seed=5: draw them from "
                             "np.random.default_rng(seed)")


@task("adjoint_check")
@pytest.mark.parametrize("side", ["forward", "backward"])
def test_adjoint_check_refuses_wrong_shapes(student, rng, side):
    """a forward whose output is not y_shape, or a backward whose output is not x_shape: ValueError (shapes
    that broadcast against y and x, so that only the check of the shapes can notice)"""
    m = rng.standard_normal((4, 3))
    forward = (lambda x: (m @ x)[:1]) if side == "forward" else (lambda x: m @ x)
    backward = (lambda y: m.T @ y) if side == "forward" else (lambda y: (m.T @ y)[None, :])
    what = f"adjoint_check with a {side} that returns the wrong shape"
    try:
        got = student.call("student:adjoint_check", student.grader_function(forward), student.grader_function(backward),
                           x_shape=[3], y_shape=[4], trials=1, seed=0)
    except StudentError as err:
        raised = str(err).split(":", 1)[0]
        if raised != "ValueError":
            raise AssertionError(f"{what} raised {raised}, expected ValueError") from None
        return
    raise AssertionError(f"{what} returned {got!r}, expected ValueError naming the shapes")


# The contract before it asked for a ValueError on non-finite results (issue 37: the reference
# reported a NaN backward as a perfect adjoint, since Python's max drops NaN, and an inf forward as 0).
EARLIER_ADJOINT_CHECK = "038edba0b11b"


@task("adjoint_check", not_for=EARLIER_ADJOINT_CHECK)
@pytest.mark.parametrize("side, bad", [("forward", np.nan), ("backward", np.nan), ("forward", np.inf),
                                       ("backward", -np.inf)])
def test_adjoint_check_refuses_non_finite_results(student, rng, side, bad):
    """a forward or backward whose result holds NaN or +-inf: ValueError naming that function (no gap is measured)"""
    m = rng.standard_normal((4, 3))

    def spoiled(v):
        v = v.copy()
        v[1] = bad
        return v
    forward = (lambda x: spoiled(m @ x)) if side == "forward" else (lambda x: m @ x)
    backward = (lambda y: spoiled(m.T @ y)) if side == "backward" else (lambda y: m.T @ y)
    what = f"adjoint_check with a {side} whose result holds {bad}"
    try:
        got = student.call("student:adjoint_check", student.grader_function(forward), student.grader_function(backward),
                           x_shape=[3], y_shape=[4], trials=2, seed=0)
    except StudentError as err:
        raised, _, message = str(err).partition(":")
        if raised != "ValueError":
            raise AssertionError(f"{what} raised {raised}, expected ValueError") from None
        if side not in message:
            raise AssertionError(f"{what} raised ValueError({message.strip()!r}), which does not name {side}") from None
        return
    raise AssertionError(f"{what} returned {got!r}, expected ValueError naming {side}")
