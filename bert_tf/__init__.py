"""bert_tf: the original BERT and XLNet releases rebuilt on TensorFlow 2 / Keras 3.

The package folders follow the data flow:

    tokenization/  text -> tokens (WordPiece for BERT, SentencePiece for XLNet)
    data/          tokens -> examples and features (TFRecords in the original formats)
    bert/, xlnet/  model families: config, Keras layers, model, checkpoint name map
    training/      optimizer, schedules, tf.distribute strategy, original-layout checkpoints
    tasks/         task heads and the run functions behind the root scripts

The root scripts (``extract_features.py``, ``run_classifier.py`` ...) only parse flags and
call one function of ``bert_tf.tasks``.
"""

__version__ = "0.1.0"
