"""`AlbertConfig`: the `albert_config.json` of the original ALBERT release.

Mirrors `modeling.AlbertConfig` of google-research/albert: the constructor defaults are the
original's (those of `albert_xxlarge`: E 128, H 4096, 64 heads, I 16384, dropout 0,
`type_vocab_size` 2), `from_dict` keeps every key including unknown ones, `to_json_string`
writes 2-space indented, key-sorted JSON with a trailing newline (golden
`albert/model/albert_config.json` is such a file).

`down_scale_factor` is kept and written back but, as in the original `modeling.py`, no model
code reads it.
"""

from bert_tf.bert.config import BertConfig


class AlbertConfig(BertConfig):
    """Configuration of an `AlbertModel` (keys of `albert_config.json`).

    Args:
      vocab_size: V, rows of the word-embedding table.
      embedding_size: E, width of the embeddings (factorised: E < H, projected to H by
        `embedding_hidden_mapping_in`; no projection when E == H).
      hidden_size: H, width of the encoder and the pooler.
      num_hidden_layers: L, layers run by the encoder.
      num_hidden_groups: G, parameter groups; layer l uses group
        ``int(l / L * G)`` (1 = every layer shares one group).
      num_attention_heads: N; H must be a multiple of N.
      intermediate_size: I, width of the feed-forward inner layer.
      inner_group_num: K, attention+FFN blocks run one after another inside each layer.
      down_scale_factor: kept for the file format; unused by the model (as the original).
      hidden_act: activation of the FFN and the MLM transform ("gelu" = tanh approximation,
        "relu", "tanh", "linear").
      hidden_dropout_prob: dropout on embeddings and residual branches (training only).
      attention_probs_dropout_prob: dropout on attention probabilities (training only).
      max_position_embeddings: P, rows of the position table = the largest seq_length.
      type_vocab_size: T, rows of the segment table.
      initializer_range: stddev of the truncated-normal initializer.
      **extra: unknown keys, kept and written back (the original keeps them too).

    Reading (``from_dict``, ``from_json_file``: :class:`ConfigError` naming the file and the
    key), validation and the JSON writers are :class:`bert_tf.bert.config.BertConfig`'s.
    """

    POSITIVE_INT_KEYS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                         "num_hidden_groups", "inner_group_num", "num_attention_heads",
                         "intermediate_size", "max_position_embeddings", "type_vocab_size")
    FILE_KIND = "ALBERT config"
    # The sizes every released albert_config.json holds (the constructor's defaults are
    # xxlarge's: a file without hidden_size built a 4096-wide model); embedding_size tells an
    # ALBERT config from a BERT one given as --albert_config_file.
    REQUIRED_KEYS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                     "num_attention_heads", "intermediate_size", "max_position_embeddings")
    # Keys of the released files that the original modeling.py never reads.
    RELEASED_EXTRA_KEYS = BertConfig.RELEASED_EXTRA_KEYS + (
        "net_structure_type", "gap_size", "num_memory_blocks", "layers_to_keep")

    def __init__(self, vocab_size=None, embedding_size=128, hidden_size=4096,
                 num_hidden_layers=12, num_hidden_groups=1, num_attention_heads=64,
                 intermediate_size=16384, inner_group_num=1, down_scale_factor=1,
                 hidden_act="gelu", hidden_dropout_prob=0, attention_probs_dropout_prob=0,
                 max_position_embeddings=512, type_vocab_size=2, initializer_range=0.02,
                 **extra):
        super().__init__(
            vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
            num_attention_heads=num_attention_heads, intermediate_size=intermediate_size,
            hidden_act=hidden_act, hidden_dropout_prob=hidden_dropout_prob,
            attention_probs_dropout_prob=attention_probs_dropout_prob,
            max_position_embeddings=max_position_embeddings, type_vocab_size=type_vocab_size,
            initializer_range=initializer_range, embedding_size=embedding_size,
            num_hidden_groups=num_hidden_groups, inner_group_num=inner_group_num,
            down_scale_factor=down_scale_factor, **extra)

    def group_of_layer(self, layer_idx: int) -> int:
        """The parameter group of layer ``layer_idx``: ``int(layer_idx / L * G)``.

        Source: `transformer_model` of the original `modeling.py` (golden README surprise 6).
        E.g. L 12, G 2: layers 0-5 -> group 0, 6-11 -> group 1; L 3, G 2: 0, 0, 1.
        """
        return int(layer_idx / self.num_hidden_layers * self.num_hidden_groups)

    @property
    def used_groups(self):
        """Sorted group ids that some layer uses (all of ``range(G)`` when G <= L); the
        original creates variables only for these."""
        return sorted({self.group_of_layer(i) for i in range(self.num_hidden_layers)})
