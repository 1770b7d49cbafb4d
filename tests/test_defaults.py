"""defaults.resolve_model_files: the one rule for the BERT scripts' model flags."""
import os
import types

import pytest

from bert_tf import defaults
from bert_tf.errors import FlagError


def _args(**kw):
    base = dict(bert_config_file=None, vocab_file=None, init_checkpoint=None)
    base.update(kw)
    return types.SimpleNamespace(**base)


def test_no_model_flag_means_the_embedded_default(monkeypatch):
    monkeypatch.setattr(defaults, "default_model", lambda: defaults.DefaultModel("/cache/m"))
    args = defaults.resolve_model_files(_args())
    assert (args.bert_config_file, args.vocab_file, args.init_checkpoint) == (
        "/cache/m/bert_config.json", "/cache/m/vocab.txt", "/cache/m/bert_model.ckpt")


def test_given_flags_are_kept_and_partial_ones_named(monkeypatch):
    monkeypatch.setattr(defaults, "default_model", lambda: pytest.fail("default model used"))
    given = _args(bert_config_file="c.json", vocab_file="v.txt")
    assert defaults.resolve_model_files(given) is given and given.init_checkpoint is None
    with pytest.raises(FlagError, match=r"^--vocab_file missing: give --bert_config_file, "
                                        r"--vocab_file, or none of --bert_config_file, "
                                        r"--vocab_file, --init_checkpoint for the embedded"):
        defaults.resolve_model_files(_args(bert_config_file="c.json"))
    with pytest.raises(FlagError, match=r"^--init_checkpoint --vocab_file missing: give "
                                        r"--bert_config_file, --vocab_file, --init_checkpoint,"):
        defaults.resolve_model_files(_args(bert_config_file="c.json"),
                                     require_init_checkpoint=True)
    with pytest.raises(FlagError, match=r"^--bert_config_file --vocab_file missing"):
        defaults.resolve_model_files(_args(init_checkpoint="m.ckpt"))


def _fake_converter(calls, files, seconds=0.0):
    """A stand-in for ``convert.convert_hf_folder``: records its output folder in ``calls``,
    waits ``seconds``, writes ``files`` ((name, text) pairs) there."""
    import time

    def fake_convert(hf_dir, out_dir):
        calls.append(out_dir)
        time.sleep(seconds)
        for name, text in files:
            with open(os.path.join(out_dir, name), "w") as f:
                f.write(text)
    return fake_convert


def test_damaged_cache_is_rebuilt_not_failed_on(tmp_path, monkeypatch, caplog):
    # issue 15 item 3: a truncated file in the cache failed every later run with a traceback.
    import logging
    import os
    from bert_tf import convert

    calls = []
    monkeypatch.setenv("BERT_TF_CACHE", str(tmp_path))
    monkeypatch.setattr(defaults, "minilm_hf_dir", lambda: "/hf")
    monkeypatch.setattr(convert, "convert_hf_folder", _fake_converter(calls, (
        ("bert_config.json", "{}"), ("vocab.txt", "[PAD]\n[UNK]\n"),
        ("bert_model.ckpt.index", "index"),
        ("bert_model.ckpt.data-00000-of-00001", "0123456789"))))
    model = defaults.default_model()
    assert len(calls) == 1 and defaults.cache_problem(model.folder) == ""
    assert defaults.default_model() == model and len(calls) == 1  # reused as it is
    data = model.init_checkpoint + ".data-00000-of-00001"
    with open(data, "w") as f:
        f.write("01234")  # truncated: 5 of 10 bytes
    assert defaults.cache_problem(model.folder) == (
        "bert_model.ckpt.data-00000-of-00001 has 5 bytes, 10 when converted")
    with caplog.at_level(logging.INFO):
        defaults.default_model()
    assert len(calls) == 2 and os.path.getsize(data) == 10
    assert "is damaged (bert_model.ckpt.data-00000-of-00001 has 5 bytes" in caplog.text
    os.remove(os.path.join(model.folder, defaults.MANIFEST))  # an unfinished conversion
    defaults.default_model()
    assert len(calls) == 3 and sorted(os.listdir(tmp_path)) == ["all-MiniLM-L6-v2"]


def test_module_prints_the_folder_in_the_original_archive_layout(tmp_path, monkeypatch,
                                                                  capsys):
    """issue 15 item 9: ``BERT_BASE_DIR=$(python -m bert_tf.defaults)`` names a folder with
    the original archive's three files."""
    import os
    from bert_tf import convert

    def fake_convert(hf_dir, out_dir):
        for name in ("bert_config.json", "vocab.txt", "bert_model.ckpt.index",
                     "bert_model.ckpt.data-00000-of-00001"):
            with open(os.path.join(out_dir, name), "w") as f:
                f.write("x")

    monkeypatch.setenv("BERT_TF_CACHE", str(tmp_path))
    monkeypatch.setattr(defaults, "minilm_hf_dir", lambda: "/hf")
    monkeypatch.setattr(convert, "convert_hf_folder", fake_convert)
    defaults.main()
    assert capsys.readouterr().out == str(tmp_path / "all-MiniLM-L6-v2") + "\n"
    assert os.path.exists(tmp_path / "all-MiniLM-L6-v2" / "bert_config.json")


def test_small_xlnet_config_is_shipped_and_fits_the_real_spiece_model(shared_data_dir):
    """issue 15 item 9: the README's offline XLNet lines use bert_tf/resources/xlnet_config.json
    (package_data "resources/*") with the released spiece.model (32,000 pieces)."""
    import fnmatch

    from bert_tf import defaults
    from bert_tf.tokenization.sentencepiece_prepro import load_sp_model
    from bert_tf.xlnet.config import XLNetConfig, check_spiece_matches_config
    rel = os.path.relpath(defaults.XLNET_SMALL_CONFIG, os.path.dirname(defaults.__file__))
    assert fnmatch.fnmatch(rel, "resources/*")  # setup.py: package_data={"bert_tf": ["resources/*"]}
    config = XLNetConfig.from_json_file(defaults.XLNET_SMALL_CONFIG)
    assert (config.n_layer, config.d_model, config.n_head, config.d_head, config.d_inner,
            config.n_token) == (4, 128, 4, 32, 512, 32000)
    spiece = os.path.join(shared_data_dir, "xlnet", "spiece.model")
    check_spiece_matches_config(load_sp_model(spiece), config, spiece,
                                defaults.XLNET_SMALL_CONFIG)  # raises on a mismatch


def test_runs_starting_together_on_an_empty_cache_convert_once(tmp_path, monkeypatch):
    # A second conversion replaced the folder while a first run was reading it (one of three
    # runs started together failed on a missing vocab.txt): now one converts, the others wait
    # for it and use its folder.
    import threading
    from bert_tf import convert

    calls = []
    monkeypatch.setenv("BERT_TF_CACHE", str(tmp_path))
    monkeypatch.setattr(defaults, "minilm_hf_dir", lambda: "/hf")
    monkeypatch.setattr(convert, "convert_hf_folder", _fake_converter(calls, (
        ("bert_config.json", "{}"), ("vocab.txt", "[PAD]\n"),
        ("bert_model.ckpt.index", "index")), seconds=0.3))
    results, errors = [], []

    def run():
        try:
            results.append(defaults.default_model())
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(calls) == 1
    assert len(results) == 3 and len(set(results)) == 1
    assert defaults.cache_problem(results[0].folder) == ""
    assert sorted(os.listdir(tmp_path)) == ["all-MiniLM-L6-v2"]
