"""What a model of SentencePiece pieces (a converted Marian model) needs from the analyses that count words: its
pieces grouped into words and its maps summed into them by the stated rule (model/align.py; docs/contract.md "Word
alignment"), BLEU of its joined text on sacrebleu's own tokens, its source framed without <sos>, the page's names
for its languages, and a corpus of one's own for the training and step indexes."""

import re

import numpy as np
import pytest
import sacrebleu

from model.align import Grouping, links_of, piece_groups, word_rows
from model.data import encode_pairs
from model.errors import InputError
from model.evidence import read_corpus
from model.familiarity import split_corpus
from model.languages import language_names
from model.metrics import bleu, bleu_stats, bleu_from_stats, sentence_bleu
from model.tables import BY_NAME, Step, build
from model.vocab import Vocab

from conftest import ENGLISH, GERMAN, seeded_translator


def test_pieces_group_into_the_words_they_spell():
    pieces = ["▁Ein", "▁Hu", "nd", "▁läuft", "."]
    assert piece_groups(pieces, ["Ein", "Hund", "läuft", "."]) == [(0,), (1, 2), (3,), (4,)]
    # a piece that spans two words ("Park." is one piece, two spaCy words) counts for each
    assert piece_groups(["▁Im", "▁Park."], ["Im", "Park", "."]) == [(0,), (1,), (1,)]
    # NFKC on both sides, as SentencePiece normalises: the full-width "Ａ" is "A"
    assert piece_groups(["▁Ａ", "b"], ["Ab"]) == [(0, 1)]
    with pytest.raises(InputError, match="do not spell"):
        piece_groups(["▁Ein", "▁Hund"], ["Ein", "Hund", "."])


def test_a_word_row_is_the_mean_of_its_pieces_rows_and_a_word_column_the_sum_of_its_pieces():
    # A cross map over 3 output pieces and <eos> (rows, T = 4) and a source of 3 pieces and </s> (S = 4, no <sos>):
    # target words: piece 0; pieces 1 and 2. Source words: pieces 0 and 1; piece 2.
    m = np.array([[0.5, 0.2, 0.2, 0.1],
                  [0.1, 0.1, 0.7, 0.1],
                  [0.3, 0.3, 0.3, 0.1],
                  [0.0, 0.6, 0.2, 0.2]])
    groups = Grouping(src=((0, 1), (2,)), tgt=((0,), (1, 2)))
    writes = word_rows(m, 2, 2, "argmax", groups)
    np.testing.assert_allclose(writes, [[0.7, 0.2],  # row 0: 0.5 + 0.2, then 0.2
                                        [0.4, 0.5]])  # mean of rows 1, 2: (0.1, 0.1, 0.7) and (0.3, 0.3, 0.3)
    assert links_of(writes, "argmax") == {(0, 0), (1, 1)}
    reads = word_rows(m, 2, 2, "shift", groups)  # the rows that read each piece: one step later
    np.testing.assert_allclose(reads, [[0.2, 0.7],  # row 1
                                       [0.6, 0.25]])  # mean of rows 2, 3: 0.6 and 0.6; 0.3 and 0.2
    assert links_of(reads, "shift") == {(1, 0), (0, 1)}


def test_without_groups_a_word_is_a_token():
    m = np.arange(20, dtype=float).reshape(4, 5) / 20
    np.testing.assert_array_equal(word_rows(m, 3, 3, "argmax"), m[:3, 1:4])  # <sos> and <eos> left out
    ones = Grouping(src=((1,), (2,), (3,)), tgt=((0,), (1,), (2,)))
    for route in ("argmax", "shift"):
        np.testing.assert_allclose(word_rows(m, 3, 3, route, ones), word_rows(m, 3, 3, route))


def test_bleu_of_pieces_scores_the_joined_text_on_sacrebleus_tokens():
    pieces, reference = ["▁A", "▁do", "g", "▁runs", "."], "A dog runs in the park."
    expected = sacrebleu.sentence_bleu("A dog runs.", [reference]).score
    assert sentence_bleu(pieces, reference, pieces=True) == pytest.approx(expected)
    assert sentence_bleu(pieces, reference) != pytest.approx(expected)  # spaCy's words of the pieces: another score
    hyps, refs = ["A dog runs.", "Two men play soccer."], [reference, "Two men play football."]
    assert bleu(hyps, refs, pieces=True) == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert bleu_from_stats(bleu_stats(hyps, refs, pieces=True).sum(0)) == pytest.approx(bleu(hyps, refs, pieces=True))


def test_a_source_without_a_start_token_is_tokens_and_the_end():
    sv, tv = Vocab(GERMAN), Vocab(ENGLISH)
    src, tgt = encode_pairs(["ein hund läuft"], ["a dog runs"], sv, tv, 24, source_start=False)
    assert src == [[sv.stoi["ein"], sv.stoi["hund"], sv.stoi["läuft"], sv.eos_id]]
    assert tgt == [[tv.sos_id, tv.stoi["a"], tv.stoi["dog"], tv.stoi["runs"], tv.eos_id]]
    assert encode_pairs(["ein"], ["a"], sv, tv, 24)[0] == [[sv.sos_id, sv.stoi["ein"], sv.eos_id]]


def test_the_languages_are_named_in_words_only_for_german_to_english():
    assert language_names(("de", "en")) == ("German", "English")
    assert language_names(("ko", "en")) == ("source (ko)", "target (en)")
    assert language_names(("en", "de")) == ("source (en)", "target (de)")
    assert language_names((None, None)) == ("source", "target")


def test_a_corpus_is_a_pair_a_line_and_its_last_tenth_sets_the_thresholds(tmp_path):
    path = tmp_path / "corpus.tsv"
    path.write_text("".join(f"Satz {i}.\tSentence {i}.\n" for i in range(30)), encoding="utf-8")
    texts = read_corpus(path)
    assert texts["de"][2] == "Satz 2." and texts["en"][2] == "Sentence 2." and len(texts["de"]) == 30
    indexed, held, _ = split_corpus(path)
    assert indexed == texts["de"][:27] and held == texts["de"][27:]
    (tmp_path / "bad.tsv").write_text("Satz ohne Übersetzung\n", encoding="utf-8")
    with pytest.raises(InputError, match="bad.tsv:1: a corpus line is a source sentence, a tab"):
        read_corpus(tmp_path / "bad.tsv")
    (tmp_path / "short.tsv").write_text("Satz.\tSentence.\n" * 5, encoding="utf-8")
    with pytest.raises(InputError, match="at least 10"):
        split_corpus(tmp_path / "short.tsv")


def test_without_a_corpus_a_marian_models_training_indexes_are_skipped_saying_why(tmp_path):
    translator = seeded_translator()
    translator.origin = {**translator.origin, "family": "marian"}
    for name in ("familiarity", "evidence"):
        with pytest.raises(InputError, match="its training data is not known here.*--corpus FILE"):
            build(Step(BY_NAME[name], 1, True), tmp_path, None, translator, [], print)
    assert not list(tmp_path.iterdir())


def test_the_html_report_names_the_models_languages():
    from model.export import provenance
    from viz.report import report_html

    translator = seeded_translator()
    result = translator.translate("ein hund läuft im park .")
    text = report_html(result, provenance(translator), language_names(("ko", "en")))
    captions = re.findall(r'<p class="caption">(.*?)</p>', text, re.S)  # (plotly.js inside names Germany)
    assert any("Each source (ko) token (row)" in c for c in captions)
    assert any("the next target (en) word" in c for c in captions)
    assert not [c for c in captions if "German" in c or "English" in c]


def test_faithfulness_may_remove_every_source_token_of_a_source_without_a_start_token():
    from model import faithfulness as F

    for start in (True, False):
        translator = seeded_translator(source_start=start)
        found = F.measure(translator, "ein hund läuft im park .", steps=[1], orders=2).to_json()
        assert found["steps"][1]["source"]["tokens"] == found["src_tokens"][int(start):-1]  # <sos> and <eos> stay


def test_a_source_without_a_start_token_has_no_share_on_it():
    from model.head_stats import translation_stats

    result = seeded_translator(source_start=False).translate("ein hund läuft im park .")
    stats = translation_stats(result, source_start=False)["sos_share"]
    assert np.isnan(stats["enc"]).all() and np.isnan(stats["cross"]).all()
    assert np.isfinite(stats["dec"]).all()  # the decoder's first input is its start token still
