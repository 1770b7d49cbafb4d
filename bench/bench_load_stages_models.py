"""The user paths that bench_load_stages.py measures, stage by stage (issue 24).

BERT and XLNet: the extract_features tasks' extractors (``FeatureExtractor``,
``XLNetFeatureExtractor``), their restore wrapped to mark the end of the build; ALBERT: the
model API (``AlbertModel``, ``albert_model_map``, ``load_albert_checkpoint``), through
``bert_tf.training.restore.build_from_checkpoint`` where the tree has it.
"""

import numpy as np
import tensorflow as tf


def build_and_map(family, config_path):
    """(model, original name -> variable) with random weights (for writing checkpoints)."""
    if family == "bert_large":
        from bert_tf.bert.checkpoint_map import bert_model_map
        from bert_tf.bert.config import BertConfig
        from bert_tf.bert.model import BertModel
        model = BertModel(BertConfig.from_json_file(config_path)).build_with_dummy_input()
        return model, bert_model_map(model)
    if family == "xlnet_large":
        from bert_tf.xlnet.checkpoint_map import xlnet_variable_map
        from bert_tf.xlnet.config import RunConfig, XLNetConfig
        from bert_tf.xlnet.model import XLNetModel
        model = XLNetModel(XLNetConfig.from_json_file(config_path), RunConfig(is_training=False))
        model({"input_ids": tf.zeros([1, 2], tf.int32), "segment_ids": tf.zeros([1, 2], tf.int32),
               "input_mask": tf.zeros([1, 2], tf.float32)})
        return model, xlnet_variable_map(model)
    from bert_tf.albert.checkpoint_map import albert_model_map
    from bert_tf.albert.config import AlbertConfig
    from bert_tf.albert.model import AlbertModel
    model = AlbertModel(AlbertConfig.from_json_file(config_path)).build_with_dummy_input()
    return model, albert_model_map(model)


def _inputs(seq_length, vocab):
    rng = np.random.default_rng(1)
    return rng.integers(5, vocab, size=(2, seq_length)).astype(np.int32)


def _wrap(module, name, mark):
    original = getattr(module, name)

    def wrapped(*args, **kwargs):
        mark("build")
        out = original(*args, **kwargs)
        mark("restore")
        return out

    setattr(module, name, wrapped)


def build_restore_run(family, config_path, ckpt, seq_length, mark):
    """Builds, restores and runs one batch of 2 x ``seq_length`` tokens, calling ``mark``
    after each stage."""
    if family == "bert_large":
        from bert_tf.bert.config import BertConfig
        from bert_tf.bert.tasks import feature_extraction as fe
        _wrap(fe, "load_bert_checkpoint", mark)
        ex = fe.FeatureExtractor(BertConfig.from_json_file(config_path), ckpt, [-1, -2, -3, -4],
                                 tf.distribute.get_strategy())
        ids = _inputs(seq_length, 30522)
        ex.predict(ids, np.ones_like(ids), np.zeros_like(ids))
    elif family == "xlnet_large":
        from bert_tf.xlnet import checkpoint_map
        from bert_tf.xlnet.config import XLNetConfig
        from bert_tf.xlnet.tasks import feature_extraction as fe
        _wrap(checkpoint_map, "load_xlnet_checkpoint", mark)
        ex = fe.XLNetFeatureExtractor(XLNetConfig.from_json_file(config_path), ckpt,
                                      [-1, -2, -3, -4])
        ids = _inputs(seq_length, 32000)
        ex.predict(ids, np.zeros_like(ids), np.zeros(ids.shape, np.float32))
    else:
        from bert_tf.albert import checkpoint_map
        from bert_tf.albert.config import AlbertConfig
        from bert_tf.albert.model import AlbertModel
        from bert_tf.training import restore
        config = AlbertConfig.from_json_file(config_path)
        _wrap(checkpoint_map, "load_albert_checkpoint", mark)

        def load(model):
            return checkpoint_map.load_albert_checkpoint(
                checkpoint_map.albert_model_map(model), ckpt, require_all=True)

        if hasattr(restore, "build_from_checkpoint"):
            model, _ = restore.build_from_checkpoint(
                lambda: AlbertModel(config).build_with_dummy_input(), load)
        else:
            model = AlbertModel(config).build_with_dummy_input()
            load(model)
        ids = _inputs(seq_length, 30000)
        out = model({"input_ids": ids, "input_mask": np.ones_like(ids),
                     "segment_ids": np.zeros_like(ids)})
        out["sequence_output"].numpy()
    mark("first_batch")
