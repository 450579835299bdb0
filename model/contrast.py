"""Contrast pairs from Multi30k for activation patching (model/patch.py): two sentences that differ in one word.

    python -m model.contrast --data-dir ../shared/data/multi30k --out assets/contrast/pairs.jsonl

A German phrase in a category (a noun with its article: "ein Mann" / "eine Frau"; a colour with its ending:
"roten" / "blauen"; a number; a verb) is swapped for its partner, symmetrically (either may be the one found). A
pair is kept when both sentences have the same number of tokens and, for every checkpoint given, the two greedy
translations first differ at one step where each writes its own word: the clean sentence an English word of its
phrase ("man"), the corrupted sentence one of its partner's ("woman"). Lines of the pairs file (JSON):
category, clean, corrupt, positions (source token positions that differ, <sos> = 0), de ([clean word, corrupt
word]) and models ({checkpoint name: {"step": t from 0, "clean": word, "corrupt": word}}).
Sentences come from test2016, then val, then train, until each category has --per-category pairs.
"""

import difflib
import re
import time
from pathlib import Path

from . import files
from .errors import InputError

# (category, German phrase A, German phrase B, English words of A, English words of B). Articles go with their
# noun so the swapped sentence stays grammatical; the phrases of a pair have the same number of tokens.
SWAPS = [
    ("gender", "ein Mann", "eine Frau", {"man"}, {"woman", "lady"}),
    ("gender", "Ein Mann", "Eine Frau", {"man"}, {"woman", "lady"}),
    ("gender", "der Mann", "die Frau", {"man"}, {"woman", "lady"}),
    ("gender", "einem Mann", "einer Frau", {"man"}, {"woman", "lady"}),
    ("gender", "Männer", "Frauen", {"men"}, {"women", "ladies"}),
    ("gender", "ein Junge", "ein Mädchen", {"boy"}, {"girl"}),
    ("gender", "Ein Junge", "Ein Mädchen", {"boy"}, {"girl"}),
    ("gender", "Jungen", "Mädchen", {"boys", "boy"}, {"girls", "girl"}),
    ("animal", "ein Hund", "eine Katze", {"dog"}, {"cat"}),
    ("animal", "Ein Hund", "Eine Katze", {"dog"}, {"cat"}),
    ("animal", "Hunde", "Katzen", {"dogs"}, {"cats"}),
    ("animal", "ein Hund", "ein Pferd", {"dog"}, {"horse"}),
    ("animal", "Ein Hund", "Ein Pferd", {"dog"}, {"horse"}),
    ("animal", "Hunde", "Pferde", {"dogs"}, {"horses"}),
    ("number", "Zwei", "Drei", {"two"}, {"three"}),
    ("number", "zwei", "drei", {"two"}, {"three"}),
    ("number", "Drei", "Vier", {"three"}, {"four"}),
    ("number", "drei", "vier", {"three"}, {"four"}),
    ("number", "Zwei", "Vier", {"two"}, {"four"}),
    ("number", "zwei", "vier", {"two"}, {"four"}),
    ("verb", "sitzt", "steht", {"sitting", "sits", "seated"}, {"standing", "stands"}),
    ("verb", "sitzen", "stehen", {"sitting", "sit", "seated"}, {"standing", "stand"}),
    ("verb", "lächelt", "lacht", {"smiling", "smiles"}, {"laughing", "laughs"}),
    ("verb", "läuft", "springt", {"running", "runs", "walking", "walks"}, {"jumping", "jumps"}),
]
COLOURS = {"rot": "red", "blau": "blue", "grün": "green", "gelb": "yellow", "schwarz": "black", "weiß": "white"}
for _a, _b in (("rot", "blau"), ("schwarz", "weiß"), ("grün", "gelb"), ("rot", "grün"), ("blau", "gelb")):
    for _ending in ("e", "en", "er", "es"):
        SWAPS.append(("colour", _a + _ending, _b + _ending, {COLOURS[_a]}, {COLOURS[_b]}))
CATEGORIES = ("gender", "animal", "colour", "number", "verb")
SPLITS = ("test", "val", "train")


def swapped(sentence: str) -> list[tuple]:
    """Every (category, corrupted sentence, clean phrase, corrupt phrase, clean words, corrupt words) one swap of
    a phrase found once in the sentence gives, in both directions of each swap."""
    found = []
    for category, a, b, en_a, en_b in SWAPS:
        for this, that, en_this, en_that in ((a, b, en_a, en_b), (b, a, en_b, en_a)):
            pattern = re.compile(rf"(?<![\w]){re.escape(this)}(?![\w])")
            if len(pattern.findall(sentence)) == 1:
                found.append((category, pattern.sub(that, sentence), this, that, en_this, en_that))
    return found


def changed_words(clean: str, corrupt: str) -> int:
    """How many words a pair changes, in the words of the longer side at each place where they differ (difflib's
    alignment of the two sentences' words): "ein Mann" -> "eine Frau" changes 2, "Zwei" -> "Drei" 1."""
    a, b = clean.split(), corrupt.split()
    places = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in places if tag != "equal")


def first_difference(a: list, b: list) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)


def make_pairs(translators: dict, sentences: list[str], per_category: int, progress: bool = False) -> list[dict]:
    """Pairs from the sentences, at most per_category a category, kept as the module says; translators:
    {name: Translator}."""
    from tqdm import tqdm

    kept, seen = {c: [] for c in CATEGORIES}, set()
    batch = 256
    for start in tqdm(range(0, len(sentences), batch), disable=not progress, desc="contrast pairs"):
        if all(len(v) >= per_category for v in kept.values()):
            break
        candidates = []
        for sentence in sentences[start:start + batch]:
            for category, corrupt, this, that, en_this, en_that in swapped(sentence):
                if len(kept[category]) < per_category and (sentence, corrupt) not in seen:
                    seen.add((sentence, corrupt))
                    candidates.append((category, sentence, corrupt, this, that, en_this, en_that))
        if not candidates:
            continue
        any_tr = next(iter(translators.values()))
        lengths = [(len(any_tr.source_ids(c[1])[1]), len(any_tr.source_ids(c[2])[1])) for c in candidates]
        candidates = [c for c, (m, n) in zip(candidates, lengths) if m == n]
        outputs = {name: tr.translate_batch([x for c in candidates for x in (c[1], c[2])], with_maps=False)
                   for name, tr in translators.items()}
        for i, (category, clean, corrupt, this, that, en_this, en_that) in enumerate(candidates):
            models = {}
            for name, outs in outputs.items():
                a, b = [s.token for s in outs[2 * i].steps], [s.token for s in outs[2 * i + 1].steps]
                t = first_difference(a, b)
                if t is None or a[t] not in en_this or b[t] not in en_that:
                    break
                models[name] = {"step": t, "clean": a[t], "corrupt": b[t]}
            if len(models) < len(translators) or len(kept[category]) >= per_category:
                continue
            c_tokens, x_tokens = any_tr.source_ids(clean)[0], any_tr.source_ids(corrupt)[0]
            kept[category].append({"category": category, "clean": clean, "corrupt": corrupt,
                                   "positions": [p for p, (u, v) in enumerate(zip(c_tokens, x_tokens)) if u != v],
                                   "de": [this, that], "models": models})
    return [p for c in CATEGORIES for p in kept[c]]


def read_pairs(path) -> list[dict]:
    """The pairs of a pairs file (JSON lines); InputError naming the line that is not a pair."""
    pairs = []
    for n, line in enumerate(files.read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        p = files.loads(line, f"{path} line {n}")
        if not isinstance(p, dict) or not all(isinstance(p.get(k), str) for k in ("category", "clean", "corrupt")):
            raise InputError(f"{path} line {n}: a pair needs category, clean and corrupt")
        pairs.append(p)
    if not pairs:
        raise InputError(f"{path} holds no pairs")
    return pairs


def main(argv=None):
    """`python -m model.contrast`: a usage error is one line `error: ...` and exit status 2 (model/cli.py)."""
    from . import cli  # the command's parser loads with the command, not with the library

    return cli.entry_point(command)(argv)


def command(argv):
    from . import cli

    p = cli.Parser(description=__doc__)
    p.add_argument("--data-dir", default=None, help="Multi30k (default: $MULTI30K_DIR, else ../shared/data/multi30k)")
    p.add_argument("--checkpoints", nargs="+", default=["checkpoints", "checkpoints/sinusoidal"],
                   help="every model whose translations a pair must pass (default: both shipped)")
    p.add_argument("--per-category", type=cli.whole, default=80, help="pairs per category at most (default: 80)")
    p.add_argument("--out", required=True, help="the pairs file to write (JSON lines)")
    cli.add_device(p)
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    cli.check(args, per_category=cli.Range(1, 10_000))
    from .data import default_data_dir
    from .translator import Translator

    data_dir = args.data_dir or default_data_dir()
    sentences = [s for split in SPLITS for s in cli.read_split(data_dir, split)[0]]
    translators = {Path(c).name: Translator.load(c, args.device) for c in args.checkpoints}
    t0 = time.time()
    pairs = make_pairs(translators, sentences, args.per_category, progress=not args.no_progress)
    files.write_text(args.out, "".join(files.dumps(p, ensure_ascii=False) + "\n" for p in pairs))
    counts = {c: sum(p["category"] == c for p in pairs) for c in CATEGORIES}
    print(files.dumps({"out": args.out, "pairs": len(pairs), "categories": counts,
                       "seconds": round(time.time() - t0, 1)}))
    return 0


if __name__ == "__main__":
    from . import cli

    cli.run(main)
