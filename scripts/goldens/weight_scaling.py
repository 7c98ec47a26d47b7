"""Random weights scaled so that logits are far from uniform (as the shared fixtures do): each
matrix by its fan-in (transformers 5 holds a mixture's experts as 3D parameters, [experts, out,
in], scaled like the 2D ones), norms around 1 (Gemma's (1 + w) norms: w around 0), the rest
small. Needs torch only, so tools/model_fuzz.py runs where the fixture scripts' other imports
(gguf, numpy) are absent."""
import torch


def scale_weights(model, norm_center=1.0):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(norm_center + 0.1 * torch.randn_like(p))
            elif p.dim() >= 2:
                p.copy_(torch.randn_like(p) * (1.5 / p.shape[-1] ** 0.5))
            else:
                p.copy_(0.2 * torch.randn_like(p))


def scale_gemma_weights(model):
    scale_weights(model, norm_center=0.0)


# The mixtures' experts are 3D parameters, which scale_weights scales by fan-in as well.
scale_moe = scale_weights
