"""A Marian model of opus-mt-de-en's size on our Transformer, against transformers' MarianMTModel on the same weights.

    python bench/marian_speed.py [--threads 2] [--page] [--keep DIR]

The model: a random MarianMTModel with opus-mt-de-en's config (58,101 pieces, d 512, 6 + 6 layers, 8 heads, d_ff
2048, swish, one shared table, 512 positions), SentencePiece models trained here on 5,000 Multi30k lines and the
vocabulary filled up to 58,101 pieces, saved with save_pretrained and converted by `python -m model.convert marian`.
Each figure beside its reference, measured in the same run:

1. our greedy translation of a 20-piece sentence with every map and the step trace (Translator.translate, 20 steps)
   against transformers' generate(num_beams=1, do_sample=False, max_new_tokens=20) with no attentions (bar 1.5x);
2. the loaded model's memory, resident set after Translator.load and one translation minus before, in a fresh
   process whose torch has already run a tiny model, against its float32 weights (bar 1.3x);
3. with --page: the page's Enter to the first map drawn, in headless Chromium (bar 2 s), beside the shipped model's.
"""

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from model.data import default_data_dir  # noqa: E402

OPUS_DE_EN = dict(vocab_size=58101, decoder_vocab_size=58101, d_model=512, encoder_layers=6, decoder_layers=6,
                  encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048,
                  max_position_embeddings=512, pad_token_id=58100, eos_token_id=0, decoder_start_token_id=58100,
                  activation_function="swish", scale_embedding=True, forced_eos_token_id=None)
SENTENCE = "Ein kleines Mädchen in einem rosa Kleid klettert auf einen großen Baum im Park neben dem Fluss."
STEPS = 20


def opus_sized_folder(folder: Path) -> Path:
    """A save_pretrained folder of a random opus-mt-de-en-sized Marian model, tokenizer files included."""
    import sentencepiece as spm
    from transformers import MarianConfig, MarianMTModel

    data = default_data_dir()
    pieces = []
    for name, lang in (("source", "de"), ("target", "en")):
        with gzip.open(data / f"train.{lang}.gz", "rt", encoding="utf-8") as f:
            lines = [next(f).strip() for _ in range(5000)]
        spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_prefix=str(folder / name),
                                       vocab_size=2000, model_type="unigram", bos_id=-1, eos_id=-1, unk_id=0,
                                       minloglevel=2)
        (folder / f"{name}.model").rename(folder / f"{name}.spm")
        sp = spm.SentencePieceProcessor(model_file=str(folder / f"{name}.spm"))
        pieces += [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    vocab = {"</s>": 0, "<unk>": 1}
    for p in pieces:
        vocab.setdefault(p, len(vocab))
    for i in range(OPUS_DE_EN["vocab_size"] - 1 - len(vocab)):  # opus-mt's table has 58,101 rows
        vocab[f"\u2581filler{i}"] = len(vocab)
    vocab["<pad>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps({"source_lang": "de", "target_lang": "en"}))
    torch.manual_seed(0)
    MarianMTModel(MarianConfig(**OPUS_DE_EN)).eval().save_pretrained(folder)
    return folder


def median_s(fn, repeat: int = 5) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


# The baseline is taken after a tiny model has translated once, so torch's lazily loaded parts (about 75 MB) are not
# counted as the model's; the end after one translation, when every weight has been read.
MEMORY = """
import gc, sys, torch
sys.path.insert(0, {root!r})
from model.transformer import Transformer
from model.config import ModelConfig
from model.translator import Translator
from model.vocab import Vocab
tiny = Transformer(ModelConfig(src_vocab_size=8, tgt_vocab_size=8, d_model=8, n_heads=2, d_ff=8))
Translator(tiny, Vocab([*'<unk> <pad> <sos> <eos> ein hund a dog'.split()]),
           Vocab([*'<unk> <pad> <sos> <eos> ein hund a dog'.split()])).translate('ein hund')
def rss():
    return int(open('/proc/self/statm').read().split()[1]) * 4096
gc.collect(); before = rss()
t = Translator.load({folder!r}, device='cpu')
t.translate({sentence!r})
gc.collect(); after = rss()
weights = sum(p.numel() * 4 for p in t.model.parameters())
print(after - before, weights)
"""


def page_seconds(folder: Path | None) -> float:
    """Enter to the first map drawn, on a warm server (one sentence translated first): median of 3 new sentences."""
    from playwright.sync_api import sync_playwright

    from tests.appserver import CHROMIUM, CHROMIUM_ARGS, free_port, start_app, stop_app, translate_in_page

    port = free_port()
    proc = start_app(port, env={"TRANSFORMER_CHECKPOINT": str(folder)} if folder else None)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/?view=cross", timeout=60_000)
            translate_in_page(page, "Ein Hund rennt.", timeout_ms=120_000)
            times = []
            for sentence in ("Zwei Männer spielen Fußball.", "Eine Frau liest ein Buch im Park.", SENTENCE):
                t = time.perf_counter()
                translate_in_page(page, sentence, timeout_ms=120_000)
                times.append(time.perf_counter() - t)
            browser.close()
    finally:
        stop_app(proc)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--page", action="store_true", help="also time the page's Enter in headless Chromium")
    p.add_argument("--keep", help="build the folders here and keep them (default: a temporary folder)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    from transformers import MarianMTModel

    from model import convert
    from model.translator import Translator

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(args.keep or tmp)
        hf_dir, ours_dir = base / "hf", base / "ours"
        hf_dir.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        opus_sized_folder(hf_dir)
        built = time.perf_counter() - t
        t = time.perf_counter()
        convert.main(["marian", str(hf_dir), "--out", str(ours_dir)])
        converted = time.perf_counter() - t
        print(f"built the random opus-mt-de-en-sized folder in {built:.1f} s, converted it in {converted:.1f} s")

        tr = Translator.load(str(ours_dir), device="cpu")
        hf = MarianMTModel.from_pretrained(hf_dir).eval()
        src = torch.tensor([tr.source_ids(SENTENCE)[1]])
        pad = tr.cfg.pad_id

        def theirs():
            with torch.no_grad():
                return hf.generate(src, num_beams=1, do_sample=False, max_new_tokens=STEPS, bad_words_ids=[[pad]])

        def ours():
            return tr.translate(SENTENCE, max_len=STEPS)

        same = theirs()[0, 1:].tolist() == [tr.tgt_vocab.stoi[s.token] for s in ours().steps]
        hf_s, our_s = median_s(theirs), median_s(ours)
        print(f"1. greedy, {src.size(1)} source pieces, {STEPS} steps: ours with every map {our_s * 1000:.0f} ms, "
              f"transformers' generate (no attentions) {hf_s * 1000:.0f} ms: {our_s / hf_s:.2f}x (bar 1.5x: "
              f"{'met' if our_s / hf_s <= 1.5 else 'NOT met'}); the same tokens: {same}")
        del hf, tr

        out = subprocess.run([sys.executable, "-c", MEMORY.format(root=str(ROOT), folder=str(ours_dir),
                                                                 sentence=SENTENCE)],
                             capture_output=True, text=True, check=True).stdout.split()
        grown, weights = int(out[-2]), int(out[-1])
        print(f"2. memory: loading grew the process by {grown / 2**20:.0f} MB for {weights / 2**20:.0f} MB of float32 "
              f"weights: {grown / weights:.2f}x (bar 1.3x: {'met' if grown / weights <= 1.3 else 'NOT met'})")

        if args.page:
            marian, shipped = page_seconds(ours_dir), page_seconds(None)
            print(f"3. the page, Enter to the first map (median of 3 new sentences, warm server): Marian-sized "
                  f"{marian:.2f} s, the shipped model {shipped:.2f} s: {marian / shipped:.2f}x (bar 2 s: "
                  f"{'met' if marian <= 2 else 'NOT met'})")


if __name__ == "__main__":
    main()
