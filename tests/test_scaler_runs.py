"""Reading a loss-scaled run back from its recorded scales (course_lib.scaler_runs), with the
reference LossScaler and a run recorded from it."""
import numpy as np

from course_lib.precision import LossScaler
from course_lib.scaler_runs import replay_mismatch, replayed_by, steps_taken_at


def _recorded_run(flags, init_scale=2.0 ** 16, growth_interval=2):
    scaler, scales = LossScaler(init_scale=init_scale, growth_interval=growth_interval), []
    for finite in flags:
        scaler.update(finite)
        scales.append(scaler.scale_value)
    return scales, scaler.skipped_steps


def test_a_run_recorded_from_the_scaler_replays_exactly():
    flags = [False, True, True, True, False, True, True]
    scales, skipped = _recorded_run(flags)
    replay, replay_skipped = replayed_by(LossScaler, scales, 2.0 ** 16, 2)
    np.testing.assert_array_equal(replay, scales)
    assert replay_skipped == skipped == 2
    assert replay_mismatch(LossScaler, "run", scales, skipped, 2.0 ** 16, 2) is None


def test_a_run_that_recorded_the_scale_before_the_update_is_named():
    scales, skipped = _recorded_run([True, True, False, True])
    shifted = [2.0 ** 16] + scales[:-1]
    message = replay_mismatch(LossScaler, "mixed run", shifted, skipped, 2.0 ** 16, 2)
    assert message.startswith("mixed run: after update") and "once per step" in message
    assert "skipped_steps is 5" in replay_mismatch(LossScaler, "run", scales, 5, 2.0 ** 16, 2)
    assert replay_mismatch(LossScaler, "run", [], 0, 2.0 ** 16, 2) == "run: no scales recorded"


def test_steps_taken_at_counts_taken_and_skipped_steps_above_the_threshold():
    # from 2^17: skipped (-> 2^16), taken, taken (grows to 2^17), skipped (-> 2^16)
    scales, _ = _recorded_run([False, True, True, False], init_scale=2.0 ** 17)
    assert steps_taken_at(scales, 2.0 ** 17) == (2, 2)
    assert steps_taken_at(scales, 2.0 ** 17, threshold=2.0 ** 17) == (0, 2)
