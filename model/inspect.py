"""Look inside: one query token through one head, or the next-token guess after every decoder layer.

    python -m model.inspect head [--kind cross] [--layer L] [--head H] [--query Q] "Ein Hund läuft."
    python -m model.inspect lens [--top-k K] "Ein Hund läuft."
    python -m model.inspect importance "Ein Hund läuft."
    python -m model.inspect contributions "Ein Hund läuft."
    python -m model.inspect decoderlens "Ein Hund läuft."
    python -m model.inspect familiarity "Ein Hund läuft."
    python -m model.inspect attribute --method METHOD [--contrast WORD] [--reference TEXT] "Ein Hund läuft."
    python -m model.inspect faithfulness [--step T] "Ein Hund läuft."
    python -m model.inspect features [--top-k K] "Ein Hund läuft."

Each prints one JSON object; all but `decoderlens` teacher-force the greedy translation of
the sentence in one pass. `head` (kind enc, dec or cross; layer, head and query count from 0; the queries
are the source tokens for enc, the decoder inputs for dec and cross): kind, layer, head,
query, query_token, key_tokens, x, q, k, v, scores, scaled, mask, weights, weighted_v,
head_output, all_heads, attn_out, residual, normed, layer_output (model/result.py,
HeadTrace). `lens`: tgt_tokens, output_tokens, top_tokens (L x T x K), top_probs
(L x T x K), chosen_prob (L x T) (model/result.py, LogitLens). `importance`: the sentence's own
head importance, as the page computes it live: output_tokens, and loss_rise {kind: L x H}, how much
the mean -log p of that output (teacher-forced) rises with each head alone switched off.
`contributions`: ALTI+ (Ferrando et al., 2022; model/contributions.py): src_tokens, tgt_tokens and steps,
one per generated token: token, source_share, source (one number per source token), prefix (one per
decoder input up to that step, <sos> included); each step's source and prefix sum to 1.
`decoderlens` (Langedijk et al., 2024): layers, one per encoder layer k (from 1): encoder_layer, tokens
and text of the greedy output when the decoder reads encoder layer k's output; the last is the translation.
`attribute` (model/attribute.py): src_tokens, tgt_tokens, method and steps, one per output word: token, f (the
target at the input), source (one number per source token), prefix (one per decoder input up to the step),
source_share, and for integrated_gradients completeness_gap and baseline_f, for a contrastive target foil;
`--method all`: src_tokens, tgt_tokens and methods {method: steps}.
`faithfulness` (model/faithfulness.py): src_tokens, tgt_tokens, removal, orders and steps, one per output word:
token, p, and for source and prefix (null where a step has no such token) tokens and methods {method:
comprehensiveness, sufficiency, tau, order, deletion, kept} and random {orders, comprehensiveness, sufficiency,
comprehensiveness_range, deletion, deletion_range}; `--step T` (from 0) measures that step only (the others: null).
`familiarity` (model/familiarity.py): verdict (familiar, unusual, unfamiliar), reasons, words, unknown_words,
unknown_share, mean_logprob, logprob_percentile, language, language_counts, nearest_distance,
distance_percentile, length (positions, <sos> and <eos> included), length_percentile (the % of training
sentences shorter), score and neighbours (line, de, en, distance), nearest first.
`features` (model/transcoders.py; the checkpoint's transcoders): src_tokens, tgt_tokens and blocks, one per
feed-forward block (enc.0 .. dec.M-1): block, tokens (its positions: the source tokens or the decoder inputs) and
positions, one per token: features [[name, activation], ...] (the K strongest active ones, strongest first; names
BLOCK.INDEX), error (||FFN(x) - T(x)||) and norm (||FFN(x)||).
A bad option, sentence, checkpoint or device is one `error: ...` line and exit status 2.
"""

from . import cli, files


@cli.entry_point
def main(argv=None):
    p = cli.Parser(description=__doc__)
    common = cli.Parser(add_help=False)
    cli.add_checkpoint(common)
    cli.add_device(common)
    common.add_argument("sentence", help="one German sentence")
    sub = p.add_subparsers(dest="command", required=True)
    head = sub.add_parser("head", parents=[common], help="one query through one head, with the real numbers")
    head.add_argument("--kind", default="cross", help="enc, dec or cross (default: cross)")
    head.add_argument("--layer", type=cli.whole, default=0, help="layer, from 0")
    head.add_argument("--head", type=cli.whole, default=0, help="head, from 0")
    head.add_argument("--query", type=cli.whole, default=0, help="query token, from 0")
    lens = sub.add_parser("lens", parents=[common], help="the output layer applied after each decoder layer")
    lens.add_argument("--top-k", type=cli.whole, default=5, help="tokens per layer and step (default: 5)")
    sub.add_parser("importance", parents=[common], help="every head switched off alone: this sentence's loss rise")
    sub.add_parser("contributions", parents=[common],
                   help="ALTI+: each source and prefix token's contribution to every generated token")
    sub.add_parser("decoderlens", parents=[common], help="the greedy output decoded from each encoder layer")
    attr = sub.add_parser("attribute", parents=[common], help="gradient and perturbation attributions of every "
                                                             "output word to the source and prefix tokens")
    attr.add_argument("--method", default="integrated_gradients", help="gradient, input_x_gradient, "
                      "integrated_gradients, leave_one_out, value_zeroing, contrastive, or all")
    attr.add_argument("--contrast", help="a foil word: F = log p(word) - log p(foil) (default for contrastive: each "
                                         "step's runner-up)")
    attr.add_argument("--reference", help="attribute this English reference, teacher-forced, not the translation")
    faith = sub.add_parser("faithfulness", parents=[common], help="every explanation's comprehensiveness, "
                           "sufficiency and agreement with leave-one-out, by removal, per step")
    faith.add_argument("--step", type=cli.whole, default=None, help="one step, from 0 (default: every step)")
    sub.add_parser("familiarity", parents=[common], help="how far the sentence is from the training data: every "
                                                         "measure, the verdict and the nearest training sentences")
    feats = sub.add_parser("features", parents=[common], help="the transcoders' strongest features at every position "
                                                            "of every feed-forward block, and each block's error")
    feats.add_argument("--top-k", type=cli.whole, default=5, help="features per position (default: 5)")
    args = p.parse_args(argv)

    translator = cli.load_translator(args)  # after argument parsing: --help stays fast
    if args.command == "head":
        out = translator.inside(args.sentence).head(args.kind, args.layer, args.head, args.query).to_json()
    elif args.command == "lens":
        out = translator.logit_lens(args.sentence, top_k=args.top_k).to_json()
    elif args.command == "contributions":
        out = translator.contributions(args.sentence).to_json()
    elif args.command == "decoderlens":
        out = translator.decoder_lens(args.sentence).to_json()
    elif args.command == "attribute":
        from .attribute import METHODS

        methods = METHODS if args.method == "all" else (args.method,)
        found = [translator.attribute(args.sentence, m, args.reference, args.contrast).to_json() for m in methods]
        out = found[0] if len(found) == 1 else {**{k: found[0][k] for k in ("src_tokens", "tgt_tokens")},
                                                "methods": {f["method"]: f["steps"] for f in found}}
    elif args.command == "faithfulness":
        from .checkpoint import checkpoint_folder
        from .faithfulness import aligning_head, measure

        head = aligning_head(checkpoint_folder(args.checkpoint))
        out = measure(translator, args.sentence, steps=None if args.step is None else [args.step],
                      heads=() if head is None else (head,)).to_json()
    elif args.command == "familiarity":
        from .familiarity import Index, measure

        out = measure(translator, translator.translate(args.sentence), Index.of(args.checkpoint)).to_json()
    elif args.command == "features":
        from . import transcoders
        from .checkpoint import checkpoint_folder

        cli.check(args, top_k=cli.Range(1, 64))
        dicts, _ = transcoders.load(checkpoint_folder(args.checkpoint), translator.device)
        forced = translator.force(args.sentence)
        out = {"src_tokens": list(forced.src_tokens), "tgt_tokens": list(forced.tgt_tokens),
               "blocks": [{"block": b.block, "tokens": list(b.tokens),
                           "positions": [{"features": [[f"{b.block}.{i}", round(v, 6)] for i, v in top],
                                          "error": round(e, 6), "norm": round(n, 6)}
                                         for top, e, n in zip(b.top, b.error, b.norm)]}
                          for b in transcoders.sentence_features(translator, dicts, forced, args.top_k)]}
    else:
        from .head_importance import head_importance_for_sentence

        rise = head_importance_for_sentence(translator, args.sentence)
        out = {"output_tokens": [s.token for s in translator.translate(args.sentence).steps],
               "loss_rise": {k: [[round(float(x), 6) for x in row] for row in v] for k, v in rise.items()}}
    print(files.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    cli.run(main)
