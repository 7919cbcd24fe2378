import numpy as np
import pytest

from course_lib.data import DataLoader, load_digits
from course_lib.host import to_numpy


def test_digits_are_real_images_with_all_classes():
    x, y = load_digits("all")
    assert x.shape == (1797, 1, 8, 8) and x.dtype == np.float32
    assert y.shape == (1797,) and y.dtype == np.int64
    assert 0.0 <= x.min() and x.max() == 1.0
    assert np.bincount(y).min() > 170  # roughly balanced, ten classes
    # a real digit has strokes: most images use a good part of the grid
    assert np.median((x > 0).mean(axis=(1, 2, 3))) > 0.3


def test_train_and_test_split_partition_the_data():
    x_all, _ = load_digits("all")
    x_tr, y_tr = load_digits("train")
    x_te, y_te = load_digits("test")
    assert len(y_tr) + len(y_te) == 1797 and len(y_te) == round(1797 * 0.25)
    rows = {r.tobytes() for r in x_tr}
    overlap = sum(r.tobytes() in rows for r in x_te)
    assert overlap < 5  # only genuinely duplicated images may appear in both


def test_loader_is_reproducible_and_covers_every_sample_once(device):
    x = np.arange(10.0)[:, None]
    y = np.arange(10)

    def labels(seed):
        return [to_numpy(b[1]).tolist() for b in DataLoader(x, y, batch_size=4, shuffle=True, seed=seed,
                                                             device=device)]

    first, second, other = labels(3), labels(3), labels(4)
    assert first == second and first != other
    assert sorted(sum(first, [])) == list(range(10))
    assert [len(b) for b in first] == [4, 4, 2]


def test_loader_batches_live_on_its_device_with_the_arrays_dtypes(device):
    x, y = np.arange(12.0, dtype="float32").reshape(6, 2), np.arange(6)
    for xb, yb in DataLoader(x, y, batch_size=4, device=device):
        assert xb.device == device and yb.device == device
        assert xb.dtype == "float32" and yb.dtype == "int64" and not yb.requires_grad
    np.testing.assert_array_equal(to_numpy(xb), x[4:])


def test_loader_drop_last_and_errors():
    x, y = np.zeros((10, 2)), np.zeros(10)
    assert len(DataLoader(x, y, batch_size=4, drop_last=True)) == 2
    with pytest.raises(ValueError, match=r"\[10, 9\]"):
        DataLoader(x, y[:9], batch_size=4)
    with pytest.raises(ValueError, match="split"):
        load_digits("validation")
