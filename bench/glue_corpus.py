"""A pre-training corpus from the GLUE TSV files of ``../shared/data`` (MRPC, STS-B), for the
real-run benchmarks (``albert_real_run.py``, ``xlnet_pretraining_real_run.py``).

``write_corpus`` writes one sentence a line and an empty line after every ``per_document``
sentences (a document boundary for create_pretraining_data / data_utils.py).
"""

import csv


def sentences(path, columns):
    """The non-empty, stripped cells of ``columns`` (header names) of a TSV file, row by
    row."""
    with open(path, encoding="utf-8-sig") as f:
        rows = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(rows)
        index = [header.index(c) for c in columns]
        for row in rows:
            for i in index:
                if i < len(row) and row[i].strip():
                    yield row[i].strip()


def write_corpus(path, parts, per_document=8):
    """Writes the sentences of ``parts`` (``[(tsv path, columns)]``) to ``path``; returns how
    many."""
    lines = [s for p in parts for s in sentences(*p)]
    with open(path, "w", encoding="utf-8") as f:
        for i, line in enumerate(lines):
            f.write(line + "\n")
            if (i + 1) % per_document == 0:
                f.write("\n")
    return len(lines)
