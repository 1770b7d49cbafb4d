"""defaults.resolve_model_files: the one rule for the BERT scripts' model flags."""
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
