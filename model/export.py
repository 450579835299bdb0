"""Take the data out: a result as JSON, CSV, .npz or BertViz's arguments, each saying what produced it.

    prov = provenance(tr, heads_off="cross.2", beam=1)   # checkpoint, interventions, decoding, versions
    result_json(r, prov)                                   # one `model.translate --json` line, as a dict
    map_csv(r.cross_attentions[2, 3], r.tgt_tokens, r.src_tokens)   # one head's map, a row per cell
    steps_csv(r)                                           # the decoding trace, a row per step
    maps_npz(r, prov) / load_maps_npz(data)                # every map and the tokens, as numpy
    bertviz_inputs(r), bertviz_npz(r) / load_bertviz_npz(path)   # bertviz.model_view(**...)

Numbers keep full precision: CSV floats are written with repr, so reading them back gives the
same float32 values; .npz files hold only numeric and unicode arrays (no pickle: they load with
np.load(..., allow_pickle=False)). torch is imported only where BertViz needs tensors.
"""

import csv
import io
import json
import re
import tomllib
from importlib import metadata
from pathlib import Path

import numpy as np

from .translator import MAX_OUTPUT

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
# What a JSON or .npz download says of its numbers (the page's downloads, views/export.py): they are the library's.
NUMBERING = ("Layers, heads, steps and positions in this file count from 0, as its arrays index them and as the "
             "command-line tools do (--mask-heads, --force); the page and the file names count layers, heads and steps "
             "from 1: layer 0 here is the page's layer 1, step 0 its step 1.")
MAP_KEYS = ("encoder_attentions", "decoder_attentions", "cross_attentions")  # (L, H, Q, K) each
TOKEN_KEYS = ("src_tokens", "tgt_tokens", "output_tokens")


def package() -> dict:
    """This project's name and version (pyproject.toml's [project], else the installed metadata)."""
    try:
        project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
        return {"name": project["name"], "version": project["version"]}
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        name = "transformer-explorer"
        try:
            return {"name": name, "version": metadata.version(name)}
        except metadata.PackageNotFoundError:
            return {"name": name, "version": "unknown"}


def provenance(translator, heads_off: str | None = "", force: dict | None = None, beam: int = 1, top_k: int = 5,
               max_len: int = MAX_OUTPUT) -> dict:
    """What produced a result, as plain JSON-ready data (the `provenance` key of docs/contract.md):

        {"checkpoint": {"name", "path", "sha256"},           # Translator.checkpoint_id
         "heads_off": "enc.0.3,cross.2.*",                   # the SPEC as given, 0-based; "" for none
         "force": {"2": "cat"},                              # {step: token}, 0-based, keys as strings
         "decoding": {"beam": 1, "greedy": True, "max_len": 50, "top_k": 5},
         "package": {"name", "version", "torch"},
         "device": "cpu (2 threads)"}

    The arguments are those given to Translator.translate / beam, in the CLIs' 0-based syntax.
    """
    import torch  # already loaded by the translator

    if force and any(not isinstance(step, int) for step in force):
        raise TypeError(f"force maps 0-based step numbers to tokens, got keys {list(force)}")
    if not isinstance(beam, int) or beam < 1:
        raise ValueError(f"beam width must be a whole number of at least 1, got {beam!r}")
    return {
        "checkpoint": translator.checkpoint_id,
        "heads_off": heads_off or "",
        "force": {str(step): token for step, token in sorted((force or {}).items())},
        "decoding": {"beam": beam, "greedy": beam == 1, "max_len": max_len, "top_k": top_k},
        "package": {**package(), "torch": str(torch.__version__)},  # a str subclass: plain for JSON
        "device": translator.device_name,
    }


def numbered(doc: dict) -> dict:
    """A JSON document with the numbering of its numbers stated first (NUMBERING)."""
    return {"numbering": NUMBERING, **doc}


def result_json(result, provenance: dict) -> dict:
    """One `model.translate --json` line as a dict: `result.to_json()` and its `provenance`."""
    return {**result.to_json(), "provenance": provenance}


# CSV ----------------------------------------------------------------------------------------------
# A link chooses the sentence, so a token can be anything, "=HYPERLINK(...)" included. A spreadsheet
# runs a cell that starts with = + - @ (or a tab or carriage return) as a formula (OWASP "CSV Injection"):
# such a text cell gets a leading single quote, and every text cell is quoted. Numbers stay numbers.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")  # ASCII: "-١" is text, not a number


def csv_cell(value):
    """A value as a spreadsheet-safe cell: text that a spreadsheet would run as a formula gets a leading '."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not NUMBER.fullmatch(value):
        return "'" + value
    return value


def _csv(header: list, rows) -> str:
    """Rows as CSV text, every cell through csv_cell; text quoted, numbers (ints, floats: repr, exact) bare."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    writer.writerow([csv_cell(h) for h in header])
    writer.writerows([csv_cell(v) for v in row] for row in rows)
    return out.getvalue()


def table_csv(df) -> str:
    """A pandas table (the page's statistics, beam and position tables) as CSV, by the same rules."""
    return _csv([str(c) for c in df.columns], df.itertuples(index=False))


def map_csv(weights, query_tokens: list, key_tokens: list) -> str:
    """One attention map (Q, K) as CSV: `query_pos,query_token,key_pos,key_token,weight`, a row per cell.

    query_tokens name the rows: the page names a decoder row (cross- and decoder self-attention) by the token it
    read and the token it chose, "<sos> → a" (viz.labels.token_labels(r, "tgt"); views/export.py map_rows): pass
    those for a CSV that names its rows as the page does. Rows go query by query, keys in order (Q * K rows).
    Positions count from 0, so a token that occurs twice stays two rows apart. Tokens are quoted text (csv_cell:
    one that a spreadsheet would run as a formula starts with '); weights with repr, so float32 values read back
    exactly. To read it with pandas keep tokens as text ("nan", "1"):
        pd.read_csv(io.StringIO(text), dtype={"query_token": str, "key_token": str}, keep_default_na=False)
    """
    weights = np.asarray(weights)
    if weights.shape != (len(query_tokens), len(key_tokens)):
        raise ValueError(f"map_csv takes one map of shape (queries, keys) = ({len(query_tokens)}, "
                         f"{len(key_tokens)}) for the tokens given, got an array of shape {weights.shape}")
    rows = ((q, qt, k, kt, float(weights[q, k]))
            for q, qt in enumerate(query_tokens) for k, kt in enumerate(key_tokens))
    return _csv(["query_pos", "query_token", "key_pos", "key_token", "weight"], rows)


def steps_csv(result) -> str:
    """The decoding trace as CSV, a row per generated token:

        step, token, prob, entropy, runner_up, runner_up_prob, top1_token, top1_prob, ..., topK_prob

    step counts from 1, as on the page (the CLIs' --force counts from 0: step n here is --force n-1).
    entropy is in nats; runner_up is the most likely token other than the chosen one. Probabilities
    with repr (full precision); a step with fewer than K alternatives leaves the rest empty.
    """
    k = max((len(s.top) for s in result.steps), default=0)
    header = ["step", "token", "prob", "entropy", "runner_up", "runner_up_prob",
              *(f"top{i}_{what}" for i in range(1, k + 1) for what in ("token", "prob"))]
    rows = []
    for n, s in enumerate(result.steps, 1):
        top = [x for token, p in s.top for x in (token, float(p))]
        runner, runner_p = s.runner_up
        rows.append([n, s.token, float(s.prob), float(s.entropy), runner, float(runner_p),
                     *top, *[""] * (2 * k - len(top))])
    return _csv(header, rows)


# npz ----------------------------------------------------------------------------------------------
def _check_maps(result):
    if any(np.asarray(getattr(result, key)).ndim != 4 for key in MAP_KEYS):
        raise ValueError("this result has no attention maps: translate with with_maps=True to export them")


def _npz_bytes(arrays: dict) -> bytes:
    out = io.BytesIO()
    np.savez_compressed(out, **arrays)
    return out.getvalue()


def _npz_open(data):
    """np.load of bytes or a path, refusing pickles: our files hold numbers and unicode only."""
    return np.load(io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data, allow_pickle=False)


def maps_npz(result, provenance: dict) -> bytes:
    """Every map and the tokens as a compressed .npz (np.savez_compressed):

        encoder_attentions (L, H, S, S), decoder_attentions (L, H, T, T), cross_attentions (L, H, T, S)
                              float32, as in docs/contract.md (Attention maps)
        src_tokens (S,), tgt_tokens (T,), output_tokens   unicode arrays
        provenance            a JSON string, as a 0-d unicode array

    Read it back with load_maps_npz, or np.load(path, allow_pickle=False).
    """
    _check_maps(result)
    arrays = {key: np.asarray(getattr(result, key), dtype=np.float32) for key in MAP_KEYS}
    arrays.update({key: np.array(getattr(result, key), dtype=str) for key in TOKEN_KEYS})
    arrays["provenance"] = np.array(json.dumps(provenance, ensure_ascii=False))
    return _npz_bytes(arrays)


def load_maps_npz(data: bytes | str | Path) -> dict:
    """A maps_npz file (bytes or path) back as {map: float32 array, tokens: list of str, "provenance": dict}."""
    with _npz_open(data) as z:
        out = {key: z[key] for key in MAP_KEYS}
        out.update({key: z[key].tolist() for key in TOKEN_KEYS})
        out["provenance"] = json.loads(z["provenance"].item())
    return out


# BertViz ------------------------------------------------------------------------------------------
BERTVIZ_MAPS = {"encoder_attention": "encoder_attentions", "decoder_attention": "decoder_attentions",
                "cross_attention": "cross_attentions"}  # model_view's argument -> Translation field


def _bertviz_args(maps: dict, encoder_tokens: list, decoder_tokens: list) -> dict:
    """(L, H, Q, K) arrays -> model_view's tuples of per-layer (1, H, Q, K) float32 tensors."""
    import torch

    args = {arg: tuple(torch.tensor(layer[None], dtype=torch.float32) for layer in np.asarray(maps[arg]))
            for arg in BERTVIZ_MAPS}
    return {**args, "encoder_tokens": list(encoder_tokens), "decoder_tokens": list(decoder_tokens)}


def bertviz_inputs(result) -> dict:
    """The keyword arguments of bertviz.model_view / head_view for an encoder-decoder model:

        encoder_attention  tuple of L tensors (1, H, S, S)   keys and queries: encoder_tokens
        decoder_attention  tuple of L tensors (1, H, T, T)   keys and queries: decoder_tokens
        cross_attention    tuple of L tensors (1, H, T, S)   queries: decoder_tokens, keys: encoder_tokens
        encoder_tokens     the S source tokens, <sos>/<eos> included
        decoder_tokens     the T decoder inputs (<sos>, then every generated token but the last)

    float32, as Hugging Face's output_attentions, which is what BertViz reads.
    Usage: `bertviz.model_view(**bertviz_inputs(r))` in a notebook.
    """
    _check_maps(result)
    return _bertviz_args({arg: getattr(result, field) for arg, field in BERTVIZ_MAPS.items()},
                         result.src_tokens, result.tgt_tokens)


def bertviz_npz(result) -> bytes:
    """bertviz_inputs(result) as a compressed .npz: each map with its layers stacked, (L, H, Q, K)
    float32, under model_view's argument names, the tokens as unicode arrays, and `numbering` (NUMBERING, a 0-d
    unicode array: the layers count from 0, as BertViz shows them). In a notebook:

        from bertviz import model_view
        from model.export import load_bertviz_npz
        model_view(**load_bertviz_npz("maps.bertviz.npz"))

    Without this project: z = np.load(path); pass each map as tuple(torch.from_numpy(z[k][:, None]))
    (one (1, H, Q, K) tensor per layer) and each token array as z[k].tolist().
    """
    _check_maps(result)
    arrays = {arg: np.asarray(getattr(result, field), dtype=np.float32) for arg, field in BERTVIZ_MAPS.items()}
    return _npz_bytes({**arrays, "encoder_tokens": np.array(result.src_tokens, dtype=str),
                       "decoder_tokens": np.array(result.tgt_tokens, dtype=str), "numbering": np.array(NUMBERING)})


def load_bertviz_npz(path: bytes | str | Path) -> dict:
    """A bertviz_npz file (path or bytes) back as model_view's keyword arguments: the same dict as bertviz_inputs."""
    with _npz_open(path) as z:
        return _bertviz_args({arg: z[arg] for arg in BERTVIZ_MAPS}, z["encoder_tokens"].tolist(),
                             z["decoder_tokens"].tolist())
