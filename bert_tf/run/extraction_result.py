"""What a feature-extraction run did (BERT's and XLNet's ``extract_features.py``).

A spine run piece (TensorFlow-free): the task modules :mod:`bert_tf.bert.tasks.feature_extraction`
and :mod:`bert_tf.xlnet.tasks.feature_extraction` return it from ``run(args)``, and the entry point
prints its :meth:`ExtractionResult.summary_lines`.
"""

from dataclasses import dataclass
from typing import List, Optional


@dataclass
class ExtractionResult:
    """What a feature-extraction run wrote.

    Attributes:
      output_file: the JSON-lines file of per-token features (``display_path``).
      embeddings_file: ``<output_file>.embeddings.jsonl`` (``--pooling`` not ``none``), or None.
      num_lines, num_tokens: input lines written, real tokens written.
      seconds: wall time of the writing, in seconds; tokens_per_second: its speed.
      literal_symbol_lines: (XLNet) lines holding text SentencePiece reads as a control
        symbol, or None (BERT).
      export_path: the ``--export_dir`` SavedModel folder written, or None.
    """

    output_file: str
    embeddings_file: Optional[str]
    num_lines: int
    num_tokens: int
    seconds: float
    tokens_per_second: float
    literal_symbol_lines: Optional[int] = None
    export_path: Optional[str] = None

    def summary_lines(self) -> List[str]:
        """What ``extract_features.py`` prints (bert_tf's summary): the lines, tokens and
        speed written to ``output_file``, then where the sentence embeddings went."""
        lines = [f"wrote {self.num_lines} lines ({self.num_tokens} tokens, "
                 f"{self.tokens_per_second:.0f} tokens/s) to {self.output_file}"]
        if self.embeddings_file:
            lines.append(f"wrote sentence embeddings to {self.embeddings_file}")
        return lines
