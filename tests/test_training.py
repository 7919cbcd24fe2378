"""The small CNN learns the digits: accuracy well above chance in a few seconds."""

from course_lib import optim
from course_lib.data import DataLoader, load_digits
from course_lib.demo import main as demo_main
from course_lib.seeding import seed_everything
from course_lib.train import accuracy, small_cnn, train_epoch


def _train(seed, epochs=3, pool="max"):
    seed_everything(seed)
    x, y = load_digits("train")
    model = small_cnn(pool=pool)
    opt = optim.Adam(model.parameters(), lr=0.01)
    losses = [train_epoch(model, DataLoader(x, y, batch_size=64, shuffle=True, seed=seed), opt)
              for _ in range(epochs)]
    return model, losses


def test_small_cnn_reaches_high_accuracy_on_held_out_digits():
    model, losses = _train(0)
    x_te, y_te = load_digits("test")
    assert losses[-1] < losses[0]
    assert accuracy(model, x_te, y_te) > 0.9  # chance is 0.1


def test_average_pooling_model_learns_too():
    # average pooling learns more slowly here (experiment 07 measures by how much)
    model, _ = _train(1, epochs=5, pool="avg")
    x_te, y_te = load_digits("test")
    assert accuracy(model, x_te, y_te) > 0.75


def test_training_is_reproducible_with_a_seed():
    _, first = _train(5, epochs=1)
    _, again = _train(5, epochs=1)
    _, other = _train(6, epochs=1)
    assert first == again and first != other


def test_demo_prints_accuracy(capsys):
    acc = demo_main(["--epochs", "2"])
    out = capsys.readouterr().out
    assert "test accuracy" in out and acc > 0.8
