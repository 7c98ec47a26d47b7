// Plain, obviously-correct implementations of every op, computing in double on host tensors of
// any float dtype. They are the oracle of the op tests, never the production path.
#pragma once

#include "ops/ops.h"

namespace anvil::ops::reference {

void embedding(const EmbeddingArgs& a);
void rms_norm(const RmsNormArgs& a);
void linear(const LinearArgs& a);
void rope(const RopeArgs& a);
void swiglu(const SwigluArgs& a);
void softcap(const SoftcapArgs& a);
void scale(const ScaleArgs& a);
void add(const AddArgs& a);
void store_kv(const StoreKvArgs& a);
void attention(const AttentionArgs& a);

}  // namespace anvil::ops::reference
