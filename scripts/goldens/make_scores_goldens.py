#!/usr/bin/env python3
"""transformers' output_scores / output_logits (return_dict_in_generate) on the qwen3-tiny
fixture, for GenerateOptions::scores / ::logits. Made with transformers 5.25 (torch 2.15, CPU,
float32, eager attention). Writes tests/data/extra/scores-qwen3-tiny.safetensors:
  greedy_*:  prompt a, 6 greedy tokens with repetition_penalty 1.3 and no_repeat_ngram_size 2:
             sequences [1, 13], scores and logits [6, 1000]
  batch_*:   the padded batch b, 4 greedy tokens with renormalize_logits: sequences [2, 13],
             scores [4, 2, 1000]
  sample_*:  prompt a sampled (temperature 0.7, top_k 20, top_p 0.9): the first step's scores
             [1, 1000] (later steps follow torch's draws, which anvil cannot reproduce)
  beam_*:    the padded batch b, beam search of 3 beams returning 2, length_penalty 0.8,
             repetition_penalty 1.2, up to 6 tokens, eos the token greedy search gives row 0
             third (so some hypotheses end early): sequences [4, L], scores and logits
             [steps, 6, 1000], sequences_scores [4], beam_indices [4, L - 7]
Usage: make_scores_goldens.py TESTS_DATA_DIR"""
import sys

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM


def main():
    data = sys.argv[1]
    model = AutoModelForCausalLM.from_pretrained(f"{data}/qwen3-tiny/model",
                                                 dtype=torch.float32, attn_implementation="eager")
    golden = load_file(f"{data}/qwen3-tiny/golden.safetensors")
    a = golden["input_ids_a"]
    common = dict(return_dict_in_generate=True, output_scores=True, output_logits=True,
                  eos_token_id=None, pad_token_id=0)
    out = {}
    g = model.generate(a, max_new_tokens=6, do_sample=False, repetition_penalty=1.3,
                       no_repeat_ngram_size=2, **common)
    out["greedy_sequences"] = g.sequences
    out["greedy_scores"] = torch.cat(g.scores)
    out["greedy_logits"] = torch.cat(g.logits)
    b, mask = golden["input_ids_b"], golden["attention_mask_b"]
    g = model.generate(b, attention_mask=mask, max_new_tokens=4, do_sample=False,
                       renormalize_logits=True, **common)
    out["batch_sequences"] = g.sequences
    out["batch_scores"] = torch.stack(g.scores)
    g = model.generate(a, max_new_tokens=1, do_sample=True, temperature=0.7, top_k=20, top_p=0.9,
                       **common)
    out["sample_scores"] = g.scores[0]
    eos = int(out["batch_sequences"][0, b.shape[1] + 2])
    g = model.generate(b, attention_mask=mask, max_new_tokens=6, do_sample=False, num_beams=3,
                       num_return_sequences=2, length_penalty=0.8, repetition_penalty=1.2,
                       return_dict_in_generate=True, output_scores=True, output_logits=True,
                       eos_token_id=eos, pad_token_id=0)
    out["beam_eos"] = torch.tensor([eos])
    out["beam_sequences"] = g.sequences
    out["beam_scores"] = torch.stack(g.scores)
    out["beam_logits"] = torch.stack(g.logits)
    out["beam_sequences_scores"] = g.sequences_scores
    out["beam_indices"] = g.beam_indices
    save_file({k: v.contiguous() for k, v in out.items()},
              f"{data}/extra/scores-qwen3-tiny.safetensors")
    print({k: list(v.shape) for k, v in out.items()})


if __name__ == "__main__":
    main()
