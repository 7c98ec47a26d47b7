#!/usr/bin/env python3
"""Random small configs of every architecture anvil runs (head sizes, GQA, tied heads, biases,
windows, RoPE scalings, softcaps, multipliers, experts), random weights: transformers' float32
logits and 8 greedy tokens against `anvil logits` / `anvil generate` on the CPU.
A development check, not part of the test suite (it needs torch and transformers:
`python3 -m venv /tmp/tv2 && /tmp/tv2/bin/pip install torch transformers safetensors`).
Usage: /tmp/tv2/bin/python scripts/checks/random_configs_vs_transformers.py [SEED [ARCH,ARCH [N]]]
(ANVIL_CLI names the binary, CHECK_DIR the scratch folder, default /tmp/fuzz)."""
import json, os, random, subprocess, sys, shutil
import torch
from safetensors.torch import load_file
import transformers as tf

ANVIL = os.environ.get("ANVIL_CLI", "build-cuda/anvil")
CHECK_DIR = os.environ.get("CHECK_DIR", "/tmp/fuzz")
R = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
ONLY = sys.argv[2].split(",") if len(sys.argv) > 2 and sys.argv[2] else None
N = int(sys.argv[3]) if len(sys.argv) > 3 else 3

def rope_scaling(kind, head_dim, maxpos):
    if kind == "linear": return {"rope_type": "linear", "factor": R.choice([2.0, 4.0])}
    if kind == "dynamic": return {"rope_type": "dynamic", "factor": R.choice([2.0, 3.0])}
    if kind == "yarn": return {"rope_type": "yarn", "factor": R.choice([2.0, 4.0]), "original_max_position_embeddings": maxpos // 4, "beta_fast": 32.0, "beta_slow": 1.0}
    if kind == "llama3": return {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 16}
    return None

def base(arch):
    heads = R.choice([2, 4])
    kv = R.choice([d for d in (1, 2, 4) if heads % d == 0])
    hd = R.choice([8, 16, 32])
    hidden = R.choice([32, 48, 64])
    c = dict(vocab_size=R.choice([97, 256, 300]), hidden_size=hidden, intermediate_size=R.choice([40, 64, 96]),
             num_hidden_layers=R.choice([1, 2, 3]), num_attention_heads=heads, num_key_value_heads=kv,
             max_position_embeddings=64, rms_norm_eps=R.choice([1e-6, 1e-5]), tie_word_embeddings=R.random() < 0.5,
             bos_token_id=1, eos_token_id=2, pad_token_id=0)
    if arch not in ("Phi3", "Olmoe"): c["head_dim"] = hd
    return c

def make(arch):
    c = base(arch)
    rs = R.choice([None, "linear", "dynamic", "yarn", "llama3"])
    theta = R.choice([10000.0, 500000.0, 1e6])
    if arch == "Llama":
        cfg = tf.LlamaConfig(**c, attention_bias=R.random() < 0.3, mlp_bias=R.random() < 0.3,
                             rope_parameters={"rope_type": "default", "rope_theta": theta, **(rope_scaling(rs, c["head_dim"], 64) or {})})
    elif arch == "Mistral":
        cfg = tf.MistralConfig(**c, sliding_window=R.choice([None, 4, 7]), rope_parameters={"rope_type": "default", "rope_theta": theta})
    elif arch == "Qwen2":
        cfg = tf.Qwen2Config(**c, use_sliding_window=False, rope_parameters={"rope_type": "default", "rope_theta": theta, **(rope_scaling(rs, c["head_dim"], 64) or {})})
    elif arch == "Qwen3":
        cfg = tf.Qwen3Config(**c, attention_bias=R.random() < 0.3, rope_parameters={"rope_type": "default", "rope_theta": theta, **(rope_scaling(rs, c["head_dim"], 64) or {})})
    elif arch == "Phi3":
        cfg = tf.Phi3Config(**c, partial_rotary_factor=R.choice([1.0, 0.5]), rope_parameters={"rope_type": "default", "rope_theta": theta})
    elif arch == "Gemma":
        cfg = tf.GemmaConfig(**c, hidden_activation="gelu_pytorch_tanh")
    elif arch == "Gemma2":
        cfg = tf.Gemma2Config(**c, sliding_window=R.choice([4, 8]), query_pre_attn_scalar=R.choice([8, 16, 32]),
                              attn_logit_softcapping=R.choice([None, 20.0]), final_logit_softcapping=R.choice([None, 10.0]))
    elif arch == "Gemma3":
        cfg = tf.Gemma3TextConfig(**c, sliding_window=R.choice([4, 8]), query_pre_attn_scalar=R.choice([8, 16]))
    elif arch == "SmolLM3":
        cfg = tf.SmolLM3Config(**c, no_rope_layer_interval=R.choice([2, 3]))
    elif arch == "Olmo2":
        cfg = tf.Olmo2Config(**c)
    elif arch == "Granite":
        cfg = tf.GraniteConfig(**c, embedding_multiplier=R.choice([1.0, 3.0]), residual_multiplier=R.choice([1.0, 0.5]),
                               attention_multiplier=R.choice([0.1, 0.25]), logits_scaling=R.choice([1.0, 4.0]))
    elif arch == "Qwen3Moe":
        cfg = tf.Qwen3MoeConfig(**c, num_experts=R.choice([4, 8]), num_experts_per_tok=2, moe_intermediate_size=R.choice([16, 32]),
                                norm_topk_prob=R.random() < 0.5, decoder_sparse_step=R.choice([1, 2]))
    elif arch == "Qwen2Moe":
        cfg = tf.Qwen2MoeConfig(**c, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, shared_expert_intermediate_size=R.choice([16, 32]))
    elif arch == "Mixtral":
        cfg = tf.MixtralConfig(**c, num_local_experts=4, num_experts_per_tok=2)
    elif arch == "Olmoe":
        cfg = tf.OlmoeConfig(**c, num_experts=4, num_experts_per_tok=2)
    elif arch == "GraniteMoe":
        cfg = tf.GraniteMoeConfig(**c, num_local_experts=4, num_experts_per_tok=2, residual_multiplier=0.5, embedding_multiplier=2.0)
    else:
        raise SystemExit(arch)
    return cfg

ARCHS = ONLY or ["Llama", "Mistral", "Qwen2", "Qwen3", "Phi3", "Gemma", "Gemma2", "Gemma3", "SmolLM3", "Olmo2", "Granite", "Qwen3Moe", "Qwen2Moe", "Mixtral", "Olmoe", "GraniteMoe"]
bad = 0
for arch in ARCHS:
    for trial in range(N):
        try:
            cfg = make(arch)
        except Exception as e:
            print(arch, "config error", e); continue
        torch.manual_seed(R.randrange(1 << 30))
        model = tf.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0, 0.15)
        d = f"{CHECK_DIR}/m-{arch}-{trial}"
        shutil.rmtree(d, ignore_errors=True)
        model.save_pretrained(d)
        L = R.choice([5, 11, 20])
        ids = [R.randrange(3, cfg.vocab_size) for _ in range(L)]
        with torch.no_grad():
            ref = model(torch.tensor([ids])).logits[0].float()
        r = subprocess.run([ANVIL, "logits", d, "--input-ids", ",".join(map(str, ids)), "--out", d + "/l.safetensors", "--dtype", "f32"], capture_output=True, text=True)
        desc = {k: getattr(cfg, k, None) for k in ("head_dim", "num_attention_heads", "num_key_value_heads", "tie_word_embeddings", "sliding_window", "rope_parameters")}
        if r.returncode:
            print(f"{arch}#{trial} ANVIL ERROR {r.stderr.strip()[:300]} cfg={desc}"); bad += 1; continue
        got = load_file(d + "/l.safetensors")["logits"][0]
        diff = (got - ref).abs().max().item()
        scale = ref.abs().max().item()
        # greedy generate 8
        with torch.no_grad():
            gen = model.generate(torch.tensor([ids]), max_new_tokens=8, do_sample=False, pad_token_id=0)[0].tolist()
        g = subprocess.run([ANVIL, "generate", d, "--input-ids", ",".join(map(str, ids)), "--output-ids", "--greedy", "--max-new-tokens", "8", "--dtype", "f32"], capture_output=True, text=True)
        gid = [int(x) for x in g.stdout.strip().split("\n")[-1].split(",")] if g.returncode == 0 and g.stdout.strip() else None
        ok = diff <= 1e-3 * max(1.0, scale) and gid == gen
        if not ok: bad += 1
        print(f"{arch}#{trial} {'OK ' if ok else 'BAD'} logits maxdiff {diff:.2e} (scale {scale:.1f}) gen {'same' if gid == gen else ('ERR ' + g.stderr.strip()[:200] if gid is None else 'DIFF')} cfg={desc}", flush=True)
print("bad", bad)
