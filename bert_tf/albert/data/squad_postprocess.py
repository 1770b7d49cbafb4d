"""ALBERT SQuAD post-processing: head outputs -> answers, n-best lists, null odds, metrics.

Mirrors the original google-research/albert ``squad_utils.py`` (b772393):

* v1 (``accumulate_predictions_v1`` + ``write_predictions_v1``): the ``n_best_size`` best
  start and end positions of the window's logits (named ``start_log_prob`` /
  ``end_log_prob`` there, though raw logits); a pair is kept when the start is a paragraph
  piece with max context, the end a paragraph piece not before it, length <=
  ``max_answer_length``; ranked by the sum, the text is ``paragraph_text[first char of the
  start piece : last char of the end piece + 1].strip()``, deduplicated; no answer at all:
  ``"empty"`` with 0.0 scores.
* v2 (``accumulate_predictions_v2`` + ``write_predictions_v2``): XLNet's beam (start_n_top x
  end_n_top log-probs), the same filters (and start inside the paragraph); the null score is
  the window minimum of ``cls_logits``; no answer: ``""`` with -1e6 scores. The prediction is
  the best entry's text, or ``""`` when a threshold is given and the null score is >= it.
* :func:`evaluate_v2` is the original's: predictions without threshold, the official
  threshold search on the null scores, then predictions again with the best F1 threshold;
  its ``exact``, ``f1``, ``total`` (with the official ``na_prob_thresh`` 1.0 applied to the
  null scores) and ``null_score_diff_threshold``.

Files are ``json.dumps(obj, indent=4) + "\\n"``, written atomically.
"""

import collections
from dataclasses import dataclass
from typing import List, Mapping, Optional, Sequence, Tuple

from bert_tf.data import squad_metrics
from bert_tf.data.squad_postprocess import SquadPredictions, compute_softmax, to_json_text
from bert_tf.xlnet.data.squad_postprocess import XLNetRawResult as RawResultV2
from bert_tf.errors import InputDataError

__all__ = ["RawResultV1", "RawResultV2", "compute_predictions_v1", "compute_predictions_v2",
           "evaluate_v2", "write_predictions"]


@dataclass
class RawResultV1:
    """One window's v1 head outputs (original ``RawResult``): ``start_log_prob``,
    ``end_log_prob`` float ``[max_seq_length]`` (the raw start / end logits)."""

    unique_id: int
    start_log_prob: Sequence[float]
    end_log_prob: Sequence[float]


def best_indexes(scores: Sequence[float], n_best_size: int) -> List[int]:
    """The ``n_best_size`` positions of the largest scores, best first, ties lower index first
    (original ``_get_best_indexes``; every position ranked, query and padding included)."""
    ranked = sorted(enumerate(scores), key=lambda x: x[1], reverse=True)
    return [index for index, _ in ranked[:n_best_size]]


def _by_example(features, results):
    per_example = collections.defaultdict(list)
    for feature in features:
        per_example[feature.example_index].append(feature)
    by_id = {r.unique_id: r for r in results}
    missing = [f.unique_id for f in features if f.unique_id not in by_id]
    if missing:
        raise InputDataError(f"{len(missing)} feature(s) have no model output, e.g. unique_id "
                             f"{missing[0]}")
    return per_example, by_id


def _keep(feature, start_index: int, end_index: int, max_answer_length: int) -> bool:
    """The original's filters of a (start, end) window position pair."""
    offset = feature.doc_offset
    n = len(feature.tok_start_to_orig_index)
    if start_index - offset >= n or end_index - offset >= n:
        return False
    if not feature.token_is_max_context.get(start_index, False):
        return False
    return start_index <= end_index and end_index - start_index + 1 <= max_answer_length


def _nbest(example, features, prelim, n_best_size: int, empty_text: str, empty_score: float):
    """Ranked, deduplicated n-best entries (OrderedDicts ``text, probability,
    start_log_prob, end_log_prob``)."""
    prelim = sorted(prelim, key=lambda p: p[3] + p[4], reverse=True)
    seen, nbest = set(), []
    for feature_index, start_idx, end_idx, start_score, end_score in prelim:
        if len(nbest) >= n_best_size:
            break
        feature = features[feature_index]
        start_char = feature.tok_start_to_orig_index[start_idx]
        end_char = feature.tok_end_to_orig_index[end_idx]
        text = example.paragraph_text[start_char:end_char + 1].strip()
        if text in seen:
            continue
        seen.add(text)
        nbest.append((text, start_score, end_score))
    if not nbest:
        nbest.append((empty_text, empty_score, empty_score))
    probs = compute_softmax([s + e for _, s, e in nbest])
    out = []
    for (text, s, e), p in zip(nbest, probs):
        entry = collections.OrderedDict()
        entry["text"], entry["probability"] = text, p
        entry["start_log_prob"], entry["end_log_prob"] = s, e
        out.append(entry)
    return out


def compute_predictions_v1(examples: Sequence, features: Sequence,
                           results: Sequence[RawResultV1], n_best_size: int,
                           max_answer_length: int) -> SquadPredictions:
    """v1 predictions and n-best lists (module docstring); ``null_odds`` empty.

    Args:
      examples: :class:`bert_tf.albert.data.squad.SquadExample` in order; features: their
        :class:`~bert_tf.albert.data.squad.AlbertSquadFeatures` (``example_index`` set);
        results: one per feature, any order.

    Raises:
      InputDataError: a feature has no result.
    """
    per_example, by_id = _by_example(features, results)
    predictions, nbest_json = collections.OrderedDict(), collections.OrderedDict()
    for example_index, example in enumerate(examples):
        feats = per_example[example_index]
        prelim = []
        for feature_index, feature in enumerate(feats):
            result = by_id[feature.unique_id]
            starts = [float(x) for x in result.start_log_prob]
            ends = [float(x) for x in result.end_log_prob]
            for s in best_indexes(starts, n_best_size):
                for e in best_indexes(ends, n_best_size):
                    if _keep(feature, s, e, max_answer_length):
                        prelim.append((feature_index, s - feature.doc_offset,
                                       e - feature.doc_offset, starts[s], ends[e]))
        nbest = _nbest(example, feats, prelim, n_best_size, "empty", 0.0)
        predictions[example.qas_id] = nbest[0]["text"]
        nbest_json[example.qas_id] = nbest
    return SquadPredictions(predictions, nbest_json, collections.OrderedDict())


def compute_predictions_v2(examples: Sequence, features: Sequence,
                           results: Sequence[RawResultV2], n_best_size: int,
                           max_answer_length: int, start_n_top: int, end_n_top: int,
                           null_score_diff_threshold: Optional[float] = None
                           ) -> SquadPredictions:
    """v2 predictions, n-best lists and null scores (module docstring).

    Args:
      null_score_diff_threshold: None: always the best span's text (the original's first
        pass); else ``""`` where the null score (min ``cls_logits``) is >= it.

    Raises:
      InputDataError: a feature has no result.
    """
    per_example, by_id = _by_example(features, results)
    predictions, nbest_json = collections.OrderedDict(), collections.OrderedDict()
    null_odds = collections.OrderedDict()
    for example_index, example in enumerate(examples):
        feats = per_example[example_index]
        prelim, score_null = [], 1000000
        for feature_index, feature in enumerate(feats):
            result = by_id[feature.unique_id]
            score_null = min(score_null, float(result.cls_logits))
            for i in range(start_n_top):
                start_index = int(result.start_top_index[i])
                for j in range(end_n_top):
                    k = i * end_n_top + j
                    end_index = int(result.end_top_index[k])
                    if start_index < feature.doc_offset:
                        continue
                    if _keep(feature, start_index, end_index, max_answer_length):
                        prelim.append((feature_index, start_index - feature.doc_offset,
                                       end_index - feature.doc_offset,
                                       float(result.start_top_log_probs[i]),
                                       float(result.end_top_log_probs[k])))
        nbest = _nbest(example, feats, prelim, n_best_size, "", -1e6)
        null_odds[example.qas_id] = score_null
        if null_score_diff_threshold is None or score_null < null_score_diff_threshold:
            predictions[example.qas_id] = nbest[0]["text"]
        else:
            predictions[example.qas_id] = ""
        nbest_json[example.qas_id] = nbest
    return SquadPredictions(predictions, nbest_json, null_odds)


def evaluate_v2(dataset: Sequence[Mapping], examples: Sequence, features: Sequence,
                results: Sequence[RawResultV2], n_best_size: int, max_answer_length: int,
                start_n_top: int, end_n_top: int
                ) -> Tuple["collections.OrderedDict", SquadPredictions]:
    """The original ALBERT ``evaluate_v2`` (module docstring).

    Args:
      dataset: the ``data`` list of the predict file (with its answers).

    Returns:
      ``(metrics, predictions)``: metrics ``exact``, ``f1`` (percent), ``total``,
      ``null_score_diff_threshold`` (the best-F1 threshold of the first pass); predictions the
      second pass's (the ones the original writes last).
    """
    na_prob_thresh = 1.0  # the official script's default, as the original
    first = compute_predictions_v2(examples, features, results, n_best_size,
                                   max_answer_length, start_n_top, end_n_top, None)
    qid_to_has_ans = squad_metrics.make_qid_to_has_ans(dataset)
    exact_raw, f1_raw = squad_metrics.get_raw_scores(dataset, first.predictions)
    _, f1_thresh, _ = squad_metrics.find_best_thresh_v2(first.predictions, f1_raw,
                                                        first.null_odds, qid_to_has_ans)
    final = compute_predictions_v2(examples, features, results, n_best_size,
                                   max_answer_length, start_n_top, end_n_top, f1_thresh)
    exact_raw, f1_raw = squad_metrics.get_raw_scores(dataset, final.predictions)
    out = squad_metrics.make_eval_dict(
        squad_metrics.apply_no_ans_threshold(exact_raw, final.null_odds, qid_to_has_ans,
                                             na_prob_thresh),
        squad_metrics.apply_no_ans_threshold(f1_raw, final.null_odds, qid_to_has_ans,
                                             na_prob_thresh))
    out["null_score_diff_threshold"] = float(f1_thresh)
    return out, final


def write_predictions(preds: SquadPredictions, prediction_file: str, nbest_file: str,
                      null_odds_file: Optional[str] = None) -> None:
    """Writes ``predictions.json``, ``nbest_predictions.json`` and (v2) ``null_odds.json``,
    atomically and together (a full disk leaves all three as they were), as the original
    (``json.dumps(indent=4) + "\\n"``)."""
    from bert_tf.atomic_files import atomic_write_texts

    outputs = [(prediction_file, to_json_text(preds.predictions)),
               (nbest_file, to_json_text(preds.nbest))]
    if null_odds_file:
        outputs.append((null_odds_file, to_json_text(preds.null_odds)))
    atomic_write_texts(outputs)
