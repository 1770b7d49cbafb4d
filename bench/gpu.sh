#!/usr/bin/env bash
# One command for a GPU machine: bert_tf's GPU throughput (bench/bench_gpu.py).
#   bench/gpu.sh [--quick]        (PYTHON=... to pick the interpreter; needs TF with CUDA)
# BERT-Base inference seq 128, batch 8-256, fp32 / bf16, with and without XLA;
# BERT-Large SQuAD fine-tuning step, seq 384, bf16 + XLA. Writes bench/results/gpu.json.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
nvidia-smi || echo "nvidia-smi not found"
"$PYTHON" -c "import tensorflow as tf; print('TF', tf.__version__, tf.config.list_physical_devices('GPU'))"
PYTHONPATH="$PWD" "$PYTHON" bench/bench_gpu.py "$@"
