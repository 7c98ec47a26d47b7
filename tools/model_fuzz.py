#!/usr/bin/env python3
"""Random small models of every architecture anvil runs (Llama, Mistral, Phi-3, Qwen2, Qwen3,
Gemma, Gemma 2, Gemma 3, SmolLM3, OLMo 2, and the mixtures of experts Qwen3-MoE, Qwen2-MoE,
Mixtral, OLMoE with random expert counts, picks, widths, renormalisation and sparse layers,
and Granite / GraniteMoe / GraniteMoeShared with random multipliers:
head sizes, GQA ratios, biases, tied heads, every RoPE scaling, Phi-3's
partial rotary, sliding windows, Qwen2/Qwen3's on some layers only, Gemma 2's softcaps and
query_pre_attn_scalar, Gemma 3's sliding layers' own RoPE, odd vocabulary and MLP sizes) built with
transformers, then run by transformers and by anvil's CLI on the same inputs (float32, eager
attention in transformers, a freshly loaded model per call): logits of a left-padded batch and
of a long prompt, a greedy continuation, and a beam search of 2-4 beams (eos suppressed
throughout by min_new_tokens, so the beams run to the length limit); and anvil's greedy
continuation of the first row with prompt lookup against its own one-token steps; and the
base model's checkpoint (saved from Qwen3Model etc.: no "model." prefix, no lm_head), whose
last hidden states `anvil embed` pools by the last token and by the mean against AutoModel's. Prints one line per model
and the largest logit difference. In float32 the bound is 1e-4, or twice transformers' own
float32 error (against float64) where a model amplifies rounding that much.

With DTYPE bf16 or f16, anvil runs the same float32 checkpoints converted at load and is held to
that dtype's own error: its largest logit difference from float32 transformers at most twice
transformers' own in that dtype (plus 1e-3); greedy continuations are reported, not required to
agree.

Usage: python3 -m venv /tmp/t && /tmp/t/bin/pip install torch transformers safetensors
       /tmp/t/bin/python tools/model_fuzz.py SEED [COUNT] [DTYPE] [--device D] [--save DIR]
       /tmp/t/bin/python tools/model_fuzz.py --replay DIR [--device D]
It uses ./build/anvil, or $ANVIL. --device runs anvil on that device (cuda, opencl:0, ...).
--save writes each model, its inputs and transformers' outputs under DIR/<index>/ instead of
running anvil; --replay runs anvil on such a folder where transformers is absent or another
version (the GPU machine: it needs torch and safetensors only). ANVIL_FUZZ_STRICT=1 makes
the exit status 1 when a case is out of bounds (or, in f32, generates other tokens).
"""
import json, os, random, subprocess, sys, tempfile

import torch
from safetensors.torch import load_file, save_file

args = sys.argv[1:]


def option(name):
    if name not in args:
        return None
    at = args.index(name)
    value = args[at + 1]
    del args[at:at + 2]
    return value


device, save, replay = option('--device'), option('--save'), option('--replay')
if not replay:
    import transformers
    # Every class by name: an older transformers (the GPU machine's) lacks some architectures,
    # whose draws are then skipped as configs transformers refuses.
    for name in ('AutoModel AutoModelForCausalLM Gemma2Config Gemma2ForCausalLM Gemma3ForCausalLM '
                 'Gemma3TextConfig GemmaConfig GemmaForCausalLM LlamaConfig LlamaForCausalLM '
                 'MistralConfig MistralForCausalLM Phi3Config Phi3ForCausalLM Qwen2Config '
                 'Qwen2ForCausalLM Qwen3Config Qwen3ForCausalLM SmolLM3Config SmolLM3ForCausalLM '
                 'Olmo2Config Olmo2ForCausalLM Qwen3MoeConfig Qwen3MoeForCausalLM Qwen2MoeConfig '
                 'Qwen2MoeForCausalLM MixtralConfig MixtralForCausalLM OlmoeConfig '
                 'OlmoeForCausalLM GraniteConfig GraniteForCausalLM GraniteMoeConfig '
                 'GraniteMoeForCausalLM GraniteMoeSharedConfig '
                 'GraniteMoeSharedForCausalLM').split():
        globals()[name] = getattr(transformers, name, None)

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'scripts',
                                    'goldens'))
    from weight_scaling import scale_gemma_weights, scale_moe, scale_weights  # noqa: E402

anvil = os.environ.get('ANVIL') or os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                                               'build', 'anvil')
if replay:
    dtype = 'f32'
    for name in os.listdir(replay):
        if os.path.exists(os.path.join(replay, name, 'case.json')):
            with open(os.path.join(replay, name, 'case.json')) as f:
                dtype = json.load(f)['dtype']
            break
else:
    seed, count = int(args[0]), int(args[1]) if len(args) > 1 else 12
    dtype = args[2] if len(args) > 2 else 'f32'
    rng = random.Random(seed)
    torch.manual_seed(seed)


def random_rope(max_pos):
    theta = rng.choice([100.0, 2000.0, 10000.0, 500000.0, 1e6])
    kind = rng.choice(['default', 'default', 'linear', 'llama3', 'yarn', 'dynamic'])
    p = {'rope_type': kind, 'rope_theta': theta}
    if kind == 'linear':
        p['factor'] = rng.choice([2.0, 4.0])
    elif kind == 'llama3':
        p.update(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                 original_max_position_embeddings=rng.choice([16, 64, 256]))
    elif kind == 'yarn':
        p.update(factor=rng.choice([2.0, 4.0, 16.0]),
                 original_max_position_embeddings=rng.choice([16, 64, 256]))
        if rng.random() < 0.4:
            p.update(beta_fast=rng.choice([8.0, 24.0]), beta_slow=rng.choice([0.5, 2.0]))
        if rng.random() < 0.3:
            p['attention_factor'] = rng.choice([0.8, 1.2])
    elif kind == 'dynamic':
        p['factor'] = rng.choice([2.0, 3.0])
    return p


def qwen_window(layers):
    """Qwen2/Qwen3's sliding window: none, or on the layers from max_window_layers on, or on
    the layers a random layer_types names."""
    kind = rng.choice(['none', 'none', 'max_window_layers', 'layer_types'])
    if kind == 'none':
        return {}
    w = dict(use_sliding_window=True, sliding_window=rng.choice([3, 7, 20]))
    if kind == 'max_window_layers':
        w['max_window_layers'] = rng.randint(0, layers)
    else:
        w['layer_types'] = [rng.choice(['sliding_attention', 'full_attention'])
                            for _ in range(layers)]
    return w


def random_model(i, out):
    arch = rng.choice(['llama', 'mistral', 'phi3', 'qwen2', 'qwen3', 'gemma', 'gemma2', 'gemma3',
                       'smollm3', 'olmo2', 'qwen3_moe', 'qwen2_moe', 'mixtral', 'olmoe',
                       'granite', 'granitemoe', 'granitemoeshared'])
    heads = rng.choice([1, 2, 3, 4, 6, 8])
    kv = rng.choice([d for d in range(1, heads + 1) if heads % d == 0])
    head_dim = rng.choice([8, 12, 16, 20, 24, 32, 40, 64])
    hidden = heads * head_dim if arch == 'qwen2' or rng.random() < 0.5 else rng.choice([24, 40, 48, 72, 96])
    if arch in ('gemma2', 'gemma3') and hidden % heads:  # their configs require it
        hidden = heads * rng.choice([4, 8, 16])
    max_pos = rng.choice([32, 64, 512])
    common = dict(vocab_size=rng.randint(40, 700), hidden_size=hidden,
                  intermediate_size=rng.randint(8, 200), num_hidden_layers=rng.randint(1, 3),
                  num_attention_heads=heads, num_key_value_heads=kv,
                  rms_norm_eps=rng.choice([1e-5, 1e-6]), tie_word_embeddings=rng.random() < 0.5,
                  max_position_embeddings=max_pos, bos_token_id=1, eos_token_id=2,
                  pad_token_id=0, rope_parameters=random_rope(max_pos))
    if arch == 'phi3':  # head_dim = hidden / heads; longrope or none; partial rotary or none
        hidden = heads * head_dim
        common['hidden_size'] = hidden
        partial = rng.choice([1.0, 1.0, 0.5, 0.75])
        if int(head_dim * partial) % 2:
            partial = 1.0
        rotated = int(head_dim * partial)
        if rng.random() < 0.6:
            f = lambda lo, hi: [rng.uniform(lo, hi) for _ in range(rotated // 2)]
            common['rope_parameters'] = {'rope_type': 'longrope', 'rope_theta': 10000.0,
                                         'short_factor': f(1, 2), 'long_factor': f(1, 8)}
        else:
            common['rope_parameters'] = {'rope_type': 'default', 'rope_theta': 10000.0}
        common['rope_parameters']['partial_rotary_factor'] = partial
        common['partial_rotary_factor'] = partial
    elif arch != 'qwen2':
        common['head_dim'] = head_dim
    if arch == 'llama':
        cfg = LlamaConfig(attention_bias=rng.random() < 0.3, mlp_bias=rng.random() < 0.3, **common)
        model = LlamaForCausalLM(cfg)
    elif arch == 'mistral':
        cfg = MistralConfig(sliding_window=rng.choice([None, 4, 9, 30]), **common)
        model = MistralForCausalLM(cfg)
    elif arch == 'phi3':
        cfg = Phi3Config(sliding_window=rng.choice([None, 5, 12]),
                         original_max_position_embeddings=rng.choice([16, 30]), **common)
        model = Phi3ForCausalLM(cfg)
    elif arch == 'qwen2':
        cfg = Qwen2Config(**common, **qwen_window(common['num_hidden_layers']))
        model = Qwen2ForCausalLM(cfg)
    elif arch == 'qwen3':
        cfg = Qwen3Config(attention_bias=rng.random() < 0.3, **common,
                          **qwen_window(common['num_hidden_layers']))
        model = Qwen3ForCausalLM(cfg)
    elif arch == 'smollm3':  # NoPE layers from an interval or a list, windows on them or none
        layers = common['num_hidden_layers']
        nope = (dict(no_rope_layer_interval=rng.choice([1, 2, 3])) if rng.random() < 0.5 else
                dict(no_rope_layers=[rng.choice([0, 1]) for _ in range(layers)]))
        window = (dict(use_sliding_window=True, sliding_window=rng.choice([3, 8]))
                  if rng.random() < 0.4 else {})
        cfg = SmolLM3Config(attention_bias=rng.random() < 0.3, mlp_bias=rng.random() < 0.3,
                            **nope, **window, **common)
        model = SmolLM3ForCausalLM(cfg)
    elif arch == 'olmo2':
        cfg = Olmo2Config(attention_bias=rng.random() < 0.3, **common)
        model = Olmo2ForCausalLM(cfg)
    elif arch in ('qwen3_moe', 'qwen2_moe', 'mixtral', 'olmoe'):
        experts = rng.randint(2, 8)
        moe = dict(num_experts_per_tok=rng.randint(1, experts))
        layers = common['num_hidden_layers']
        qwen = dict(moe_intermediate_size=rng.randint(8, 64), norm_topk_prob=rng.random() < 0.5,
                    decoder_sparse_step=rng.choice([1, 1, 2]),
                    mlp_only_layers=[l for l in range(layers) if rng.random() < 0.25])
        if arch == 'qwen3_moe':
            window = (dict(use_sliding_window=True, sliding_window=rng.choice([3, 8]))
                      if rng.random() < 0.3 else {})
            cfg = Qwen3MoeConfig(num_experts=experts, attention_bias=rng.random() < 0.3, **moe,
                                 **qwen, **window, **common)
            model = Qwen3MoeForCausalLM(cfg)
        elif arch == 'qwen2_moe':
            cfg = Qwen2MoeConfig(num_experts=experts, qkv_bias=rng.random() < 0.7,
                                 shared_expert_intermediate_size=rng.randint(8, 64), **moe, **qwen,
                                 **qwen_window(layers), **common)
            model = Qwen2MoeForCausalLM(cfg)
        elif arch == 'mixtral':
            cfg = MixtralConfig(num_local_experts=experts, sliding_window=rng.choice([None, 4, 9]),
                                **moe, **common)
            model = MixtralForCausalLM(cfg)
        else:
            cfg = OlmoeConfig(num_experts=experts, attention_bias=rng.random() < 0.3,
                              norm_topk_prob=rng.random() < 0.5, **moe, **common)
            model = OlmoeForCausalLM(cfg)
    elif arch.startswith('granite'):
        mult = dict(embedding_multiplier=rng.choice([1.0, 12.0]),
                    attention_multiplier=rng.choice([1.0, 0.015625, 0.2]),
                    residual_multiplier=rng.choice([1.0, 0.22]),
                    logits_scaling=rng.choice([1.0, 8.0, 0.5]),
                    attention_bias=rng.random() < 0.3)
        if arch == 'granite':
            cfg = GraniteConfig(mlp_bias=rng.random() < 0.3, **mult, **common)
            model = GraniteForCausalLM(cfg)
        else:
            experts = rng.randint(2, 8)
            moe = dict(num_local_experts=experts, num_experts_per_tok=rng.randint(1, experts))
            if arch == 'granitemoe':
                cfg = GraniteMoeConfig(**moe, **mult, **common)
                model = GraniteMoeForCausalLM(cfg)
            else:
                cfg = GraniteMoeSharedConfig(shared_intermediate_size=rng.choice([0, 8, 40]),
                                             **moe, **mult, **common)
                model = GraniteMoeSharedForCausalLM(cfg)
    elif arch == 'gemma':
        cfg = GemmaConfig(attention_bias=rng.random() < 0.3, **common)
        model = GemmaForCausalLM(cfg)
    else:
        gemma = dict(attention_bias=rng.random() < 0.3,
                     query_pre_attn_scalar=rng.choice([head_dim, 16, 100]),
                     sliding_window=rng.choice([3, 8, 30, 4096]),  # transformers needs one
                     attn_logit_softcapping=rng.choice([None, 1.5, 50.0]),
                     final_logit_softcapping=rng.choice([None, 3.0, 30.0]))
        if arch == 'gemma2':
            cfg = Gemma2Config(**gemma, **common)
            model = Gemma2ForCausalLM(cfg)
        else:
            common['rope_parameters'] = {
                'full_attention': common['rope_parameters'],
                'sliding_attention': {'rope_type': 'default',
                                      'rope_theta': rng.choice([100.0, 1000.0, 10000.0])}}
            cfg = Gemma3TextConfig(sliding_window_pattern=rng.choice([1, 2, 3, 6]), **gemma,
                                   **common)
            model = Gemma3ForCausalLM(cfg)
    (scale_gemma_weights if arch.startswith('gemma') else
     scale_moe if arch in ('qwen3_moe', 'qwen2_moe', 'mixtral', 'olmoe', 'granitemoe',
                           'granitemoeshared') else scale_weights)(model)
    model.save_pretrained(out)
    rope = common['rope_parameters'].get('full_attention', common['rope_parameters'])
    partial = rope.get('partial_rotary_factor', 1.0)
    desc = (f"{arch} h={hidden} heads={heads}/{kv} hd={head_dim} "
            f"rope={rope['rope_type']}"
            + (f"x{partial}" if partial != 1.0 else '')
            + (f" win={cfg.sliding_window}" if arch in ('mistral', 'phi3') else '')
            + (f" win={cfg.sliding_window}:" + ''.join('s' if t == 'sliding_attention' else 'f'
                                                        for t in cfg.layer_types)
               if arch in ('qwen2', 'qwen3', 'gemma2', 'gemma3', 'smollm3') and cfg.sliding_window
               else '')
            + (" rope:" + ''.join(str(f) for f in cfg.no_rope_layers) if arch == 'smollm3' else '')
            + (f" cap={cfg.attn_logit_softcapping}/{cfg.final_logit_softcapping}"
               if arch in ('gemma2', 'gemma3') else '')
            + (f" moe={experts}/{cfg.num_experts_per_tok}" if 'experts' in locals() else ''))
    return model, desc


def anvil_logits(folder, rows, mask, tmp):
    out = os.path.join(tmp, 'l.safetensors')
    args = [anvil, 'logits', folder, '--dtype', dtype, '--input-ids',
            ';'.join(','.join(map(str, r)) for r in rows), '--out', out]
    if device:
        args += ['--device', device]
    if mask is not None:
        args += ['--attention-mask', ';'.join(','.join(map(str, r)) for r in mask)]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[:300])
    return load_file(out)['logits']


def anvil_generate(folder, rows, mask, new, beams=1, lookup=None):
    args = [anvil, 'generate', folder, '--dtype', dtype, '--greedy', '--output-ids',
            '--max-new-tokens', str(new), '--min-new-tokens', str(new), '--input-ids',
            ';'.join(','.join(map(str, r)) for r in rows), '--attention-mask',
            ';'.join(','.join(map(str, r)) for r in mask), '--num-beams', str(beams)]
    if lookup:
        args += ['--prompt-lookup', str(lookup[0]), '--max-matching-ngram', str(lookup[1])]
    if device:
        args += ['--device', device]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[:300])
    return [list(map(int, line.split(','))) for line in r.stdout.split()]


def anvil_embed(folder, row, pooling):
    args = [anvil, 'embed', folder, '--dtype', dtype, '--no-normalize', '--pooling', pooling,
            '--input-ids', ','.join(map(str, row))]
    if device:
        args += ['--device', device]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[:300])
    return torch.tensor(json.loads(r.stdout.splitlines()[0]))


def make_case(i, folder):
    """A random model saved in folder and transformers' outputs on random inputs, or a line
    saying why it was skipped."""
    try:
        model, desc = random_model(i, folder)
    except Exception as e:  # a config transformers itself refuses (e.g. hidden % heads)
        return None, f"skipped: transformers refuses the config ({str(e).splitlines()[-1]})"
    model.eval()
    vocab = model.config.vocab_size
    b, n = rng.randint(1, 3), rng.randint(3, 40)
    ids = torch.randint(3, vocab, (b, n))
    mask = torch.ones_like(ids)
    for r in range(1, b):
        pad = rng.randint(0, n - 1)
        ids[r, :pad] = 0
        mask[r, :pad] = 0
    long_ids = torch.randint(3, vocab, (1, rng.randint(40, 150)))

    def fresh():  # each anvil call is a process of its own (dynamic RoPE keeps state)
        m = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                                 attn_implementation='eager',
                                                 experts_implementation='eager')
        return m.eval()
    beams = rng.choice([2, 3, 4])
    ref = {}
    try:  # transformers' outputs; a config its modules cannot run (OLMoE's q/k norms over
        # hidden_size where heads * head_dim differs) is skipped
        with torch.no_grad():
            ref['want_b'] = fresh()(ids, attention_mask=mask).logits * mask[..., None]
            ref['want_l'] = fresh()(long_ids).logits
            ref['want_g'] = fresh().generate(ids, attention_mask=mask, max_new_tokens=24,
                                             min_new_tokens=24, do_sample=False)
            ref['want_beam'] = fresh().generate(ids, attention_mask=mask, max_new_tokens=10,
                                                min_new_tokens=10, do_sample=False,
                                                num_beams=beams)
            # transformers' own error in that dtype: float32 against float64 (a model whose
            # layers amplify rounding, e.g. a router near a tie, is held to its own float32
            # error where that exceeds 1e-4), bf16 / f16 against float32
            t = {'f32': torch.float64, 'bf16': torch.bfloat16, 'f16': torch.float16}[dtype]
            # (over finite values only: transformers' float64 run of a left-padded batch can
            # give NaN logits, and a NaN had made the bound ignore its own error)
            low_b = fresh().to(t)(ids, attention_mask=mask).logits * mask[..., None]
            low_l = fresh().to(t)(long_ids).logits

            def finite_max(d):
                d = d.abs()
                d = d[torch.isfinite(d)]
                return d.max().item() if d.numel() else 0.0
            ref['own'] = torch.tensor(max(finite_max(low_b.double() - ref['want_b']),
                                          finite_max(low_l.double() - ref['want_l'])))
            # The base model's checkpoint (Qwen3Model, ...: no "model." prefix, no lm_head)
            # beside the full one, and its last hidden states as AutoModel loads it back.
            fresh().model.save_pretrained(folder + '-base')
            base = AutoModel.from_pretrained(folder + '-base', dtype=torch.float32,
                                             attn_implementation='eager',
                                             experts_implementation='eager').eval()
            ref['want_h'] = base(long_ids).last_hidden_state
    except Exception as e:
        return None, f"{desc:60} skipped: transformers fails ({str(e).splitlines()[-1][:80]})"
    ref.update(ids=ids, mask=mask, long_ids=long_ids, beams=torch.tensor(beams))
    return ref, desc


def check_case(i, folder, ref, desc, tmp):
    """anvil's outputs on the case's inputs against transformers'; returns the largest logit
    difference and prints one line."""
    ids, mask, beams = ref['ids'], ref['mask'], int(ref['beams'])
    try:
        got_b = anvil_logits(folder, ids.tolist(), mask.tolist(), tmp) * mask[..., None]
        got_l = anvil_logits(folder, ref['long_ids'].tolist(), None, tmp)
        got_g = anvil_generate(folder, ids.tolist(), mask.tolist(), 24)
        got_beam = anvil_generate(folder, ids.tolist(), mask.tolist(), 10, beams)
        # The base model's checkpoint: its hidden states pooled by the last token and the mean.
        long_row = ref['long_ids'][0].tolist()
        got_last = anvil_embed(folder + '-base', long_row, 'last')
        got_mean = anvil_embed(folder + '-base', long_row, 'mean')
        # Prompt lookup (steps of several tokens over the cache) on the first row, which has no
        # padding: the tokens of the same row's one-token steps. (Phi-3's longrope, which
        # recomputes its cache past a length, refuses it.)
        lookup = (1 + i % 6, 1 + i % 2)
        row_plain = row_lookup = None
        if 'longrope' not in desc:
            row_plain = anvil_generate(folder, ids[:1].tolist(), mask[:1].tolist(), 24)
            row_lookup = anvil_generate(folder, ids[:1].tolist(), mask[:1].tolist(), 24,
                                        lookup=lookup)
    except RuntimeError as e:
        print(f"{i:3} {desc:60} anvil failed: {e}", flush=True)
        return 0.0, False
    hidden = ref['want_h'][0]
    d = max((got_b - ref['want_b']).abs().max().item(),
            (got_l - ref['want_l']).abs().max().item(),
            (got_last - hidden[-1]).abs().max().item(),
            (got_mean - hidden.double().mean(0)).abs().max().item())
    same = got_g == ref['want_g'].tolist()
    same_beam = got_beam == ref['want_beam'].tolist()
    # Dynamic NTK RoPE rotates a check step's keys by its longest position, drafts included
    # (as transformers' assisted decoding does): its tokens may differ from one-token steps'.
    dynamic = 'rope=dynamic' in desc
    same_lookup = row_lookup == row_plain or dynamic
    own = ref['own'].item()
    if dtype == 'f32':
        bound, note = max(1e-4, 2 * own), f" (transformers f32-f64 {own:.2e})" if own > 5e-5 else ''
    else:
        bound, note = 2 * own + 1e-3, f" (transformers {dtype} {own:.2e})"
    print(f"{i:3} {desc:60} max|diff| {d:.2e}{note}{' TOO LARGE' if d > bound else ''}"
          f" greedy {'same' if same else 'DIFFERENT'}"
          f" beams({beams}) {'same' if same_beam else 'DIFFERENT'}"
          f" lookup{lookup} {'skipped' if row_lookup is None else 'same' if same_lookup else 'DIFFERENT'}",
          flush=True)
    return d, d <= bound and (same or dtype != 'f32') and (same_beam or dtype != 'f32') and \
        (same_lookup or dtype != 'f32')


def cases():
    """(index, model folder, reference, description) for each case: drawn here with transformers,
    or read back from a --save folder (--replay), which needs torch and safetensors only."""
    if replay:
        for name in sorted(os.listdir(replay), key=lambda n: int(n) if n.isdigit() else -1):
            case = os.path.join(replay, name)
            if not name.isdigit() or not os.path.exists(os.path.join(case, 'case.json')):
                continue
            with open(os.path.join(case, 'case.json')) as f:
                desc = json.load(f)['desc']
            yield int(name), os.path.join(case, 'm'), load_file(os.path.join(case, 'ref.safetensors')), desc
        return
    for i in range(count):
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(save, str(i), 'm') if save else os.path.join(tmp, 'm')
            ref, desc = make_case(i, folder)
            if ref is None:
                print(f"{i:3} {desc}", flush=True)
                continue
            if save:
                save_file({k: v.contiguous() for k, v in ref.items()},
                          os.path.join(save, str(i), 'ref.safetensors'))
                with open(os.path.join(save, str(i), 'case.json'), 'w') as f:
                    json.dump({'desc': desc, 'dtype': dtype}, f)
                print(f"{i:3} {desc} saved", flush=True)
                continue
            yield i, folder, ref, desc


worst, failed = 0.0, 0
for i, folder, ref, desc in cases():
    with tempfile.TemporaryDirectory() as tmp:
        d, ok = check_case(i, folder, ref, desc, tmp)
        worst, failed = max(worst, d), failed + (not ok)
if not save:
    print(f"largest logit difference {worst:.2e}; {failed} case(s) out of bounds or different")
    sys.exit(1 if failed and os.environ.get('ANVIL_FUZZ_STRICT') else 0)
