"""The translator and everything measured on it, in four roles. Data flows down this list, never up.

The network (read these beside the paper):
    transformer.py   the encoder-decoder Transformer, every weight in view, opening with equation 1
    extras.py        `Extras`: what no equation needs (head masks, the decoding cache, a capture of every
                     intermediate), one object per call
    sinusoid.py      the paper's sinusoidal positions (section 3.5), the one definition (numpy)
    minimal.py       the same model as plain functions over its weights, the paper's equations only (stands alone)
    config.py        its hyper-parameters, stored in every checkpoint

The translator API (sentences in, plain results out):
    translator.py    `Translator.load()`, translate, beam, analyze, inside, logit lens
    result.py        the plain results (Translation, Inside, ...) that viz/ draws
    decoding.py      greedy decoding with a cache, beam search
    batching.py      many sessions' sentences as one batch
    heads.py         naming attention heads (`HeadSet`) and head masks
    vocab.py, data.py, checkpoint.py, device.py, errors.py   tokens, Multi30k files, weights, where to run,
                     the two kinds of failure
    files.py         inputs read within a size limit, outputs written whole or not at all, JSON without NaN

Analyses (numbers about the model, for the page and the CLIs):
    metrics.py       loss, perplexity, BLEU and their intervals
    flow.py          source coverage and attention rollout
    contributions.py norm-based attention and ALTI+ source/prefix contributions (how much came from the source)
    head_stats.py    what each head does over a corpus
    head_importance.py   what each head is worth (BLEU drop, loss rise)
    align.py         word alignments read off the heads, scored by AER against hand-checked links
    attribute.py, value_zeroing.py   gradient and perturbation attributions (Captum), value zeroing
    faithfulness.py  which explanation is faithful: comprehensiveness, sufficiency, rank agreement, by removal
    familiarity.py, evidence.py   how far a sentence is from the training data, and where a step was learned
    replay.py        the model at every snapshot of its training (translations, maps, measures)
    export.py        results as JSON, CSV, .npz, BertViz arguments

Commands (`python -m model.NAME --help`; each shares cli.py's parser and its one-line errors):
    translate, evaluate, inspect (head, lens, importance, contributions, decoderlens, attribute,
    faithfulness, familiarity), head_stats, head_importance, source_share, align, silver (the eflomal
    baseline), faithfulness, familiarity, replay, train (--snapshots), train_lengths
    report           one translation as a self-contained HTML page (every map, layer and head switches, the trace)
"""

import sys

# `python -m model.NAME` imports this package before model/NAME.py, with sys.argv[0] set to "-m" meanwhile
# (Python's documented cue): Ctrl-C while the tool's imports load torch is then one line too (model/cli.py).
if getattr(sys, "argv", [])[:1] == ["-m"]:
    from .cli import catch_early_interrupts

    catch_early_interrupts()
