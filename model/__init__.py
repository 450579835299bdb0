"""The translator and everything measured on it.

The rule for model/, four floors, each module on one of them:
1. The network: the Transformer's weights and the paper's equations (torch, numpy), nothing about sentences.
2. The translator API: `Translator`, one pass or one decoding per call, a plain result out (result.py); it
   prints nothing and writes nothing.
3. Analyses: functions over the one forced pass (`Translator.force`, `.inputs`, `.capture`) or over plain
   results, numbers out; they raise the two errors of errors.py, never print or exit. A result is a frozen
   dataclass of numbers, strings and arrays (no model, tensor or hook: a page's cache pickles it), written to
   JSON by result.plain, the one writer.
4. Commands: `python -m model.NAME`, a `main(argv=None)` whose argument parsing and one-line errors come from
   cli.py. A module that is library and command imports cli inside its main only, so that importing the library
   (as the page does) loads no command-line code; only the pure commands, which nothing imports, import cli at
   the top (evaluate, inspect, silver, train, train_lengths, translate).
A floor uses those above it (the translator's conveniences, such as `contributions`, import their analysis
inside the method). Nothing in model/ imports viz/, views/, lesson/ or app.py, not even inside a function: the
report command lives in viz/report.py (`python -m viz.report`), the exercises and the worksheet in lesson/
(`python -m lesson.worksheet`). Every module has its line in the map below; tests/unit/test_layout.py holds the
map and the imports to this rule.

The network (read these beside the paper):
    transformer.py      the encoder-decoder Transformer, every weight in view, opening with equation 1
    extras.py           `Extras`: what no equation needs (head masks, the decoding cache, a capture of every
                        intermediate), one object per call
    sinusoid.py         the paper's sinusoidal positions (section 3.5), the one definition (numpy)
    minimal.py          the same model as plain functions over its weights, the paper's equations only (stands alone)
    config.py           its hyper-parameters, stored in every checkpoint

The translator API (sentences in, plain results out):
    translator.py       `Translator.load()`, translate, beam, analyze, inside, logit lens, the forced pass
    result.py           the plain results (Translation, Inside, Forced, ...) that viz/ draws, and `plain`, their JSON
    decoding.py         greedy decoding with a cache, beam search
    batching.py         many sessions' sentences as one batch
    heads.py            naming attention heads (`HeadSet`) and head masks
    vocab.py            tokens and the two vocabularies
    languages.py        what a model's two languages are called ("German", or "source (ko)"), from its codes
    i18n.py             the language a person reads the page in: gettext catalogues (locales/), one per run
    data.py             the Multi30k files, padding
    checkpoint.py       weights and config on disk, validated when loaded
    device.py           where to run (CUDA, MPS, CPU)
    errors.py           the two kinds of failure: a bad checkpoint, a bad input
    files.py            inputs read within a size limit, outputs written whole or not at all, JSON without NaN

Analyses (numbers about the model, for the page and the commands):
    metrics.py          loss, perplexity, BLEU and their intervals
    flow.py             source coverage and attention rollout
    contributions.py    norm-based attention and ALTI+ source/prefix contributions (how much came from the source)
    head_stats.py       what each head does over a corpus (`python -m model.head_stats`)
    head_importance.py  what each head is worth, BLEU drop and loss rise (`python -m model.head_importance`)
    source_share.py     the test set's distribution of the ALTI+ source share (`python -m model.source_share`)
    align.py            word alignments read off the heads, scored by AER against hand-checked links (command too)
    methods.py          the explanation methods in one table: key, label, signed or not, sides, heavy or not
    attribute.py        gradient and perturbation attributions (Captum) of the forced pass
    value_zeroing.py    value zeroing over one captured pass
    faithfulness.py     which explanation is faithful: comprehensiveness, sufficiency, rank agreement, by removal
                        (command too: the test set's table)
    patch.py            activation patching between two sentences and over the contrast set (command too)
    contrast.py         the contrast pairs patching runs over (`python -m model.contrast`)
    familiarity.py      how far a sentence is from the training data (`python -m model.familiarity`: its index)
    evidence.py         where in the training data a step was learned (the step index)
    replay.py           the model at every snapshot of its training (`python -m model.replay`)
    transcoders.py      the feed-forward blocks as sparse features: transcoders trained, measured and indexed (command
                        too: compare, train, index, feature), features switched off or scaled per call
    export.py           results as JSON, CSV, .npz, BertViz arguments, with their provenance

Commands (each shares cli.py's parser and its one-line errors; `python -m model.NAME --help`):
    cli.py              the one parser, the one way to fail, `run`; imported only when a command runs
    translate.py        German lines in, English lines out (--json: every map and the step trace)
    evaluate.py         BLEU, loss and perplexity on a parallel corpus
    inspect.py          one sentence as JSON: head, lens, importance, contributions, decoderlens, attribute,
                        faithfulness, familiarity, features
    silver.py           the eflomal baseline alignment
    train.py            training (--snapshots, under torchrun too)
    train_lengths.py    the training sentences' lengths (assets/train_lengths.json)
    convert.py          your own model: a tutorial's saved state_dict (Trevett's, PyTorch's nn.Transformer, the
                        Annotated Transformer) as a checkpoint folder, read without unpickling code
    tables.py           every table the page reads beside a checkpoint, built in one run, resumable (--quick: a
                        first look); the page names its command where a table is missing
"""

import sys

# `python -m model.NAME` imports this package before model/NAME.py, with sys.argv[0] set to "-m" meanwhile
# (Python's documented cue): Ctrl-C while the tool's imports load torch is then one line too (model/cli.py).
if getattr(sys, "argv", [])[:1] == ["-m"]:
    from .cli import catch_early_interrupts

    catch_early_interrupts()
