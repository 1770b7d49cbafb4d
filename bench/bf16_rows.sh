#!/usr/bin/env bash
# Issue 25's bfloat16 rows in one command, for a CPU whose lscpu lists amx_bf16 (or avx512_bf16):
#   BERT_ORIGINAL_DIR=/tmp/orig_bert TORCH_PYTHON=/path/to/venv/bin/python bench/bf16_rows.sh [TAG]
# Runs, one after another (each interleaves its own peers in rotating rounds):
#   1. bench_encoder_peers.py --dtype bfloat16, MiniLM [32,128] and BERT-Base [8,128]: ours bf16
#      vs our fp32, vs HF torch under torch.autocast(bfloat16), share of the bf16 matmul limit;
#   2. bench_train_step_peers.py --sides ours,ours_bf16: the fine-tuning step bf16 vs fp32;
#   3. bench_whole_commands.py, rows predict, extract, squad, train: ours fp32 and bf16, the
#      original scripts (TF 2.15 venv, bench/original_venv.sh), HF torch fp32 (1 thread) and bf16;
#   4. where $OFFICIAL_WORK (/tmp/official) holds bench_official_sizes.py's checkpoints:
#      bench_bf16_memory.py, peak RSS of bf16 vs fp32 extract_features at BERT-/XLNet-Large.
# Then prints the rows of issue 25's table from the JSON files (bench/results/*_<TAG>.json).
# PYTHON picks bert_tf's interpreter (default .venv/bin/python). TAG defaults to the date.
# HF venv: python3 -m venv V && V/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
#          && V/bin/pip install transformers numpy
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
TAG="${1:-$(date -u +%Y_%m_%d)}"
: "${BERT_ORIGINAL_DIR:?set BERT_ORIGINAL_DIR to a checkout of google-research/bert}"
: "${TORCH_PYTHON:?set TORCH_PYTHON to a Python with torch and transformers}"
if ! grep -qw -e amx_bf16 -e avx512_bf16 /proc/cpuinfo; then
  echo "bf16_rows.sh: this CPU lists neither amx_bf16 nor avx512_bf16: bf16 is emulated here and its speed means nothing" >&2
  exit 1
fi
lscpu | grep -E "Model name|^CPU\(s\)"
grep -qw amx_bf16 /proc/cpuinfo && echo "amx_bf16: yes" || echo "amx_bf16: no (avx512_bf16 only)"
R=bench/results
export PYTHONPATH="$PWD"
"$PYTHON" bench/bench_encoder_peers.py --dtype bfloat16 --shape minilm --batch_size 32 \
  --no_keras_hub --torch_python "$TORCH_PYTHON" --rounds 5 --out "$R/encoder_peers_minilm_bfloat16_$TAG.json"
"$PYTHON" bench/bench_encoder_peers.py --dtype bfloat16 --shape base --batch_size 8 \
  --no_keras_hub --torch_python "$TORCH_PYTHON" --rounds 5 --out "$R/encoder_peers_base_bfloat16_$TAG.json"
"$PYTHON" bench/bench_train_step_peers.py --sides ours,ours_bf16 --rounds 3 \
  --out "$R/train_step_peers_minilm_bf16_$TAG.json"
"$PYTHON" bench/bench_whole_commands.py --rows predict,extract,squad,train --rounds 3 --train_rounds 2 \
  --peers ours,ours_bf16,original,hf_1thread,hf_bf16 --torch_python "$TORCH_PYTHON" \
  --out "$R/whole_commands_bf16_$TAG.json"
if [ -f "${OFFICIAL_WORK:-/tmp/official}/READY" ]; then  # bench_official_sizes.py --build_only
  "$PYTHON" bench/bench_bf16_memory.py --models bert_large,xlnet_large --rounds 2 \
    --work "${OFFICIAL_WORK:-/tmp/official}" --out "$R/bf16_memory_$TAG.json"
fi
"$PYTHON" bench/bf16_rows_table.py "$TAG"
