"""Packaging for bert_tf: the original BERT and XLNet releases on TensorFlow 2 / Keras 3."""
from setuptools import find_packages, setup

setup(
    name="bert_tf",
    version="0.1.0",
    description=(
        "TensorFlow 2 / Keras 3 re-implementation of the original BERT and XLNet releases: "
        "original checkpoints, flags and file formats."
    ),
    python_requires=">=3.10",
    packages=find_packages(include=["bert_tf", "bert_tf.*"]),
    package_data={"bert_tf": ["resources/*"]},
    install_requires=[
        "tensorflow>=2.21,<2.22",
        "tensorflow-text>=2.21,<2.22",
        "keras>=3.10,<4",
        "keras-hub>=0.32,<0.33",
        "absl-py>=2.1,<3",
        "tensorboard>=2.21,<2.22",  # tf.summary scalars of the training loop
        "sentencepiece>=0.2,<0.3",
        "safetensors>=0.4,<1",
        "numpy>=1.26,<3",
        # TensorFlow asks >=0.5.1; 0.7.0's import takes 0.44 CPU s (0.6.0: 0.01), paid by
        # every command when TensorFlow imports it (issue 25)
        "ml_dtypes>=0.5.1,<0.7",
    ],
    extras_require={
        "test": ["pytest>=8,<10"],
        # only to run Hugging Face's own models on converted folders (tests, users); never
        # needed by the scripts or by python -m bert_tf.convert
        "hf": ["torch>=2.1", "transformers>=4.40"],
    },
)
