#!/usr/bin/env bash
# Builds the Python environment in which the ORIGINAL google-research/bert and zihangdai/xlnet
# scripts run for the benchmarks (issue 16): python3.11 + tensorflow-cpu 2.15.1, the last
# TensorFlow that still ships tf.estimator (TPUEstimator) under tf.compat.v1.
#
#   bash bench/original_venv.sh [VENV_DIR]     # default: $BERT_TF_ORIG_VENV or /tmp/bert_tf_tf215
#
# Idempotent: a venv that already imports tensorflow 2.15.1 is left as it is. Needs PyPI
# (bench time only; no test uses it). Prints the venv's python path on the last line.
set -euo pipefail
VENV="${1:-${BERT_TF_ORIG_VENV:-/tmp/bert_tf_tf215}}"
PY="$VENV/bin/python"
if [ -x "$PY" ] && "$PY" -c 'import tensorflow as tf, sentencepiece, sys; sys.exit(tf.__version__ != "2.15.1")' 2>/dev/null; then
  echo "$PY"
  exit 0
fi
python3.11 -m venv "$VENV"
"$PY" -m pip install -q --upgrade pip
"$PY" -m pip install -q "tensorflow-cpu==2.15.1" "numpy<2"
# The original XLNet / ALBERT tokenizers (bench/official_sizes_original.py, issue 24).
"$PY" -m pip install -q "sentencepiece==0.2.0"
"$PY" -c 'import tensorflow as tf; print("tensorflow", tf.__version__, "estimator", hasattr(tf.compat.v1, "estimator"))' >&2
echo "$PY"
