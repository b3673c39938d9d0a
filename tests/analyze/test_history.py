from kvbench.analyze.regress.history import segments


def test_a_persistent_step_starts_a_new_segment():
    values = [20.0, 20.2, 19.9, 20.1, 16.0, 16.1, 15.9, 16.2]
    segs = segments(values)
    assert [(s.start, s.end) for s in segs] == [(0, 4), (4, 8)]
    assert segs[0].median == 20.05 and segs[1].median == 16.05


def test_a_one_off_outlier_does_not():
    values = [20.0, 20.1, 12.0, 20.0, 19.9, 20.2]
    assert len(segments(values)) == 1


def test_small_drift_under_the_floor_is_one_segment():
    assert len(segments([20.0, 19.7, 19.5, 19.6, 19.4])) == 1


def test_steps_up_and_down():
    values = [10, 10, 10, 13, 13, 13, 10, 10, 10]
    assert [(s.start, s.end) for s in segments(values)] == [(0, 3), (3, 6), (6, 9)]


def test_empty():
    assert segments([]) == []
