"""A raw-text preprocessing layer through a SavedModel, for the in-graph tokenizer tests."""
import tensorflow as tf


def saved_and_loaded(layer, model_file, folder):
    """Saves ``layer`` as a SavedModel ``serve(text_a, text_b)`` (``tf.string [None]`` each)
    under ``folder``, deletes ``model_file`` (the vocab / SentencePiece model the layer was
    built from: the SavedModel must hold it) and returns the loaded module."""
    module = tf.Module()
    module.layer = layer
    module.serve = tf.function(lambda a, b: layer(a, b), input_signature=[
        tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(folder))
    model_file.unlink()  # the loaded model must not need the file
    return tf.saved_model.load(str(folder))
