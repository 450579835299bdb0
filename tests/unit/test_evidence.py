"""Training evidence (model/evidence.py, views/evidence.py): the lexical table, the step index, and the view."""

import gzip
import random

import pytest

from model.evidence import LEXICON, TRAIN_TEXTS, Lexicon, lexicon_table
from model.silver import TRAIN_LINKS
from model.vocab import tokenize


def test_the_lexical_table_of_a_small_corpus_is_its_known_counts():
    de = [["ein", "hund", "und", "ein", "ball"], ["der", "hund"], ["ein", "ball"]]
    en = [["a", "dog", "and", "a", "ball"], ["the", "dog"], ["a", "ball"]]
    links = [{(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)}, {(0, 0), (1, 1)}, {(0, 0), (1, 1), (1, 0)}]
    t = lexicon_table(de, en, links)
    assert t["ein"] == [2, 3, [("a", 3)], [0, 2]]
    assert t["hund"] == [2, 2, [("dog", 2)], [0, 1]]
    assert t["ball"] == [2, 2, [("ball", 2), ("a", 1)], [0, 2]]  # most linked first, then alphabetical
    assert t["der"] == [1, 1, [("the", 1)], [1]]


@pytest.fixture(scope="module")
def training():
    texts = {lang: gzip.decompress(p.read_bytes()).decode("utf-8").splitlines() for lang, p in TRAIN_TEXTS.items()}
    links = [{tuple(map(int, x.split("-"))) for x in line.split()}
             for line in gzip.decompress(TRAIN_LINKS.read_bytes()).decode().splitlines()]
    assert len(links) == len(texts["de"]) == 29_000
    return texts, links


def test_the_shipped_lexicon_equals_a_recount_of_the_shipped_links(training):
    """For 12 words drawn at random (and two named ones), every sentence that may hold the word is tokenized again
    and its links recounted: the sentences, occurrences, linked English words with counts and first lines are
    the table's."""
    texts, links = training
    table = Lexicon().table
    assert LEXICON.stat().st_size < 500_000 and len(table) > 18_000
    rng = random.Random(0)
    words = ["zug", "zeit"] + rng.sample(sorted(w for w, e in table.items() if 3 <= e[0] <= 40 and w.isalpha()), 12)
    for word in words:
        lines = [i for i, s in enumerate(texts["de"]) if word in s.lower()]  # a superset of the lines holding it
        de = [tokenize(texts["de"][i], "de") for i in lines]
        en = [tokenize(texts["en"][i], "en") for i in lines]
        recount = lexicon_table(de, en, [links[i] for i in lines])[word]
        assert table[word][:3] == [recount[0], recount[1], [list(a) for a in recount[2]]], word
        assert table[word][3] == [lines[j] for j in recount[3]], word


            # distances shown are rounded to 4 places)
