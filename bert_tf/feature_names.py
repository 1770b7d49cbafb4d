"""The model-input feature names shared by the BERT-layout models, the records and the batched
predictor (a bottom module: model files import it as well as data and training)."""

# The model-input features of this layout, each int ``[batch_size, seq_length]``: the features
# with a sequence axis (axis 1) that padding trims may cut.
SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")
