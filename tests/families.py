"""The three published Transformer families that students train on Multi30k, re-implemented so that a
`torch.save(model.state_dict(), path)` of ours has exactly the keys, shapes and numbers of theirs.

The parity tests of the converter (model/convert.py) build a family's *own* model here, save its state_dict,
convert it and compare logits, greedy output and attention maps with our model. Each class below names the
published class it re-implements and where it stands; attribute names are the published ones (they are the
state_dict keys), and so are the LayerNorm, the attention mask's fill value, the position encoding, the
embedding scale and the decoding loop. Class names carry a family prefix only so that the three can share
one file (class names never reach a state_dict).

    tutorial   Ben Trevett's pytorch-seq2seq, "6 - Attention is All You Need" (the torchtext-era notebook:
               github.com/bentrevett/pytorch-seq2seq, legacy/6 - Attention is All You Need.ipynb at b3cd54c;
               the model cells are unchanged since 0f7a00a, April 2020, which split the one `layer_norm` of each
               layer into self_attn_layer_norm / enc_attn_layer_norm / ff_layer_norm)
    pytorch    PyTorch's "Language Translation with nn.Transformer and torchtext" (github.com/pytorch/tutorials,
               beginner_source/translation_transformer.py at db77dcf)
    annotated  The Annotated Transformer, 2022 version (github.com/harvardnlp/annotated-transformer,
               the_annotated_transformer.py at debc9fd)

One small interface loops over them (every id tensor batch-first; `pytorch` goes seq-first inside):

    build(family, src_vocab, tgt_vocab, d_model, n_layers, n_heads, d_ff, seed, max_len=100) -> nn.Module (eval)
    logits(family, model, src_ids (B, S), tgt_in_ids (B, T), pad) -> (B, T, V) pre-softmax scores
    greedy(family, model, src_ids (1, S), sos, eos, pad, max_len) -> list[int]
    attention(family, model, src_ids (1, S), tgt_in_ids (1, T), pad) -> dict of numpy arrays
    specials(family) -> list[str];  special_ids(family) -> {"sos", "eos", "pad", "unk"}

Shape legend: B batch, S source length, T target length, L layers, H heads, D d_model, V vocabulary.
"""

import copy
import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

FAMILIES = ("tutorial", "pytorch", "annotated")


def _check_family(family: str) -> None:
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}: pass one of {', '.join(FAMILIES)}")


# ---------------------------------------------------------------------------------------------------------------
# 1. tutorial: bentrevett/pytorch-seq2seq, legacy/6 - Attention is All You Need.ipynb
#    Post-LN layers, torch's nn.LayerNorm (eps 1e-5), learned positions (`pos_embedding`, max_length 100),
#    token embeddings times a float32 tensor sqrt(hid_dim), masked scores filled with -1e10, no final norm.
# ---------------------------------------------------------------------------------------------------------------


class TutorialEncoder(nn.Module):
    """The notebook's `Encoder` (section "Encoder"): tok_embedding * scale + pos_embedding, dropout, the layers.

    `scale` is a plain tensor attribute as published (not a buffer, so not in the state_dict); `device` is
    the notebook's own constructor argument, used for `scale` and the positions."""

    def __init__(self, input_dim, hid_dim, n_layers, n_heads, pf_dim, dropout, device, max_length=100):
        super().__init__()
        self.device = device
        self.tok_embedding = nn.Embedding(input_dim, hid_dim)
        self.pos_embedding = nn.Embedding(max_length, hid_dim)
        self.layers = nn.ModuleList([TutorialEncoderLayer(hid_dim, n_heads, pf_dim, dropout, device)
                                     for _ in range(n_layers)])
        self.dropout = nn.Dropout(dropout)
        self.scale = torch.sqrt(torch.FloatTensor([hid_dim])).to(device)

    def forward(self, src, src_mask):
        """src (B, S), src_mask (B, 1, 1, S) -> (B, S, D)."""
        batch_size, src_len = src.shape
        pos = torch.arange(0, src_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)  # (B, S)
        src = self.dropout((self.tok_embedding(src) * self.scale) + self.pos_embedding(pos))
        for layer in self.layers:
            src = layer(src, src_mask)
        return src


class TutorialEncoderLayer(nn.Module):
    """The notebook's `EncoderLayer` (section "Encoder Layer"): post-LN, LayerNorm(x + dropout(sublayer(x)))."""

    def __init__(self, hid_dim, n_heads, pf_dim, dropout, device):
        super().__init__()
        self.self_attn_layer_norm = nn.LayerNorm(hid_dim)
        self.ff_layer_norm = nn.LayerNorm(hid_dim)
        self.self_attention = TutorialMultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.positionwise_feedforward = TutorialPositionwiseFeedforwardLayer(hid_dim, pf_dim, dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, src_mask):
        _src, _ = self.self_attention(src, src, src, src_mask)
        src = self.self_attn_layer_norm(src + self.dropout(_src))
        _src = self.positionwise_feedforward(src)
        return self.ff_layer_norm(src + self.dropout(_src))


class TutorialMultiHeadAttentionLayer(nn.Module):
    """The notebook's `MultiHeadAttentionLayer` (section "Multi Head Attention Layer"): fc_q, fc_k, fc_v, fc_o;
    energy = Q K^T / scale with scale a float32 tensor sqrt(head_dim); masked_fill(mask == 0, -1e10)."""

    def __init__(self, hid_dim, n_heads, dropout, device):
        super().__init__()
        assert hid_dim % n_heads == 0, f"hid_dim {hid_dim} is not a multiple of n_heads {n_heads}"
        self.hid_dim = hid_dim
        self.n_heads = n_heads
        self.head_dim = hid_dim // n_heads
        self.fc_q = nn.Linear(hid_dim, hid_dim)
        self.fc_k = nn.Linear(hid_dim, hid_dim)
        self.fc_v = nn.Linear(hid_dim, hid_dim)
        self.fc_o = nn.Linear(hid_dim, hid_dim)
        self.dropout = nn.Dropout(dropout)
        self.scale = torch.sqrt(torch.FloatTensor([self.head_dim])).to(device)

    def forward(self, query, key, value, mask=None):
        """query (B, Tq, D), key and value (B, Tk, D) -> (B, Tq, D) and the weights (B, H, Tq, Tk)."""
        batch_size = query.shape[0]
        Q = self.fc_q(query).view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)  # (B, H, Tq, hs)
        K = self.fc_k(key).view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)  # (B, H, Tk, hs)
        V = self.fc_v(value).view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)  # (B, H, Tk, hs)
        energy = torch.matmul(Q, K.permute(0, 1, 3, 2)) / self.scale  # (B, H, Tq, Tk)
        if mask is not None:
            energy = energy.masked_fill(mask == 0, -1e10)
        attention = torch.softmax(energy, dim=-1)
        x = torch.matmul(self.dropout(attention), V)  # (B, H, Tq, hs)
        x = x.permute(0, 2, 1, 3).contiguous().view(batch_size, -1, self.hid_dim)  # (B, Tq, D)
        return self.fc_o(x), attention


class TutorialPositionwiseFeedforwardLayer(nn.Module):
    """The notebook's `PositionwiseFeedforwardLayer`: fc_2(dropout(relu(fc_1(x))))."""

    def __init__(self, hid_dim, pf_dim, dropout):
        super().__init__()
        self.fc_1 = nn.Linear(hid_dim, pf_dim)
        self.fc_2 = nn.Linear(pf_dim, hid_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.fc_2(self.dropout(torch.relu(self.fc_1(x))))


class TutorialDecoder(nn.Module):
    """The notebook's `Decoder` (section "Decoder"): returns fc_out's scores and the *last* layer's
    encoder-attention weights (B, H, T, S)."""

    def __init__(self, output_dim, hid_dim, n_layers, n_heads, pf_dim, dropout, device, max_length=100):
        super().__init__()
        self.device = device
        self.tok_embedding = nn.Embedding(output_dim, hid_dim)
        self.pos_embedding = nn.Embedding(max_length, hid_dim)
        self.layers = nn.ModuleList([TutorialDecoderLayer(hid_dim, n_heads, pf_dim, dropout, device)
                                     for _ in range(n_layers)])
        self.fc_out = nn.Linear(hid_dim, output_dim)
        self.dropout = nn.Dropout(dropout)
        self.scale = torch.sqrt(torch.FloatTensor([hid_dim])).to(device)

    def forward(self, trg, enc_src, trg_mask, src_mask):
        """trg (B, T), enc_src (B, S, D), trg_mask (B, 1, T, T), src_mask (B, 1, 1, S) -> (B, T, V), (B, H, T, S)."""
        batch_size, trg_len = trg.shape
        pos = torch.arange(0, trg_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)  # (B, T)
        trg = self.dropout((self.tok_embedding(trg) * self.scale) + self.pos_embedding(pos))
        for layer in self.layers:
            trg, attention = layer(trg, enc_src, trg_mask, src_mask)
        return self.fc_out(trg), attention


class TutorialDecoderLayer(nn.Module):
    """The notebook's `DecoderLayer` (section "Decoder Layer"): self-attention, encoder attention, feed-forward,
    each post-LN with its own LayerNorm."""

    def __init__(self, hid_dim, n_heads, pf_dim, dropout, device):
        super().__init__()
        self.self_attn_layer_norm = nn.LayerNorm(hid_dim)
        self.enc_attn_layer_norm = nn.LayerNorm(hid_dim)
        self.ff_layer_norm = nn.LayerNorm(hid_dim)
        self.self_attention = TutorialMultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.encoder_attention = TutorialMultiHeadAttentionLayer(hid_dim, n_heads, dropout, device)
        self.positionwise_feedforward = TutorialPositionwiseFeedforwardLayer(hid_dim, pf_dim, dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, trg, enc_src, trg_mask, src_mask):
        _trg, _ = self.self_attention(trg, trg, trg, trg_mask)
        trg = self.self_attn_layer_norm(trg + self.dropout(_trg))
        _trg, attention = self.encoder_attention(trg, enc_src, enc_src, src_mask)
        trg = self.enc_attn_layer_norm(trg + self.dropout(_trg))
        _trg = self.positionwise_feedforward(trg)
        return self.ff_layer_norm(trg + self.dropout(_trg)), attention


class TutorialSeq2Seq(nn.Module):
    """The notebook's `Seq2Seq` (section "Seq2Seq"): the masks, then encoder and decoder.

    make_src_mask: (B, 1, 1, S), True off padding; make_trg_mask: padding & lower triangle, (B, 1, T, T)."""

    def __init__(self, encoder, decoder, src_pad_idx, trg_pad_idx, device):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_pad_idx = src_pad_idx
        self.trg_pad_idx = trg_pad_idx
        self.device = device

    def make_src_mask(self, src):
        return (src != self.src_pad_idx).unsqueeze(1).unsqueeze(2)  # (B, 1, 1, S)

    def make_trg_mask(self, trg):
        trg_pad_mask = (trg != self.trg_pad_idx).unsqueeze(1).unsqueeze(2)  # (B, 1, 1, T)
        trg_len = trg.shape[1]
        trg_sub_mask = torch.tril(torch.ones((trg_len, trg_len), device=self.device)).bool()  # (T, T)
        return trg_pad_mask & trg_sub_mask  # (B, 1, T, T)

    def forward(self, src, trg):
        src_mask, trg_mask = self.make_src_mask(src), self.make_trg_mask(trg)
        enc_src = self.encoder(src, src_mask)
        return self.decoder(trg, enc_src, trg_mask, src_mask)


def tutorial_initialize_weights(m):
    """The notebook's `initialize_weights`, applied with model.apply: xavier_uniform_ on every 2-D `weight`."""
    if hasattr(m, "weight") and m.weight.dim() > 1:
        nn.init.xavier_uniform_(m.weight.data)


def tutorial_translate_sentence(model, src_tensor, sos, eos, max_len=50):
    """The notebook's `translate_sentence` (section "Inference") from the source ids on: it encodes once, then
    feeds the whole prefix to the decoder at each step and takes argmax(2)[:, -1], at most max_len steps, stopping
    after <eos>. Returns the ids after <sos> (the notebook's trg_tokens[1:], <eos> included) and the last step's
    attention (1, H, T, S)."""
    model.eval()
    src_mask = model.make_src_mask(src_tensor)
    with torch.no_grad():
        enc_src = model.encoder(src_tensor, src_mask)
    trg_indexes = [sos]
    attention = None
    for _ in range(max_len):
        trg_tensor = torch.LongTensor(trg_indexes).unsqueeze(0).to(src_tensor.device)
        trg_mask = model.make_trg_mask(trg_tensor)
        with torch.no_grad():
            output, attention = model.decoder(trg_tensor, enc_src, trg_mask, src_mask)
        pred_token = output.argmax(2)[:, -1].item()
        trg_indexes.append(pred_token)
        if pred_token == eos:
            break
    return trg_indexes[1:], attention


# ---------------------------------------------------------------------------------------------------------------
# 2. pytorch: pytorch/tutorials, beginner_source/translation_transformer.py
#    nn.Transformer, seq-first (batch_first False), post-LN (norm_first False), ReLU, LayerNorm eps 1e-5, and
#    nn.Transformer's own final LayerNorm on each stack (transformer.encoder.norm, transformer.decoder.norm);
#    sinusoids in a persistent (maxlen, 1, D) buffer, maxlen 5000; token embeddings times math.sqrt(emb_size).
# ---------------------------------------------------------------------------------------------------------------


class PytorchPositionalEncoding(nn.Module):
    """The tutorial's `PositionalEncoding`: den = exp(-arange(0, D, 2) * log(10000) / D), sin on even and cos
    on odd columns, unsqueezed to (maxlen, 1, D) and registered as the persistent buffer `pos_embedding`."""

    def __init__(self, emb_size, dropout, maxlen=5000):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)  # (D/2,)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)  # (P, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        pos_embedding = pos_embedding.unsqueeze(-2)  # (P, 1, D)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", pos_embedding)

    def forward(self, token_embedding):
        """token_embedding (T, B, D) -> (T, B, D)."""
        return self.dropout(token_embedding + self.pos_embedding[:token_embedding.size(0), :])


class PytorchTokenEmbedding(nn.Module):
    """The tutorial's `TokenEmbedding`: embedding(tokens.long()) * math.sqrt(emb_size)."""

    def __init__(self, vocab_size, emb_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.emb_size = emb_size

    def forward(self, tokens):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


class PytorchSeq2SeqTransformer(nn.Module):
    """The tutorial's `Seq2SeqTransformer`: nn.Transformer with the tutorial's arguments (so seq-first, post-LN),
    a `generator` Linear, two TokenEmbeddings and one PositionalEncoding shared by both sides."""

    def __init__(self, num_encoder_layers, num_decoder_layers, emb_size, nhead, src_vocab_size, tgt_vocab_size,
                 dim_feedforward=512, dropout=0.1):
        super().__init__()
        with warnings.catch_warnings():  # nn.TransformerEncoder notes that seq-first layers take no nested tensors
            warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
            self.transformer = nn.Transformer(d_model=emb_size, nhead=nhead, num_encoder_layers=num_encoder_layers,
                                              num_decoder_layers=num_decoder_layers,
                                              dim_feedforward=dim_feedforward, dropout=dropout)
        self.generator = nn.Linear(emb_size, tgt_vocab_size)
        self.src_tok_emb = PytorchTokenEmbedding(src_vocab_size, emb_size)
        self.tgt_tok_emb = PytorchTokenEmbedding(tgt_vocab_size, emb_size)
        self.positional_encoding = PytorchPositionalEncoding(emb_size, dropout=dropout)

    def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
        """src (S, B), trg (T, B), the masks of `pytorch_create_mask` -> (T, B, V)."""
        src_emb = self.positional_encoding(self.src_tok_emb(src))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
        outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None,
                                src_padding_mask, tgt_padding_mask, memory_key_padding_mask)
        return self.generator(outs)

    def encode(self, src, src_mask):
        return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)), src_mask)

    def decode(self, tgt, memory, tgt_mask):
        return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)), memory, tgt_mask)


def pytorch_generate_square_subsequent_mask(sz, device=None):
    """The tutorial's `generate_square_subsequent_mask`: float (sz, sz), 0.0 on and below the diagonal, -inf
    above (the tutorial reads its global DEVICE; here the caller passes the inputs' device)."""
    mask = (torch.triu(torch.ones((sz, sz), device=device)) == 1).transpose(0, 1)
    return mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, float(0.0))


def pytorch_create_mask(src, tgt, pad_idx):
    """The tutorial's `create_mask` for seq-first src (S, B) and tgt (T, B): an all-False bool (S, S) source mask,
    the float causal mask, and bool (B, S) / (B, T) padding masks, True on padding (PAD_IDX is an argument here)."""
    src_seq_len, tgt_seq_len = src.shape[0], tgt.shape[0]
    tgt_mask = pytorch_generate_square_subsequent_mask(tgt_seq_len, src.device)
    src_mask = torch.zeros((src_seq_len, src_seq_len), device=src.device).type(torch.bool)
    src_padding_mask = (src == pad_idx).transpose(0, 1)
    tgt_padding_mask = (tgt == pad_idx).transpose(0, 1)
    return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask


def pytorch_greedy_decode(model, src, src_mask, max_len, start_symbol, eos_idx):
    """The tutorial's `greedy_decode`: src (S, 1) seq-first; encode once with the all-False (S, S) mask and no
    padding mask, then max_len - 1 steps of decode(ys) with the causal mask cast to bool (True above the diagonal),
    generator on the last position, torch.max, stop after <eos>. Returns ys (T, 1), the start symbol included."""
    memory = model.encode(src, src_mask)
    ys = torch.ones(1, 1).fill_(start_symbol).type(torch.long).to(src.device)
    for _ in range(max_len - 1):
        tgt_mask = pytorch_generate_square_subsequent_mask(ys.size(0), src.device).type(torch.bool)
        out = model.decode(ys, memory, tgt_mask).transpose(0, 1)  # (1, T, D)
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.item()
        ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
        if next_word == eos_idx:
            break
    return ys


# ---------------------------------------------------------------------------------------------------------------
# 3. annotated: harvardnlp/annotated-transformer, the_annotated_transformer.py
#    Pre-LN sublayers (x + dropout(sublayer(norm(x)))) and a final `norm` on each stack; its own LayerNorm
#    (a_2, b_2, eps 1e-6 added to the unbiased std); masked scores filled with -1e9; sinusoids in a persistent
#    (1, max_len, D) buffer `pe`, max_len 5000; token embeddings times math.sqrt(d_model).
# ---------------------------------------------------------------------------------------------------------------


class AnnotatedEncoderDecoder(nn.Module):
    """Part 1 "Model Architecture", `EncoderDecoder`. forward returns the decoder's output (B, T, D), before the
    generator."""

    def __init__(self, encoder, decoder, src_embed, tgt_embed, generator):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_embed = src_embed
        self.tgt_embed = tgt_embed
        self.generator = generator

    def forward(self, src, tgt, src_mask, tgt_mask):
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)

    def encode(self, src, src_mask):
        return self.encoder(self.src_embed(src), src_mask)

    def decode(self, memory, src_mask, tgt, tgt_mask):
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)


class AnnotatedGenerator(nn.Module):
    """`Generator`: log_softmax(proj(x)). The pre-softmax scores are `proj`'s output."""

    def __init__(self, d_model, vocab):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, x):
        return F.log_softmax(self.proj(x), dim=-1)


def annotated_clones(module, N):
    """`clones`: N deep copies in a ModuleList."""
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


class AnnotatedLayerNorm(nn.Module):
    """`LayerNorm`: a_2 * (x - mean) / (std + eps) + b_2, torch's std (unbiased, N - 1), eps 1e-6 outside the root."""

    def __init__(self, features, eps=1e-6):
        super().__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


class AnnotatedEncoder(nn.Module):
    """`Encoder`: N clones of the layer, then `norm`."""

    def __init__(self, layer, N):
        super().__init__()
        self.layers = annotated_clones(layer, N)
        self.norm = AnnotatedLayerNorm(layer.size)

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class AnnotatedSublayerConnection(nn.Module):
    """`SublayerConnection`: x + dropout(sublayer(norm(x))) (the norm first, as the source notes)."""

    def __init__(self, size, dropout):
        super().__init__()
        self.norm = AnnotatedLayerNorm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        return x + self.dropout(sublayer(self.norm(x)))


class AnnotatedEncoderLayer(nn.Module):
    """`EncoderLayer`: self_attn and feed_forward, each in sublayer[0], sublayer[1]."""

    def __init__(self, size, self_attn, feed_forward, dropout):
        super().__init__()
        self.self_attn = self_attn
        self.feed_forward = feed_forward
        self.sublayer = annotated_clones(AnnotatedSublayerConnection(size, dropout), 2)
        self.size = size

    def forward(self, x, mask):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
        return self.sublayer[1](x, self.feed_forward)


class AnnotatedDecoder(nn.Module):
    """`Decoder`: N clones of the layer, then `norm`."""

    def __init__(self, layer, N):
        super().__init__()
        self.layers = annotated_clones(layer, N)
        self.norm = AnnotatedLayerNorm(layer.size)

    def forward(self, x, memory, src_mask, tgt_mask):
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)


class AnnotatedDecoderLayer(nn.Module):
    """`DecoderLayer`: self_attn, src_attn, feed_forward in sublayer[0..2]."""

    def __init__(self, size, self_attn, src_attn, feed_forward, dropout):
        super().__init__()
        self.size = size
        self.self_attn = self_attn
        self.src_attn = src_attn
        self.feed_forward = feed_forward
        self.sublayer = annotated_clones(AnnotatedSublayerConnection(size, dropout), 3)

    def forward(self, x, memory, src_mask, tgt_mask):
        m = memory
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
        x = self.sublayer[1](x, lambda x: self.src_attn(x, m, m, src_mask))
        return self.sublayer[2](x, self.feed_forward)


def annotated_subsequent_mask(size):
    """`subsequent_mask`: (1, size, size), True on and below the diagonal."""
    attn_shape = (1, size, size)
    return torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8) == 0


def annotated_attention(query, key, value, mask=None, dropout=None):
    """`attention`: softmax(q k^T / sqrt(d_k)) v with masked_fill(mask == 0, -1e9); returns output and weights."""
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)  # (B, H, Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class AnnotatedMultiHeadedAttention(nn.Module):
    """`MultiHeadedAttention`: linears[0..2] project q, k, v, linears[3] mixes the heads; the weights of the
    last call stay in `self.attn` (B, H, Tq, Tk), which is how the source's visualisation reads them."""

    def __init__(self, h, d_model, dropout=0.1):
        super().__init__()
        assert d_model % h == 0, f"d_model {d_model} is not a multiple of h {h}"
        self.d_k = d_model // h
        self.h = h
        self.linears = annotated_clones(nn.Linear(d_model, d_model), 4)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)  # the same mask for every head
        nbatches = query.size(0)
        query, key, value = [lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)  # (B, H, T, d_k)
                             for lin, x in zip(self.linears, (query, key, value))]
        x, self.attn = annotated_attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)  # (B, Tq, D)
        return self.linears[-1](x)


class AnnotatedPositionwiseFeedForward(nn.Module):
    """`PositionwiseFeedForward`: w_2(dropout(relu(w_1(x))))."""

    def __init__(self, d_model, d_ff, dropout=0.1):
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x).relu()))


class AnnotatedEmbeddings(nn.Module):
    """`Embeddings`: lut(x) * math.sqrt(d_model)."""

    def __init__(self, d_model, vocab):
        super().__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


class AnnotatedPositionalEncoding(nn.Module):
    """`PositionalEncoding`: div_term = exp(arange(0, D, 2) * -(log(10000.0) / D)), sin on even and cos on odd
    columns, the persistent buffer `pe` (1, max_len, D)."""

    def __init__(self, d_model, dropout, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1)  # (P, 1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))  # (D/2,)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))  # (1, P, D)

    def forward(self, x):
        x = x + self.pe[:, : x.size(1)].requires_grad_(False)
        return self.dropout(x)


def annotated_make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, dropout=0.1):
    """`make_model`: deep copies of one attention, feed-forward and position module, src_embed / tgt_embed as
    nn.Sequential(Embeddings, PositionalEncoding) (so keys src_embed.0.lut.weight, src_embed.1.pe), then
    xavier_uniform_ on every parameter of two or more dimensions."""
    c = copy.deepcopy
    attn = AnnotatedMultiHeadedAttention(h, d_model)
    ff = AnnotatedPositionwiseFeedForward(d_model, d_ff, dropout)
    position = AnnotatedPositionalEncoding(d_model, dropout)
    model = AnnotatedEncoderDecoder(
        AnnotatedEncoder(AnnotatedEncoderLayer(d_model, c(attn), c(ff), dropout), N),
        AnnotatedDecoder(AnnotatedDecoderLayer(d_model, c(attn), c(attn), c(ff), dropout), N),
        nn.Sequential(AnnotatedEmbeddings(d_model, src_vocab), c(position)),
        nn.Sequential(AnnotatedEmbeddings(d_model, tgt_vocab), c(position)),
        AnnotatedGenerator(d_model, tgt_vocab),
    )
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    return model


def annotated_make_std_mask(tgt, pad):
    """`Batch.make_std_mask`: (tgt != pad).unsqueeze(-2) & subsequent_mask, (B, T, T)."""
    tgt_mask = (tgt != pad).unsqueeze(-2)
    return tgt_mask & annotated_subsequent_mask(tgt.size(-1)).type_as(tgt_mask.data)


def annotated_greedy_decode(model, src, src_mask, max_len, start_symbol):
    """`greedy_decode` (section "Greedy Decoding"): always max_len - 1 steps, no stop at </s> (`check_outputs`
    cuts the text at the first "</s>" afterwards). Returns ys (1, max_len), the start symbol included."""
    memory = model.encode(src, src_mask)
    ys = torch.zeros(1, 1).fill_(start_symbol).type_as(src.data)
    for _ in range(max_len - 1):
        out = model.decode(memory, src_mask, ys, annotated_subsequent_mask(ys.size(1)).type_as(src.data))
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.data[0]
        ys = torch.cat([ys, torch.zeros(1, 1).type_as(src.data).fill_(next_word)], dim=1)
    return ys


# ---------------------------------------------------------------------------------------------------------------
# The common interface
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Specials:
    """A family's special tokens in id order, as its vocabulary builds them, and which is which."""

    tokens: tuple
    sos: int
    eos: int
    pad: int
    unk: int


SPECIALS = {
    # torchtext.legacy Field(init_token='<sos>', eos_token='<eos>') with the default unk '<unk>' and pad '<pad>':
    # Field.build_vocab orders them [unk, pad, init, eos] (pytorch/text, torchtext/legacy/data/field.py), and the
    # legacy Vocab puts specials first.
    "tutorial": Specials(("<unk>", "<pad>", "<sos>", "<eos>"), sos=2, eos=3, pad=1, unk=0),
    # UNK_IDX, PAD_IDX, BOS_IDX, EOS_IDX = 0, 1, 2, 3; build_vocab_from_iterator(..., specials=special_symbols,
    # special_first=True).
    "pytorch": Specials(("<unk>", "<pad>", "<bos>", "<eos>"), sos=2, eos=3, pad=1, unk=0),
    # build_vocabulary: specials=["<s>", "</s>", "<blank>", "<unk>"] (special_first defaults to True);
    # collate_batch: bs_id 0, eos_id 1, pad_id 2 (Batch's pad=2 "<blank>").
    "annotated": Specials(("<s>", "</s>", "<blank>", "<unk>"), sos=0, eos=1, pad=2, unk=3),
}


def specials(family: str) -> list[str]:
    """The family's special tokens in id order (ids 0..3)."""
    _check_family(family)
    return list(SPECIALS[family].tokens)


def special_ids(family: str) -> dict:
    """{"sos", "eos", "pad", "unk"} -> id, in the family's vocabulary."""
    _check_family(family)
    s = SPECIALS[family]
    return {"sos": s.sos, "eos": s.eos, "pad": s.pad, "unk": s.unk}


def max_new_tokens(family: str, max_len: int) -> int:
    """How many tokens `greedy(..., max_len)` may write: the tutorial's loop runs max_len steps, the other two
    max_len - 1 (their max_len counts the start symbol)."""
    _check_family(family)
    return max_len if family == "tutorial" else max_len - 1


def build(family: str, src_vocab: int, tgt_vocab: int, d_model: int, n_layers: int, n_heads: int, d_ff: int,
          seed: int, max_len: int = 100) -> nn.Module:
    """The family's own model in eval mode on the CPU, n_layers encoder and n_layers decoder layers, dropout 0.1
    as published (off in eval).

    The family's own initialisation runs first (under a forked, seeded global RNG, which is left as it was), then
    every parameter is drawn again from `seed` (`redraw`) so that outputs and attention are far from uniform
    and the LayerNorms are not the identity. `max_len` is the tutorial's `max_length` (rows of its learned
    `pos_embedding`); the sinusoid families keep their published 5000-row buffers whatever it is, so their
    state_dicts have the published shapes.
    """
    _check_family(family)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if family == "tutorial":
            device, pad = torch.device("cpu"), SPECIALS["tutorial"].pad
            enc = TutorialEncoder(src_vocab, d_model, n_layers, n_heads, d_ff, 0.1, device, max_length=max_len)
            dec = TutorialDecoder(tgt_vocab, d_model, n_layers, n_heads, d_ff, 0.1, device, max_length=max_len)
            model = TutorialSeq2Seq(enc, dec, pad, pad, device)
            model.apply(tutorial_initialize_weights)
        elif family == "pytorch":
            model = PytorchSeq2SeqTransformer(n_layers, n_layers, d_model, n_heads, src_vocab, tgt_vocab, d_ff)
            for p in model.parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)
        else:
            model = annotated_make_model(src_vocab, tgt_vocab, N=n_layers, d_model=d_model, d_ff=d_ff, h=n_heads)
    redraw(model, seed)
    return model.eval()


def redraw(model: nn.Module, seed: int) -> None:
    """Draw every parameter again from a generator seeded with `seed`, in module order.

    LayerNorm gains 1 + 0.2 N(0, 1) and biases 0.1 N(0, 1); token tables N(0, 1/D) (times sqrt(D) they come out at
    unit scale, like the sinusoids); the tutorial's learned positions N(0, 1); every other matrix (Linear weights,
    nn.MultiheadAttention's in_proj_weight) N(0, (1.2 / sqrt(fan_in))^2), 0.3 at fan_in 16; every other bias
    0.1 N(0, 1). At d_model 16 to 256 the mean largest attention weight comes out near 0.2 to 0.7 (neither uniform
    nor one-hot) and the logits move with the source. Random post-LN models (tutorial, pytorch) still tend to
    repeat one token under greedy decoding: compare logits along a forced prefix as well as greedy output."""
    g = torch.Generator().manual_seed(seed)
    learned_positions = ({id(model.encoder.pos_embedding), id(model.decoder.pos_embedding)}
                         if isinstance(model, TutorialSeq2Seq) else set())
    with torch.no_grad():
        for module in model.modules():
            for name, p in module.named_parameters(recurse=False):
                n = torch.randn(p.shape, generator=g)
                if isinstance(module, (nn.LayerNorm, AnnotatedLayerNorm)):
                    p.copy_(1 + 0.2 * n if name in ("weight", "a_2") else 0.1 * n)
                elif isinstance(module, nn.Embedding):
                    p.copy_(n if id(module) in learned_positions else n / math.sqrt(p.shape[1]))
                elif p.dim() > 1:
                    p.copy_(n * 1.2 / math.sqrt(p.shape[1]))
                else:
                    p.copy_(0.1 * n)


def _check_ids(src_ids, tgt_ids=None, one=False):
    for name, ids in (("src_ids", src_ids), ("tgt_in_ids", tgt_ids)):
        if ids is None:
            continue
        if not (isinstance(ids, torch.Tensor) and ids.dim() == 2 and not ids.is_floating_point()):
            raise ValueError(f"{name}: pass a batch-first (B, length) LongTensor, not {type(ids).__name__} "
                             f"{tuple(getattr(ids, 'shape', ()))}")
        if one and ids.size(0) != 1:
            raise ValueError(f"{name}: pass one sentence, shape (1, length), not {tuple(ids.shape)}")
    if tgt_ids is not None and src_ids.size(0) != tgt_ids.size(0):
        raise ValueError(f"src_ids has {src_ids.size(0)} rows but tgt_in_ids {tgt_ids.size(0)}")


def _pytorch_forward(model, src_ids, tgt_in_ids, pad):
    """The tutorial's training/evaluation call: seq-first ids, create_mask, model(...) -> (T, B, V)."""
    src, tgt = src_ids.t(), tgt_in_ids.t()  # (S, B), (T, B)
    src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = pytorch_create_mask(src, tgt, pad)
    with warnings.catch_warnings():  # the tutorial mixes a float causal mask with bool padding masks
        warnings.filterwarnings("ignore", message=".*mismatched key_padding_mask and attn_mask.*")
        return model(src, tgt, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask)


def logits(family: str, model: nn.Module, src_ids, tgt_in_ids, pad: int) -> torch.Tensor:
    """Pre-softmax next-token scores (B, T, V) for src_ids (B, S) and decoder inputs tgt_in_ids (B, T), through
    the family's own forward and masks: tutorial Seq2Seq.forward (fc_out); pytorch Seq2SeqTransformer.forward with
    create_mask, seq-first inside (generator); annotated EncoderDecoder.forward with Batch's masks, then
    generator.proj (the scores before its log_softmax)."""
    _check_family(family)
    _check_ids(src_ids, tgt_in_ids)
    with torch.no_grad():
        if family == "tutorial":
            assert pad == model.src_pad_idx == model.trg_pad_idx, \
                f"pad {pad}: this tutorial model masks id {model.src_pad_idx} (its Seq2Seq's src_pad_idx)"
            output, _ = model(src_ids, tgt_in_ids)
            return output
        if family == "pytorch":
            return _pytorch_forward(model, src_ids, tgt_in_ids, pad).transpose(0, 1)  # (B, T, V)
        src_mask = (src_ids != pad).unsqueeze(-2)  # (B, 1, S), Batch.src_mask
        out = model(src_ids, tgt_in_ids, src_mask, annotated_make_std_mask(tgt_in_ids, pad))  # (B, T, D)
        return model.generator.proj(out)


def greedy(family: str, model: nn.Module, src_ids, sos: int, eos: int, pad: int, max_len: int,
           raw: bool = False) -> list[int]:
    """The family's own greedy loop on one source sentence src_ids (1, S), given as the tutorial feeds it
    (its start and end tokens included).

    Returns the ids written after the start symbol, up to and including the first `eos` where one comes.
    The loops differ in what max_len counts (`max_new_tokens`) and in stopping: tutorial (translate_sentence)
    and pytorch (greedy_decode) stop after <eos>; annotated (greedy_decode) always runs max_len - 1 steps and
    its check_outputs cuts the text at the first </s>, as done here. raw=True returns what the loop itself
    returns instead: the tutorial's trg_indexes[1:], the other two's whole ys, start symbol included.
    """
    _check_family(family)
    _check_ids(src_ids, one=True)
    with torch.no_grad():
        if family == "tutorial":
            assert pad == model.src_pad_idx, f"pad {pad}: this tutorial model masks id {model.src_pad_idx}"
            ids, _ = tutorial_translate_sentence(model, src_ids, sos, eos, max_len)
            return ids
        if family == "pytorch":
            src = src_ids.view(-1, 1)  # (S, 1), as translate() shapes it
            src_mask = torch.zeros(src.size(0), src.size(0)).type(torch.bool)  # translate(): no padding mask
            ys = pytorch_greedy_decode(model, src, src_mask, max_len, sos, eos).flatten().tolist()
        else:
            ys = annotated_greedy_decode(model, src_ids, (src_ids != pad).unsqueeze(-2), max_len, sos)[0].tolist()
    if raw:
        return ys
    out = ys[1:]
    return out[: out.index(eos) + 1] if eos in out else out


@dataclass
class MHACall:
    """One call of an nn.MultiheadAttention inside the pytorch family's forward, as the layer made it, and
    the same call again with need_weights=True, average_attn_weights=False."""

    name: str  # e.g. "encoder.0.self_attn", "decoder.1.multihead_attn"
    query: torch.Tensor  # (Tq, B, D), seq-first as the layer passes it
    key: torch.Tensor  # (Tk, B, D)
    value: torch.Tensor  # (Tk, B, D)
    output: torch.Tensor  # (Tq, B, D): what the layer's own call (need_weights=False) returned
    weights: torch.Tensor  # (B, H, Tq, Tk)
    weighted_output: torch.Tensor  # (Tq, B, D): what the need_weights=True call returned


def pytorch_attention_calls(model: nn.Module, src_ids, tgt_in_ids, pad: int) -> list:
    """Every nn.MultiheadAttention call of one forward pass of the pytorch family (create_mask's masks), in
    call order: each encoder layer's self_attn, then each decoder layer's self_attn and multihead_attn.

    A forward pre-hook records the arguments each layer gives its attention: post-LN, so a decoder layer's
    cross-attention query is norm1(x + self-attention), and its keys are the memory after nn.Transformer's final
    encoder norm. Each call is then made again with need_weights=True, average_attn_weights=False.
    """
    _check_ids(src_ids, tgt_in_ids)
    names = {m: f"{side}.{i}.{attr}" for side, stack in (("encoder", model.transformer.encoder),
                                                        ("decoder", model.transformer.decoder))
             for i, layer in enumerate(stack.layers) for attr in ("self_attn", "multihead_attn")
             if (m := getattr(layer, attr, None)) is not None}
    recorded = []

    def pre_hook(module, args, kwargs):
        recorded.append((module, args, dict(kwargs)))

    def post_hook(module, args, kwargs, output):
        recorded[-1] += (output[0],)

    handles = [h for m in names for h in (m.register_forward_pre_hook(pre_hook, with_kwargs=True),
                                          m.register_forward_hook(post_hook, with_kwargs=True))]
    try:
        with torch.no_grad():
            _pytorch_forward(model, src_ids, tgt_in_ids, pad)
    finally:
        for h in handles:
            h.remove()
    calls = []
    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*mismatched key_padding_mask and attn_mask.*")
        for module, args, kwargs, output in recorded:
            assert not module.batch_first, "the tutorial's nn.Transformer is seq-first"
            out, weights = module(*args, **{**kwargs, "need_weights": True, "average_attn_weights": False})
            calls.append(MHACall(names[module], *args[:3], output, weights, out))
    return calls


def attention(family: str, model: nn.Module, src_ids, tgt_in_ids, pad: int) -> dict:
    """Every attention map the family exposes for one sentence pair, src_ids (1, S) and decoder inputs
    tgt_in_ids (1, T), as float numpy arrays after the softmax:

    tutorial   {"cross_last": (H, T, S)}: the attention its Decoder returns (its last layer's encoder_attention)
    annotated  {"enc": (L, H, S, S), "dec": (L, H, T, T), "cross": (L, H, T, S)}: each layer's `.attn` after
               one EncoderDecoder.forward (self_attn, self_attn, src_attn)
    pytorch    the same three, from each layer's MultiheadAttention called again with need_weights=True,
               average_attn_weights=False on the inputs the layer gave it (`pytorch_attention_calls`)
    """
    _check_family(family)
    _check_ids(src_ids, tgt_in_ids, one=True)
    if family == "tutorial":
        with torch.no_grad():
            _, cross = model(src_ids, tgt_in_ids)  # (1, H, T, S)
        return {"cross_last": cross[0].numpy()}
    if family == "pytorch":
        calls = pytorch_attention_calls(model, src_ids, tgt_in_ids, pad)
        pick = lambda prefix, attr: np.stack([c.weights[0].numpy() for c in calls
                                              if c.name.startswith(prefix) and c.name.endswith(attr)])
        return {"enc": pick("encoder.", ".self_attn"), "dec": pick("decoder.", ".self_attn"),
                "cross": pick("decoder.", ".multihead_attn")}
    logits("annotated", model, src_ids, tgt_in_ids, pad)  # one forward pass leaves each layer's .attn
    stack = lambda maps: np.stack([m[0].numpy() for m in maps])  # L x (1, H, Tq, Tk) -> (L, H, Tq, Tk)
    return {"enc": stack([layer.self_attn.attn for layer in model.encoder.layers]),
            "dec": stack([layer.self_attn.attn for layer in model.decoder.layers]),
            "cross": stack([layer.src_attn.attn for layer in model.decoder.layers])}
