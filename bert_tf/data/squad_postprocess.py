"""SQuAD post-processing: start/end logits -> answer texts, n-best lists and null odds.

Mirrors ``write_predictions``, ``get_final_text``, ``_get_best_indexes`` and
``_compute_softmax`` of the original ``run_squad.py`` (spec ``bert.md`` 9.5). Pure Python;
outputs are byte-identical to the original's (``json.dumps(obj, indent=4) + "\\n"``) and are
written atomically.

:func:`compute_predictions` does the work in memory; :func:`write_predictions` (the original
signature, with the flags it read passed explicitly) also writes the files.
"""

import collections
import json
import math
from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from absl import logging

from bert_tf.errors import InputDataError

RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])
RawResult.__doc__ = """Model output for one feature (original ``RawResult``).

unique_id: the feature's ``unique_id``; start_logits, end_logits: [max_seq_length] floats
(lists, or float32/float64 numpy arrays: they are converted to Python floats so that sums are
computed in float64 like the original).
"""

_PrelimPrediction = collections.namedtuple(
    "PrelimPrediction", ["feature_index", "start_index", "end_index", "start_logit", "end_logit"])
_NbestPrediction = collections.namedtuple("NbestPrediction", ["text", "start_logit", "end_logit"])

SquadPredictions = collections.namedtuple(
    "SquadPredictions", ["predictions", "nbest", "null_odds"])
SquadPredictions.__doc__ = """What :func:`compute_predictions` returns: three OrderedDicts keyed by
qas id in example order: ``predictions`` (answer text), ``nbest`` (list of OrderedDicts
``text, probability, start_logit, end_logit``), ``null_odds`` (v2 score differences; empty in v1).
"""


def _get_best_indexes(logits: Sequence[float], n_best_size: int) -> List[int]:
    """The ``n_best_size`` positions with the largest logits, best first; ties: lower index first.

    All positions are ranked (padding and question positions included), as in the original.
    """
    index_and_score = sorted(enumerate(logits), key=lambda x: x[1], reverse=True)
    return [index for index, _ in index_and_score[:n_best_size]]


def compute_softmax(scores: Sequence[float]) -> List[float]:
    """Softmax in float64: subtract the max, ``math.exp``, normalise; [] for no scores."""
    if not scores:
        return []
    max_score = None
    for score in scores:
        if max_score is None or score > max_score:
            max_score = score
    exp_scores = []
    total_sum = 0.0
    for score in scores:
        x = math.exp(score - max_score)
        exp_scores.append(x)
        total_sum += x
    return [score / total_sum for score in exp_scores]


_compute_softmax = compute_softmax  # the original's name


def _strip_spaces(text: str) -> Tuple[str, Dict[int, int]]:
    """``text`` without ASCII spaces, and a map from stripped index to index in ``text``."""
    ns_chars = []
    ns_to_s_map = collections.OrderedDict()
    for i, c in enumerate(text):
        if c == " ":
            continue
        ns_to_s_map[len(ns_chars)] = i
        ns_chars.append(c)
    return "".join(ns_chars), ns_to_s_map


def get_final_text(pred_text: str, orig_text: str, do_lower_case: bool,
                   verbose_logging: bool = False) -> str:
    """Projects a tokenized prediction back onto the original text (original ``get_final_text``).

    ``pred_text`` is normalised (lower-cased, punctuation split, "##" removed) while
    ``orig_text`` is the space-joined original words the prediction spans: e.g. pred "steve
    smith", orig "Steve Smith's" -> "Steve Smith". Runs ``BasicTokenizer(do_lower_case)`` on
    ``orig_text``, finds ``pred_text`` in it, and maps its first and last character back through
    space-free alignments. Returns ``orig_text`` unchanged whenever the alignment fails (pred not
    found, lengths differ without spaces, unmappable character); ``verbose_logging`` logs why.
    """
    from bert_tf.tokenization.wordpiece import BasicTokenizer

    tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
    tok_text = " ".join(tokenizer.tokenize(orig_text))

    start_position = tok_text.find(pred_text)
    if start_position == -1:
        if verbose_logging:
            logging.info("Unable to find text: '%s' in '%s'", pred_text, orig_text)
        return orig_text
    end_position = start_position + len(pred_text) - 1

    orig_ns_text, orig_ns_to_s_map = _strip_spaces(orig_text)
    tok_ns_text, tok_ns_to_s_map = _strip_spaces(tok_text)
    if len(orig_ns_text) != len(tok_ns_text):
        if verbose_logging:
            logging.info("Length not equal after stripping spaces: '%s' vs '%s'",
                         orig_ns_text, tok_ns_text)
        return orig_text

    # The tokenized text and the original have the same characters apart from spaces, so the
    # space-free index maps one onto the other.
    tok_s_to_ns_map = {tok_index: i for i, tok_index in tok_ns_to_s_map.items()}

    orig_start_position = None
    if start_position in tok_s_to_ns_map:
        ns_start_position = tok_s_to_ns_map[start_position]
        if ns_start_position in orig_ns_to_s_map:
            orig_start_position = orig_ns_to_s_map[ns_start_position]
    if orig_start_position is None:
        if verbose_logging:
            logging.info("Couldn't map start position")
        return orig_text

    orig_end_position = None
    if end_position in tok_s_to_ns_map:
        ns_end_position = tok_s_to_ns_map[end_position]
        if ns_end_position in orig_ns_to_s_map:
            orig_end_position = orig_ns_to_s_map[ns_end_position]
    if orig_end_position is None:
        if verbose_logging:
            logging.info("Couldn't map end position")
        return orig_text

    return orig_text[orig_start_position:(orig_end_position + 1)]


def _as_floats(logits) -> List[float]:
    """Python floats (float64) from a list or numpy array of logits."""
    if hasattr(logits, "tolist"):
        return [float(x) for x in logits.tolist()]
    return [float(x) for x in logits]


class _NullScore(NamedTuple):
    """v2: the null answer of an example, from the window with the lowest
    ``start_logits[0] + end_logits[0]`` (``score``; 1000000 and zeros while none is seen)."""
    score: float
    feature_index: int
    start_logit: float
    end_logit: float


def _feature_spans(feature_index: int, feature, result: RawResult, n_best_size: int,
                   max_answer_length: int) -> List[_PrelimPrediction]:
    """The candidate spans of one window: the top ``n_best_size`` start and end logits, paired
    where the span is inside the document part, max-context at its start, ``start <= end`` and
    at most ``max_answer_length`` pieces long (original ``write_predictions``, spec 9.5)."""
    start_indexes = _get_best_indexes(result.start_logits, n_best_size)
    end_indexes = _get_best_indexes(result.end_logits, n_best_size)
    prelim_predictions = []
    num_tokens = len(feature.tokens)
    for start_index in start_indexes:
        for end_index in end_indexes:
            # Drop spans in the question, in padding, or not max-context at the start.
            if start_index >= num_tokens or end_index >= num_tokens:
                continue
            if start_index not in feature.token_to_orig_map:
                continue
            if end_index not in feature.token_to_orig_map:
                continue
            if not feature.token_is_max_context.get(start_index, False):
                continue
            if end_index < start_index:
                continue
            if end_index - start_index + 1 > max_answer_length:
                continue
            prelim_predictions.append(_PrelimPrediction(
                feature_index=feature_index, start_index=start_index,
                end_index=end_index, start_logit=result.start_logits[start_index],
                end_logit=result.end_logits[end_index]))
    return prelim_predictions


def _prelim_predictions(example, features: Sequence, unique_id_to_result: Mapping,
                        n_best_size: int, max_answer_length: int,
                        version_2_with_negative: bool
                        ) -> Tuple[List[_PrelimPrediction], _NullScore]:
    """The candidate spans of one example over its windows (:func:`_feature_spans`), with the
    v2 null answer added, sorted by summed logit (highest first); and the :class:`_NullScore`.

    Raises:
      InputDataError: a window has no result.
    """
    prelim_predictions = []
    # v2: the null score of the example is the minimum over its windows.
    score_null = 1000000
    min_null_feature_index = 0
    null_start_logit = 0
    null_end_logit = 0
    for feature_index, feature in enumerate(features):
        if feature.unique_id not in unique_id_to_result:
            raise InputDataError(f"no model result for feature unique_id {feature.unique_id} "
                                 f"(question {example.qas_id})")
        result = unique_id_to_result[feature.unique_id]
        if version_2_with_negative:
            feature_null_score = result.start_logits[0] + result.end_logits[0]
            if feature_null_score < score_null:
                score_null = feature_null_score
                min_null_feature_index = feature_index
                null_start_logit = result.start_logits[0]
                null_end_logit = result.end_logits[0]
        prelim_predictions.extend(_feature_spans(feature_index, feature, result, n_best_size,
                                                 max_answer_length))

    if version_2_with_negative:
        prelim_predictions.append(_PrelimPrediction(
            feature_index=min_null_feature_index, start_index=0, end_index=0,
            start_logit=null_start_logit, end_logit=null_end_logit))
    prelim_predictions = sorted(prelim_predictions,
                                key=lambda x: (x.start_logit + x.end_logit), reverse=True)
    return prelim_predictions, _NullScore(score_null, min_null_feature_index, null_start_logit,
                                          null_end_logit)


def _span_text(example, feature, pred: _PrelimPrediction, do_lower_case: bool,
               verbose_logging: bool) -> str:
    """The answer text of a non-null span: its pieces de-tokenized and mapped back onto the
    original words by :func:`get_final_text`."""
    tok_tokens = feature.tokens[pred.start_index:(pred.end_index + 1)]
    orig_doc_start = feature.token_to_orig_map[pred.start_index]
    orig_doc_end = feature.token_to_orig_map[pred.end_index]
    orig_tokens = example.doc_tokens[orig_doc_start:(orig_doc_end + 1)]
    tok_text = " ".join(tok_tokens)
    # De-tokenize WordPieces.
    tok_text = tok_text.replace(" ##", "")
    tok_text = tok_text.replace("##", "")
    tok_text = " ".join(tok_text.strip().split())
    orig_text = " ".join(orig_tokens)
    return get_final_text(tok_text, orig_text, do_lower_case, verbose_logging)


def _nbest_predictions(example, features: Sequence,
                       prelim_predictions: Sequence[_PrelimPrediction], null: _NullScore,
                       n_best_size: int, do_lower_case: bool, verbose_logging: bool,
                       version_2_with_negative: bool) -> List[_NbestPrediction]:
    """The n-best list of one example: the sorted candidates with distinct texts, at most
    ``n_best_size`` of them; v2 always adds the null answer (so it can be one longer); an empty
    list gets ``"empty"`` (0.0, 0.0)."""
    seen_predictions = {}
    nbest = []
    for pred in prelim_predictions:
        if len(nbest) >= n_best_size:
            break
        feature = features[pred.feature_index]
        if pred.start_index > 0:  # a non-null prediction
            final_text = _span_text(example, feature, pred, do_lower_case, verbose_logging)
            if final_text in seen_predictions:
                continue
            seen_predictions[final_text] = True
        else:
            final_text = ""
            seen_predictions[final_text] = True
        nbest.append(_NbestPrediction(text=final_text, start_logit=pred.start_logit,
                                      end_logit=pred.end_logit))

    # v2: the null answer is always in the list (it can make it n_best_size + 1 long).
    if version_2_with_negative and "" not in seen_predictions:
        nbest.append(_NbestPrediction(text="", start_logit=null.start_logit,
                                      end_logit=null.end_logit))
    # Rare: no valid span at all; a nonce entry avoids failing.
    if not nbest:
        nbest.append(_NbestPrediction(text="empty", start_logit=0.0, end_logit=0.0))
    return nbest


def _nbest_json(nbest: Sequence[_NbestPrediction]
                ) -> Tuple[List[collections.OrderedDict], Optional[_NbestPrediction]]:
    """The n-best list as OrderedDicts ``text, probability, start_logit, end_logit``
    (probability: the softmax of the summed logits), and its best non-null entry (or None)."""
    total_scores = []
    best_non_null_entry = None
    for entry in nbest:
        total_scores.append(entry.start_logit + entry.end_logit)
        if best_non_null_entry is None and entry.text:
            best_non_null_entry = entry
    probs = compute_softmax(total_scores)

    nbest_json = []
    for i, entry in enumerate(nbest):
        output = collections.OrderedDict()
        output["text"] = entry.text
        output["probability"] = probs[i]
        output["start_logit"] = entry.start_logit
        output["end_logit"] = entry.end_logit
        nbest_json.append(output)
    return nbest_json, best_non_null_entry


def compute_predictions(all_examples: Sequence, all_features: Sequence,
                        all_results: Sequence[RawResult], n_best_size: int,
                        max_answer_length: int, do_lower_case: bool,
                        version_2_with_negative: bool = False,
                        null_score_diff_threshold: float = 0.0,
                        verbose_logging: bool = False) -> SquadPredictions:
    """Final answers, n-best lists and null odds from logits (original ``write_predictions``).

    Args:
      all_examples: :class:`~bert_tf.data.squad.SquadExample` s (``qas_id``, ``doc_tokens``).
      all_features: :class:`~bert_tf.data.squad.InputFeatures` (``unique_id``,
        ``example_index``, ``tokens``, ``token_to_orig_map``, ``token_is_max_context`` with int
        keys), from converting ``all_examples``.
      all_results: one :class:`RawResult` per feature (any order).
      n_best_size: candidates per start/end and size of the n-best list (v2: + the null entry).
      max_answer_length: longest answer, in pieces.
      do_lower_case: for :func:`get_final_text`.
      version_2_with_negative: add the null answer and compute ``null_odds``.
      null_score_diff_threshold: v2: predict "" when null score - best non-null > this.
      verbose_logging: log :func:`get_final_text` failures.

    Per example (over its features in order): candidate starts/ends = the top ``n_best_size``
    logits of each feature; valid pairs are inside the document part, start max-context,
    ``start <= end`` and at most ``max_answer_length`` long; v2 null score = the minimum over
    features of ``start_logits[0] + end_logits[0]``; candidates sorted by summed logit; the
    n-best list keeps distinct texts; an empty list gets ``"empty"`` (0.0, 0.0);
    probabilities are the softmax of the summed logits.

    bert_tf addition: in v2, if no non-null candidate exists (the original crashed), the
    prediction is "" and the null odds are the null score itself (non-null logits taken as 0).

    Raises:
      InputDataError: a feature has no result.
    """
    example_index_to_features = collections.defaultdict(list)
    for feature in all_features:
        example_index_to_features[feature.example_index].append(feature)

    unique_id_to_result = {}
    for result in all_results:
        unique_id_to_result[result.unique_id] = RawResult(
            result.unique_id, _as_floats(result.start_logits), _as_floats(result.end_logits))

    all_predictions = collections.OrderedDict()
    all_nbest_json = collections.OrderedDict()
    scores_diff_json = collections.OrderedDict()

    for example_index, example in enumerate(all_examples):
        features = example_index_to_features[example_index]
        prelim_predictions, null = _prelim_predictions(
            example, features, unique_id_to_result, n_best_size, max_answer_length,
            version_2_with_negative)
        nbest = _nbest_predictions(example, features, prelim_predictions, null, n_best_size,
                                   do_lower_case, verbose_logging, version_2_with_negative)
        nbest_json, best_non_null_entry = _nbest_json(nbest)

        if not version_2_with_negative:
            all_predictions[example.qas_id] = nbest_json[0]["text"]
        else:
            if best_non_null_entry is None:
                score_diff = null.score
                best_text = ""
            else:
                score_diff = (null.score - best_non_null_entry.start_logit
                              - best_non_null_entry.end_logit)
                best_text = best_non_null_entry.text
            scores_diff_json[example.qas_id] = score_diff
            all_predictions[example.qas_id] = "" if score_diff > null_score_diff_threshold else best_text
        all_nbest_json[example.qas_id] = nbest_json

    return SquadPredictions(all_predictions, all_nbest_json, scores_diff_json)


def to_json_text(obj) -> str:
    """``json.dumps(obj, indent=4) + "\\n"``: the original output format (ASCII-escaped)."""
    return json.dumps(obj, indent=4) + "\n"


def write_predictions(all_examples: Sequence, all_features: Sequence,
                      all_results: Sequence[RawResult], n_best_size: int, max_answer_length: int,
                      do_lower_case: bool, output_prediction_file: str, output_nbest_file: str,
                      output_null_log_odds_file: Optional[str],
                      version_2_with_negative: bool = False,
                      null_score_diff_threshold: float = 0.0,
                      verbose_logging: bool = False) -> SquadPredictions:
    """Computes predictions (:func:`compute_predictions`) and writes the original's JSON files.

    Writes, each atomically, as ``json.dumps(obj, indent=4) + "\\n"``:
    ``output_prediction_file`` (qas id -> text), ``output_nbest_file`` (qas id -> list of
    ``{text, probability, start_logit, end_logit}``) and, in v2, ``output_null_log_odds_file``
    (qas id -> null score minus best non-null score).

    Returns:
      The :class:`SquadPredictions` written.

    Raises:
      InputDataError: a feature has no result.
    """
    from bert_tf.atomic_files import atomic_write_texts

    preds = compute_predictions(all_examples, all_features, all_results, n_best_size,
                                max_answer_length, do_lower_case, version_2_with_negative,
                                null_score_diff_threshold, verbose_logging)
    logging.info("Writing predictions to: %s", output_prediction_file)
    logging.info("Writing nbest to: %s", output_nbest_file)
    outputs = [(output_prediction_file, to_json_text(preds.predictions)),
               (output_nbest_file, to_json_text(preds.nbest))]
    if version_2_with_negative and output_null_log_odds_file:
        outputs.append((output_null_log_odds_file, to_json_text(preds.null_odds)))
    atomic_write_texts(outputs)  # together or none (a full disk leaves the earlier ones)
    return preds
