"""Progress lines of training/evaluation/prediction (issue 15 item 7); numbers by hand."""

import logging

from absl import logging as absl_logging

from bert_tf.progress import ProgressReporter, format_duration, format_progress


def test_format_progress_hand_worked():
    # 30 of 100 steps in 12 s: 2.5 steps/s, 960 examples -> 80 examples/s, 70 left -> 28 s.
    assert format_progress("train", 30, 100, 12.0, "steps", examples=960) == (
        "train: 30/100 steps (30%), 2.5 steps/s, 80.0 examples/s, elapsed 0:00:12, "
        "ETA 0:00:28")
    # resumed at step 50: 10 steps in 10 s -> 1 step/s, 40 left -> 40 s.
    assert format_progress("train", 60, 100, 10.0, "steps", start=50) == (
        "train: 60/100 steps (60%), 1.0 steps/s, elapsed 0:00:10, ETA 0:00:40")
    assert format_progress("predict", 50, None, 4.0) == (
        "predict: 50 examples, 12.5 examples/s, elapsed 0:00:04")
    assert format_progress("eval", 0, 8, 1.0).endswith("ETA ?")  # no rate yet
    assert format_duration(90061) == "25:01:01" and format_duration(3599.6) == "1:00:00"


def test_reporter_logs_every_tenth_and_once_at_the_end(caplog):
    verbosity = absl_logging.get_verbosity()
    absl_logging.set_verbosity(absl_logging.INFO)
    try:
        with caplog.at_level(logging.INFO):
            bar = ProgressReporter("eval", 100, every_s=1e9)
            logged = [n for n in range(5, 101, 5) if bar.update(n)]
            bar.finish()  # the 100/100 line was the last one: no repeat
            tail = ProgressReporter("predict", 7, every_s=1e9)
            tail.update(3)
            tail.finish()
    finally:
        absl_logging.set_verbosity(verbosity)
    assert logged == list(range(10, 101, 10))
    lines = [r.getMessage() for r in caplog.records]
    # predict: 10% of 7 rounds up to 1 example, so the update at 3 logs; finish adds nothing
    assert [line.split(",")[0] for line in lines] == (
        [f"eval: {n}/100 examples ({n}%)" for n in range(10, 101, 10)]
        + ["predict: 3/7 examples (43%)"])
    # resumed training from step 3 of 23: a line every 2 steps, the first at step 5
    assert ProgressReporter("train", 23, "steps", start=3).next_count == 5


class _Terminal:
    """A stand-in stderr that says it is a terminal."""

    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_terminal_gets_one_bar_redrawn_in_place_and_logs_no_lines(caplog, monkeypatch):
    verbosity = absl_logging.get_verbosity()
    absl_logging.set_verbosity(absl_logging.INFO)
    clock = iter(range(0, 1000, 2))  # 2 s per call of time.time
    monkeypatch.setattr("bert_tf.progress.time.time", lambda: float(next(clock)))
    term = _Terminal()
    try:
        with caplog.at_level(logging.INFO):
            bar = ProgressReporter("eval", 200, stream=term)  # begins at t=0
            assert bar.tty and bar.next_count == 2  # every 1% on a terminal
            bar.update(50)  # t=2: 25 examples/s, 150 left -> 6 s
            bar.update(200)  # t=4: 50 examples/s
            bar.finish()
    finally:
        absl_logging.set_verbosity(verbosity)
    assert [r.getMessage() for r in caplog.records if "eval" in r.getMessage()] == []
    assert term.text == (
        "\reval [######..................] 50/200 examples (25%), 25.0 examples/s, "
        "elapsed 0:00:02, ETA 0:00:06\x1b[K"
        "\reval [########################] 200/200 examples (100%), 50.0 examples/s, "
        "elapsed 0:00:04, ETA 0:00:00\x1b[K\n")


def test_log_file_gets_the_lines_and_no_bar(caplog):
    class _File(_Terminal):
        def isatty(self):
            return False
    f = _File()
    verbosity = absl_logging.get_verbosity()
    absl_logging.set_verbosity(absl_logging.INFO)
    try:
        with caplog.at_level(logging.INFO):
            bar = ProgressReporter("predict", 10, stream=f, every_s=1e9)
            bar.update(10)
            bar.finish()
    finally:
        absl_logging.set_verbosity(verbosity)
    assert f.text == ""
    assert [r.getMessage().split(",")[0] for r in caplog.records] == [
        "predict: 10/10 examples (100%)"]


def test_absurd_eta_is_printed_in_days_or_years():
    # An absurd --num_train_epochs gave "ETA 690000000000:..." (hours). The run goes on as the
    # original's would; the ETA reads in days (>= 1000 h) or years (>= 1000 days, 365.25 d).
    assert format_duration(3599999) == "999:59:59"
    assert format_duration(3600000) == "42 days"  # 41.67 days, rounded
    assert format_duration(41 * 86400) == "984:00:00"
    # 1 step/s, 2.484e15 steps left: 2.484e15 / 31,557,600 s = 78,713,210.4 years
    line = format_progress("train", 10, 10 + 2484 * 10**12, 10.0, "steps")
    assert line.endswith("ETA 78,713,210 years")
