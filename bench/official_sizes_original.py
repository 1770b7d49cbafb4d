"""The ORIGINAL code's side of ``bench/bench_official_sizes.py`` (issue 24): runs under the TF 2.15
venv of ``bench/original_venv.sh``, never under this tree's.

    $ORIGINAL_PYTHON bench/official_sizes_original.py build FAMILY MODEL_DIR ORIGINAL_DIR
    $ORIGINAL_PYTHON bench/official_sizes_original.py run FAMILY MODEL_DIR ORIGINAL_DIR INPUT OUT_NPZ

``build``: the original ``modeling.py`` (BERT, ALBERT) or ``xlnet.py`` (XLNet) of ORIGINAL_DIR
(google-research/bert, google-research/albert, zihangdai/xlnet; outside this repository, nothing
of it copied here) builds its model from MODEL_DIR's config in a ``tf.compat.v1`` graph, with
the pre-training head variables the released checkpoints also hold (names and shapes as the
originals' ``run_pretraining.py`` / ``model_utils`` create them: BERT and ALBERT
``cls/predictions/*`` and ``cls/seq_relationship/*``, XLNet ``model/lm_loss/bias``), initialises
everything with the original's initialisers (truncated normal, stddev ``initializer_range`` /
``init_std`` 0.02; LayerNorm ones and zeros) and saves it with ``tf.train.Saver`` under the
released file name (``bert_model.ckpt``, ``xlnet_model.ckpt``, ``model.ckpt-best``).

``run`` (XLNet and ALBERT; BERT runs the original ``extract_features.py`` itself): what a user of
the original model API writes. The lines of INPUT (``text_a ||| text_b``) become the original
classifier's inputs (XLNet: ``prepro_utils`` + ``classifier_utils.convert_single_example``,
``A <sep> B <sep> <cls>``; ALBERT: ``tokenization.FullTokenizer`` with the SentencePiece model,
``[CLS] A [SEP] B [SEP]``, the longer text cut first), one batch; the model is built with
``is_training=False``, filled by ``tf.train.init_from_checkpoint`` (XLNet through its
``model_utils.init_from_checkpoint``; ALBERT with its ``get_assignment_map_from_checkpoint``, as
its ``run_classifier.py``) and ``get_sequence_output()`` is run once. Writes OUT_NPZ:
``sequence_output`` float32 [batch, seq, hidden] (batch-major for both), ``input_ids`` and
``input_mask`` (1 = real token) [batch, seq] int32, ``tokens_json`` (the real tokens per line). Stages (import, build, restore, first_batch) are marked
through ``bench/rss_stages.py`` (``$RSS_STAGES_OUT``).
"""

import json
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rss_stages  # noqa: E402

rss_stages.mark("start")

CHECKPOINT_NAME = {"bert": "bert_model.ckpt", "xlnet": "xlnet_model.ckpt", "albert": "model.ckpt-best"}
CONFIG_NAME = {"bert": "bert_config.json", "xlnet": "xlnet_config.json", "albert": "albert_config.json"}


def load_tf(original_dir):
    """``tensorflow`` as the original code sees it (``bench/original_tf1_shim.py``), plus the
    ``tensorflow.contrib`` / ``tensorflow_hub`` module names ALBERT's imports ask for."""
    import original_tf1_shim
    tf = original_tf1_shim.install()
    sys.modules["tensorflow.contrib"] = tf.contrib
    sys.modules.setdefault("tensorflow_hub", types.ModuleType("tensorflow_hub"))  # hub modules unused
    sys.path.insert(0, original_dir)
    return tf


class _Flags:
    """The FLAGS fields the original XLNet functions read (run_classifier.py's defaults)."""
    use_tpu = False
    use_bfloat16 = False
    dropout = 0.1
    dropatt = 0.1
    init = "normal"
    init_range = 0.1
    init_std = 0.02
    clamp_len = -1

    def __init__(self, model_dir):
        self.model_config_path = os.path.join(model_dir, CONFIG_NAME["xlnet"])
        self.init_checkpoint = os.path.join(model_dir, CHECKPOINT_NAME["xlnet"])


def build_model(tf, family, model_dir, input_ids, input_mask, segment_ids):
    """The original model on [batch, seq] int32 placeholders; returns [batch, seq, hidden]."""
    config_path = os.path.join(model_dir, CONFIG_NAME[family])
    if family == "xlnet":
        import xlnet
        flags = _Flags(model_dir)
        model = xlnet.XLNetModel(
            xlnet_config=xlnet.XLNetConfig(json_path=config_path),
            run_config=xlnet.create_run_config(False, True, flags),
            input_ids=tf.transpose(input_ids), seg_ids=tf.transpose(segment_ids),
            input_mask=1.0 - tf.cast(tf.transpose(input_mask), tf.float32))  # 1 = padding
        return tf.transpose(model.get_sequence_output(), [1, 0, 2])
    import modeling
    if family == "bert":
        model = modeling.BertModel(modeling.BertConfig.from_json_file(config_path), is_training=False,
                                   input_ids=input_ids, input_mask=input_mask,
                                   token_type_ids=segment_ids, use_one_hot_embeddings=False)
    else:
        model = modeling.AlbertModel(modeling.AlbertConfig.from_json_file(config_path),
                                     is_training=False, input_ids=input_ids, input_mask=input_mask,
                                     token_type_ids=segment_ids, use_one_hot_embeddings=False)
    return model.get_sequence_output()


def head_variables(tf, family, config):
    """The pre-training head variables of the released checkpoints (names and shapes only)."""
    init = tf.truncated_normal_initializer(stddev=0.02)
    zeros, ones = tf.zeros_initializer(), tf.ones_initializer()
    if family == "xlnet":
        tf.get_variable("model/lm_loss/bias", [config["n_token"]], initializer=zeros)
        return
    hidden = config["hidden_size"]
    width = config["embedding_size"] if family == "albert" else hidden
    tf.get_variable("cls/predictions/transform/dense/kernel", [hidden, width], initializer=init)
    tf.get_variable("cls/predictions/transform/dense/bias", [width], initializer=zeros)
    tf.get_variable("cls/predictions/transform/LayerNorm/beta", [width], initializer=zeros)
    tf.get_variable("cls/predictions/transform/LayerNorm/gamma", [width], initializer=ones)
    tf.get_variable("cls/predictions/output_bias", [config["vocab_size"]], initializer=zeros)
    tf.get_variable("cls/seq_relationship/output_weights", [2, hidden], initializer=init)
    tf.get_variable("cls/seq_relationship/output_bias", [2], initializer=zeros)


def build(family, model_dir, original_dir):
    """Writes MODEL_DIR/<released checkpoint name> from the original code's random weights."""
    tf = load_tf(original_dir)
    with open(os.path.join(model_dir, CONFIG_NAME[family])) as f:
        config = json.load(f)
    with tf.Graph().as_default():
        ids = tf.placeholder(tf.int32, [1, 8])
        build_model(tf, family, model_dir, ids, tf.ones_like(ids), tf.zeros_like(ids))
        head_variables(tf, family, config)
        saver = tf.train.Saver(tf.global_variables())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, os.path.join(model_dir, CHECKPOINT_NAME[family]), write_meta_graph=False)
        count = sum(int(v.shape.num_elements()) for v in tf.global_variables())
    print(f"{family}: {count} parameters -> {model_dir}/{CHECKPOINT_NAME[family]}")


def read_pairs(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split(" ||| ") for line in f if line.strip()]


def xlnet_inputs(model_dir, pairs, max_seq_length):
    """The original XLNet classifier's features of the pairs (left-padded, mask 1 = padding)."""
    import sentencepiece as spm
    import classifier_utils
    import prepro_utils
    sp = spm.SentencePieceProcessor()
    sp.Load(os.path.join(model_dir, "spiece.model"))

    def tokenize_fn(text):
        return prepro_utils.encode_ids(sp, prepro_utils.preprocess_text(text, lower=False))

    rows = []
    for i, (a, b) in enumerate(pairs):
        example = types.SimpleNamespace(guid=str(i), text_a=a, text_b=b, label="0")
        feature = classifier_utils.convert_single_example(i, example, ["0", "1"], max_seq_length,
                                                          tokenize_fn)
        real = [m == 0 for m in feature.input_mask]
        rows.append((feature.input_ids, [int(r) for r in real], feature.segment_ids,
                     [sp.IdToPiece(t) for t, r in zip(feature.input_ids, real) if r]))
    return rows


def albert_inputs(model_dir, pairs, max_seq_length):
    """``[CLS] A [SEP] B [SEP]`` with the original ALBERT tokenizer, padded on the right."""
    import tokenization
    tok = tokenization.FullTokenizer(vocab_file=None, do_lower_case=True,
                                     spm_model_file=os.path.join(model_dir, "30k-clean.model"))
    rows = []
    for a, b in pairs:
        ta, tb = tok.tokenize(a), tok.tokenize(b)
        while len(ta) + len(tb) > max_seq_length - 3:
            (ta if len(ta) > len(tb) else tb).pop()
        tokens = ["[CLS]"] + ta + ["[SEP]"] + tb + ["[SEP]"]
        segs = [0] * (len(ta) + 2) + [1] * (len(tb) + 1)
        pad = max_seq_length - len(tokens)
        ids = tok.convert_tokens_to_ids(tokens) + [0] * pad
        text = [t.decode("utf-8") if isinstance(t, bytes) else t for t in tokens]  # py3: bytes pieces
        rows.append((ids, [1] * len(tokens) + [0] * pad, segs + [0] * pad, text))
    return rows


def run(family, model_dir, original_dir, input_path, out_path, max_seq_length=512):
    """The original model API on the input lines, one batch; see the module docstring."""
    import numpy as np
    tf = load_tf(original_dir)
    pairs = read_pairs(input_path)
    if family == "xlnet":  # imported before the mark: part of "import"
        import model_utils
        rows = xlnet_inputs(model_dir, pairs, max_seq_length)
    else:
        import modeling
        rows = albert_inputs(model_dir, pairs, max_seq_length)
    rss_stages.mark("import")
    ids, mask, segs = (np.array([r[k] for r in rows], np.int32) for k in range(3))
    ids_ph = tf.placeholder(tf.int32, ids.shape)
    mask_ph = tf.placeholder(tf.int32, ids.shape)
    segs_ph = tf.placeholder(tf.int32, ids.shape)
    sequence_output = build_model(tf, family, model_dir, ids_ph, mask_ph, segs_ph)
    checkpoint = os.path.join(model_dir, CHECKPOINT_NAME[family])
    if family == "xlnet":
        model_utils.init_from_checkpoint(_Flags(model_dir))
    else:
        assignment_map, _ = modeling.get_assignment_map_from_checkpoint(
            tf.trainable_variables(), checkpoint)
        tf.train.init_from_checkpoint(checkpoint, assignment_map)
    rss_stages.mark("build")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        rss_stages.mark("restore")
        out = sess.run(sequence_output, {ids_ph: ids, mask_ph: mask, segs_ph: segs})
        rss_stages.mark("first_batch")
    np.savez(out_path, sequence_output=out.astype(np.float32), input_ids=ids, input_mask=mask,
             tokens_json=np.array(json.dumps([r[3] for r in rows])))


def main(argv):
    command, family, model_dir, original_dir = argv[1:5]
    if command == "build":
        build(family, model_dir, original_dir)
    elif command == "run":
        run(family, model_dir, original_dir, argv[5], argv[6])
    else:
        raise SystemExit(f"unknown command {command!r} (build, run)")


if __name__ == "__main__":
    main(sys.argv)
