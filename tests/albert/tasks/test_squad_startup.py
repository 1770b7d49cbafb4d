"""ALBERT run_squad --do_predict without training (issue 24 item 1): the encoder is created
from --init_checkpoint (its weights draw no random initial value; only the v2 heads, absent
from the checkpoint, do), and the predictions equal those of the plain build (random weights,
then overwritten)."""
import keras

from bert_tf.albert.tasks import squad as task
from tests.albert.tasks.test_squad import (albert_dir, make_args, small_files,  # noqa: F401
                                           spm_file, squad_file)
from tests.start_probe import build_plainly, record_random_draws

ENCODER = [(32000, 16), (128, 16), (2, 16), (16, 64)]  # embeddings and their projection


def _predict(albert_dir, spm_file, small_files, tmp_path, out):  # noqa: F811
    folder = tmp_path / out
    folder.mkdir()
    keras.utils.set_random_seed(4)  # the heads' initial values: the same seed in both runs
    task.run(make_args(albert_dir, spm_file, folder, predict_file=small_files["predict_v2"],
                       do_predict=True, start_n_top=3, end_n_top=2, predict_batch_size=32),
             version=2)
    with open(folder / "predictions.json", encoding="utf-8") as f:
        return f.read()


def test_predict_creates_the_encoder_from_the_checkpoint(albert_dir, spm_file,  # noqa: F811
                                                        small_files, tmp_path, monkeypatch):
    drawn = record_random_draws(monkeypatch)
    ours = _predict(albert_dir, spm_file, small_files, tmp_path, "built")
    heads = list(drawn)
    assert heads and not set(ENCODER) & set(heads)
    build_plainly(monkeypatch)  # the path before issue 24: the same numbers
    del drawn[:]
    theirs = _predict(albert_dir, spm_file, small_files, tmp_path, "plain")
    assert set(ENCODER) <= set(drawn) and len(drawn) > len(heads)
    assert ours == theirs
