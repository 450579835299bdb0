"""Tokenization and vocabularies, exactly as docs/contract.md says.

spaCy's rule-based tokenizer of a blank pipeline, lower-cased; vocabularies from
the training split only, tokens seen at least twice, specials first, then by
descending count with ties in alphabetical order.
"""

from collections import Counter
from functools import lru_cache
from typing import Iterable

UNK, PAD, SOS, EOS = "<unk>", "<pad>", "<sos>", "<eos>"
SPECIALS = (UNK, PAD, SOS, EOS)
UNK_ID, PAD_ID, SOS_ID, EOS_ID = range(4)


@lru_cache(maxsize=None)
def _spacy_tokenizer(lang: str):
    import spacy  # imported lazily: it takes a second and viz/ never needs it

    return spacy.blank(lang).tokenizer


def tokenize(text: str, lang: str) -> list[str]:
    """Lower-cased spaCy tokens of one sentence (outer whitespace stripped).

    Inner runs of odd whitespace stay as spaCy's whitespace tokens, as in the reference
    tutorial: that is what gives the vocabulary sizes of docs/contract.md (7,853 / 5,893).
    """
    return [t.text.lower() for t in _spacy_tokenizer(lang)(text.strip())]


class Vocab:
    def __init__(self, itos: list[str]):
        # Raised, not asserted: a vocabulary comes from a checkpoint's JSON, and `python -O` drops asserts.
        if not isinstance(itos, (list, tuple)):
            raise ValueError(f"a vocabulary is a list of tokens, got {type(itos).__name__}")
        odd = next((t for t in itos if not isinstance(t, str)), None)
        if odd is not None:
            raise ValueError(f"vocabulary tokens must be strings, got {odd!r}")
        if tuple(itos[:4]) != SPECIALS:
            raise ValueError(f"vocabulary must start with {SPECIALS}, got {tuple(itos[:4])}")
        if len(set(itos)) != len(itos):
            dups = sorted(t for t, c in Counter(itos).items() if c > 1)
            raise ValueError(f"vocabulary has duplicate tokens: {dups[:5]}")
        self.itos = list(itos)
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    @classmethod
    def build(cls, tokenized: Iterable[list[str]], min_freq: int = 2) -> "Vocab":
        counts = Counter(tok for sent in tokenized for tok in sent)
        kept = [t for t, c in counts.items() if c >= min_freq and t not in SPECIALS]
        kept.sort(key=lambda t: (-counts[t], t))
        return cls(list(SPECIALS) + kept)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: list[str]) -> list[int]:
        return [self.stoi.get(t, UNK_ID) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.itos[i] for i in ids]
