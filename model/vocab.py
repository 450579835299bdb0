"""Tokenization and vocabularies, exactly as docs/contract.md says.

spaCy's rule-based tokenizer of a blank pipeline, lower-cased; vocabularies from
the training split only, tokens seen at least twice, specials first, then by
descending count with ties in alphabetical order.
"""

from collections import Counter
from functools import lru_cache
from typing import Iterable

UNK, PAD, SOS, EOS = "<unk>", "<pad>", "<sos>", "<eos>"
SPECIALS = (UNK, PAD, SOS, EOS)  # this project's vocabularies (and the Trevett tutorial's) start with these
UNK_ID, PAD_ID, SOS_ID, EOS_ID = range(4)
ROLES = ("unk", "pad", "sos", "eos")  # what each special token is for; a vocabulary names its token for each


@lru_cache(maxsize=None)
def _spacy_tokenizer(lang: str):
    import spacy  # imported lazily: it takes a second and viz/ never needs it

    return spacy.blank(lang).tokenizer


def tokenize(text: str, lang: str, lower: bool = True) -> list[str]:
    """Lower-cased spaCy tokens of one sentence (outer whitespace stripped); with lower=False, as written (the
    PyTorch tutorial's and the Annotated Transformer's vocabularies keep the case).

    Inner runs of odd whitespace stay as spaCy's whitespace tokens, as in the reference
    tutorial: that is what gives the vocabulary sizes of docs/contract.md (7,853 / 5,893).
    """
    return [t.text.lower() if lower else t.text for t in _spacy_tokenizer(lang)(text.strip())]


WORD_START = "\u2581"  # "▁": SentencePiece's mark of a piece that starts a word (Marian's tokens)


@lru_cache(maxsize=8)
def pieces_processor(model: bytes):
    import sentencepiece  # only a model with pieces (Marian) needs it

    return sentencepiece.SentencePieceProcessor(model_proto=model)


def join_pieces(pieces: list[str]) -> str:
    """SentencePiece pieces back to text: concatenated, each word start a space (as SentencePiece decodes them)."""
    return "".join(pieces).replace(WORD_START, " ").strip()


class Vocab:
    """index -> token (`itos`) and back, with the four special tokens it names: `specials` maps each role of ROLES
    to its token (default: this project's, which must then come first, in SPECIALS order), and `lower` says whether
    its tokens are lower-cased (the tokenizer's rule for every text it encodes). `pieces`, a SentencePiece model
    (its file's bytes), makes the tokens its pieces instead of spaCy's words (a Marian model's); its <sos> may be its
    <pad> (Marian starts decoding from <pad>)."""

    def __init__(self, itos: list[str], specials: dict | None = None, lower: bool = True,
                 pieces: bytes | None = None):
        # Raised, not asserted: a vocabulary comes from a checkpoint's JSON, and `python -O` drops asserts.
        if not isinstance(itos, (list, tuple)):
            raise ValueError(f"a vocabulary is a list of tokens, got {type(itos).__name__}")
        odd = next((t for t in itos if not isinstance(t, str)), None)
        if odd is not None:
            raise ValueError(f"vocabulary tokens must be strings, got {odd!r}")
        if len(set(itos)) != len(itos):
            dups = sorted(t for t, c in Counter(itos).items() if c > 1)
            raise ValueError(f"vocabulary has duplicate tokens: {dups[:5]}")
        if specials is None:
            if tuple(itos[:4]) != SPECIALS:
                raise ValueError(f"vocabulary must start with {SPECIALS}, got {tuple(itos[:4])}")
            specials = dict(zip(ROLES, SPECIALS))
        if not isinstance(specials, dict) or sorted(specials) != sorted(ROLES):
            raise ValueError(f"a vocabulary's specials name a token for each of {', '.join(ROLES)}, got {specials!r}")
        if type(lower) is not bool:
            raise ValueError(f"lower must be true or false, got {lower!r}")
        self.itos = list(itos)
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        missing = [t for t in specials.values() if t not in self.stoi]
        distinct = {specials[r] for r in ("unk", "pad", "eos")}
        if missing or len(distinct) != 3 or specials["sos"] in (specials["unk"], specials["eos"]):
            raise ValueError(f"the special tokens {missing or list(specials.values())} must be four distinct tokens "
                             "of the vocabulary (or three, where <sos> is <pad>)")
        if pieces is not None and (not isinstance(pieces, bytes) or lower):
            raise ValueError("pieces are a SentencePiece model's bytes, and its tokens are not lower-cased")
        self.specials, self.lower, self.pieces = {r: specials[r] for r in ROLES}, lower, pieces
        self.unk, self.pad, self.sos, self.eos = (self.specials[r] for r in ROLES)
        self.unk_id, self.pad_id, self.sos_id, self.eos_id = (self.stoi[self.specials[r]] for r in ROLES)

    @property
    def ours(self) -> bool:
        """True for this project's specials in their places and lower-cased tokens (vocab.json says nothing more)."""
        return tuple(self.itos[:4]) == SPECIALS and self.specials == dict(zip(ROLES, SPECIALS)) and self.lower

    @property
    def never_written(self) -> tuple:
        """The tokens no step writes (<pad>, and <sos>, which only starts the output): no foil or what-if is one."""
        return self.pad, self.sos

    @classmethod
    def build(cls, tokenized: Iterable[list[str]], min_freq: int = 2) -> "Vocab":
        counts = Counter(tok for sent in tokenized for tok in sent)
        kept = [t for t, c in counts.items() if c >= min_freq and t not in SPECIALS]
        kept.sort(key=lambda t: (-counts[t], t))
        return cls(list(SPECIALS) + kept)

    def __len__(self) -> int:
        return len(self.itos)

    def tokenize(self, text: str, lang: str) -> list[str]:
        """The tokens of a text as this vocabulary's tokenizer makes them (lower-cased or not; or its SentencePiece
        pieces, after a leading language code such as >>de<< kept whole, as Hugging Face's MarianTokenizer does)."""
        if self.pieces is None:
            return tokenize(text, lang, self.lower)
        code = []
        if text.startswith(">>") and (end := text.find("<<")) != -1:
            code, text = [text[:end + 2]], text[end + 2:]
        return code + pieces_processor(self.pieces).encode(text, out_type=str)

    def join(self, tokens: list[str]) -> str:
        """Tokens back to text: words with single spaces, or pieces joined at their word starts."""
        return " ".join(tokens) if self.pieces is None else join_pieces(tokens)

    def encode(self, tokens: list[str]) -> list[int]:
        return [self.stoi.get(t, self.unk_id) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.itos[i] for i in ids]
