"""Tiny but real Marian model folders, written by Hugging Face's own `MarianMTModel.save_pretrained` and
`MarianTokenizer.save_pretrained`, for the parity tests of `python -m model.convert marian` (tests/unit/test_marian.py).

A folder holds what a Helsinki-NLP opus-mt folder holds: config.json, generation_config.json, model.safetensors (or
pytorch_model.bin), source.spm, target.spm, vocab.json (and target_vocab.json where the vocabularies are separate),
tokenizer_config.json. The SentencePiece models are trained here on the Multi30k training split that the repository
ships (assets/multi30k/), German for the source and English for the target; the model is random, seeded, with
opus-mt's options (swish, scaled embeddings, decoding from <pad>, </s> id 0).

    spm_models() -> {"source": bytes, "target": bytes}      trained once per process (a few seconds)
    build(folder, size="small", shared=True, weights="safetensors", seed=0, eos_bias=EOS_BIAS) -> folder
    SIZES: the two model sizes by name;  lines(lang, n): the first n training sentences
"""

import gzip
import io
import json
from functools import lru_cache
from pathlib import Path

import torch

from model.evidence import TRAIN_TEXTS

TRAIN_LINES = 3000  # the first lines of each side that the SentencePiece models learn from
SPM_SIZES = {"source": 300, "target": 400}  # pieces (the target larger, so separate vocabularies differ in size)
SIZES = {  # MarianConfig sizes; heads and feed-forward width are one value for both sides, as in opus-mt
    "small": dict(d_model=16, encoder_layers=2, decoder_layers=2, heads=4, ffn=32),
    "large": dict(d_model=32, encoder_layers=3, decoder_layers=2, heads=8, ffn=64),
}
MAX_POSITIONS = 128
QK_SCALE = 2.0  # q and k weights this much larger than the others': attention peaked enough to depend on the source
EOS_BIAS = 3.5  # added to </s>'s final_logits_bias: a random model's outputs then end now and then
PAD_BIAS = 8.0  # added to <pad>'s: the likeliest token, which decoding must still never write (bad_words_ids)


def lines(lang: str, n: int = TRAIN_LINES) -> list[str]:
    with gzip.open(TRAIN_TEXTS[lang], "rt", encoding="utf-8") as f:
        return [next(f).strip() for _ in range(n)]


@lru_cache(maxsize=1)
def spm_models() -> dict:
    """The source (German) and target (English) SentencePiece models' bytes: unigram, trained deterministically
    (one thread, a fixed seed, every line, no sampling)."""
    import sentencepiece as spm

    spm.set_random_generator_seed(1234)
    out = {}
    for side, lang in (("source", "de"), ("target", "en")):
        buf = io.BytesIO()
        spm.SentencePieceTrainer.train(sentence_iterator=iter(lines(lang)), model_writer=buf,
                                       vocab_size=SPM_SIZES[side], model_type="unigram", character_coverage=1.0,
                                       num_threads=1, input_sentence_size=0, shuffle_input_sentence=False,
                                       minloglevel=2)
        out[side] = buf.getvalue()
    return out


def pieces(model: bytes) -> list[str]:
    """A SentencePiece model's pieces in id order, without its own control and unknown symbols."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_proto=model)
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())
            if not (sp.is_control(i) or sp.is_unknown(i))]


def vocabularies(shared: bool) -> tuple[dict, dict | None]:
    """(vocab.json, target_vocab.json or None) as Marian's converter writes them: </s> 0, <unk> 1, the pieces, and
    <pad> last (opus-mt: pad = vocab_size - 1). Joint: the source's pieces, then the target's not among them.
    Separate: one pad id serves both sides (config.json's pad_token_id is also the decoder's start), so the larger
    target vocabulary holds <pad> at the source's last id and continues after it."""
    models = spm_models()
    src, tgt = pieces(models["source"]), pieces(models["target"])
    if shared:
        joint = ["</s>", "<unk>", *dict.fromkeys(p for p in src + tgt if p not in ("</s>", "<unk>")), "<pad>"]
        return {p: i for i, p in enumerate(joint)}, None
    source = ["</s>", "<unk>", *src, "<pad>"]
    target = ["</s>", "<unk>", *tgt]
    assert len(target) >= len(source), "the target vocabulary must be the larger one"
    target.insert(len(source) - 1, "<pad>")
    return {p: i for i, p in enumerate(source)}, {p: i for i, p in enumerate(target)}


def randomize(model, seed: int, eos_bias: float = EOS_BIAS) -> None:
    """Every weight random, at scales where the output depends on the source (Hugging Face's init, std 0.02, gives
    nearly uniform attention and outputs): weight matrices of std 1/sqrt(fan-in), q and k QK_SCALE times that,
    embeddings std 1/sqrt(D) (times sqrt(D) by scale_embedding), LayerNorm weights near 1 and biases near 0 but
    neither exactly (so that they are tested), and a random final_logits_bias, </s>'s raised by eos_bias and <pad>'s
    by PAD_BIAS. Marian's sinusoidal position tables stay as they are."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_positions" in name:
                continue
            noise = torch.randn(p.shape, generator=g)
            if "layer_norm" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.3 * noise)
            elif name.endswith("weight"):  # (out, in) matrices and (V, D) embeddings alike
                scale = QK_SCALE if name.endswith(("q_proj.weight", "k_proj.weight")) else 1.0
                p.copy_(scale * noise / p.size(1) ** 0.5)
            else:
                p.copy_(0.3 * noise)
        bias = torch.randn(model.final_logits_bias.shape, generator=g)
        bias[0, model.config.eos_token_id] += eos_bias
        bias[0, model.config.pad_token_id] += PAD_BIAS
        model.final_logits_bias.copy_(bias)


def build(folder, size: str = "small", shared: bool = True, weights: str = "safetensors", seed: int = 0,
          eos_bias: float = EOS_BIAS) -> Path:
    """A Marian folder in `folder` (created), as save_pretrained writes it; weights "safetensors" or "bin"
    (pytorch_model.bin: the same tensors torch.save'd, what transformers 4's save_pretrained wrote with
    safe_serialization=False; transformers 5 writes safetensors only)."""
    from safetensors.torch import load_file
    from transformers import GenerationConfig, MarianConfig, MarianMTModel, MarianTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    staging = folder / "staging"
    staging.mkdir()
    vocab, target_vocab = vocabularies(shared)
    for side, model in spm_models().items():
        (staging / f"{side}.spm").write_bytes(model)
    (staging / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    if target_vocab is not None:
        (staging / "target_vocab.json").write_text(json.dumps(target_vocab, ensure_ascii=False))
    tok = MarianTokenizer(str(staging / "source.spm"), str(staging / "target.spm"), str(staging / "vocab.json"),
                          target_vocab_file=None if shared else str(staging / "target_vocab.json"),
                          separate_vocabs=not shared, source_lang="de", target_lang="en")
    tok.save_pretrained(folder)
    for f in staging.iterdir():
        f.unlink()
    staging.rmdir()

    s = SIZES[size]
    pad = len(vocab) - 1
    config = MarianConfig(
        vocab_size=len(vocab), decoder_vocab_size=len(target_vocab or vocab), d_model=s["d_model"],
        encoder_layers=s["encoder_layers"], decoder_layers=s["decoder_layers"],
        encoder_attention_heads=s["heads"], decoder_attention_heads=s["heads"],
        encoder_ffn_dim=s["ffn"], decoder_ffn_dim=s["ffn"], activation_function="swish", scale_embedding=True,
        max_position_embeddings=MAX_POSITIONS, pad_token_id=pad, decoder_start_token_id=pad, eos_token_id=0,
        bos_token_id=0, forced_eos_token_id=None, share_encoder_decoder_embeddings=shared)
    torch.manual_seed(seed)
    model = MarianMTModel(config).eval()
    randomize(model, seed, eos_bias)
    # opus-mt's generation settings but forced_eos_token_id None: with it, generate makes </s> the last of
    # max_new_tokens tokens. A random model rarely ends by itself, so the tests compare generations cut at
    # max_new_tokens, where that rule (ours does not have it) would be all they saw.
    model.generation_config = GenerationConfig(
        bad_words_ids=[[pad]], bos_token_id=0, decoder_start_token_id=pad, eos_token_id=0, forced_eos_token_id=None,
        max_length=MAX_POSITIONS, num_beams=4, pad_token_id=pad, length_penalty=1.0, early_stopping=False)
    model.save_pretrained(folder)
    if weights == "bin":
        state = load_file(folder / "model.safetensors")
        torch.save(state, folder / "pytorch_model.bin")
        (folder / "model.safetensors").unlink()
    return folder
