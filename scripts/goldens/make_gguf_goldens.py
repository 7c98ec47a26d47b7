#!/usr/bin/env python3
"""Makes the GGUF goldens in tests/data/gguf with gguf-py (pip install gguf numpy).

quants/: for each ggml block type, raw blocks and the floats gguf-py's dequantize gives for
them (ggml's reference formulas, evaluated in float32 in the same order, so anvil must match
bit for bit). Blocks come from gguf.quants.quantize where gguf-py can quantize the type, and
from random bytes with finite f16 scales for every type (gguf-py only dequantizes K types).

small_v3.gguf: a GGUFWriter file with every metadata value type (nested and empty arrays
included), general.alignment = 64, and tensors of several types; small_v3.json lists what
anvil must read back (offsets and values from gguf-py's GGUFReader and dequantize).

--smollm2 PATH prints the values tests/formats/gguf_test.cc expects from the real model file.
"""

import argparse
import importlib.metadata
import json
import struct
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "gguf"
N_ELEMENTS = 4096  # per golden: 128 blocks of 32 or 16 super-blocks of 256

QUANTIZABLE = [Q.F16, Q.BF16, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0]
# Byte offsets of the f16 fields of each block (ggml-common.h); everything else is quants or
# packed scales, where any bit pattern is valid.
F16_FIELDS = {
    Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0],
    Q.Q2_K: [80, 82], Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208],
}


def finite_halves(rng, n):
    """Random f16 bit patterns over the whole finite range (subnormals included)."""
    h = rng.integers(0, 1 << 16, size=n, dtype=np.uint32)
    inf_nan = (h & 0x7C00) == 0x7C00
    h[inf_nan] ^= 0x4000  # clear the top exponent bit: a large finite value
    return h.astype(np.uint16)


def random_blocks(rng, qtype):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    n_blocks = N_ELEMENTS // block
    if qtype in (Q.F16, Q.BF16):
        bits = finite_halves(rng, N_ELEMENTS)
        if qtype == Q.BF16:  # bf16 has f32's exponent: clear NaN/inf the same way
            bits = rng.integers(0, 1 << 16, size=N_ELEMENTS, dtype=np.uint32)
            bad = (bits & 0x7F80) == 0x7F80
            bits[bad] ^= 0x4000
            bits = bits.astype(np.uint16)
        return bits.view(np.uint8).reshape(1, -1)
    raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    for off in F16_FIELDS[qtype]:
        raw[:, off:off + 2] = finite_halves(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    return raw


def quantized_blocks(rng, qtype):
    # Weights-like data: mostly small normals, a few outliers, some exact zeros.
    x = rng.standard_normal(N_ELEMENTS).astype(np.float32) * np.float32(0.05)
    x[rng.integers(0, N_ELEMENTS, 40)] *= np.float32(40)
    x[rng.integers(0, N_ELEMENTS, 40)] = 0
    x[:32] = 0  # an all-zero block (scale 0)
    q = gguf.quants.quantize(x.reshape(16, -1), qtype)
    return q.reshape(1, -1).view(np.uint8) if q.dtype != np.uint8 else q


def write_quant_goldens(rng):
    qdir = OUT / "quants"
    qdir.mkdir(parents=True, exist_ok=True)
    manifest = []
    cases = [(t, "quantize") for t in QUANTIZABLE]
    cases += [(t, "random") for t in [Q.F16, Q.BF16] + list(F16_FIELDS)]
    for qtype, source in cases:
        raw = quantized_blocks(rng, qtype) if source == "quantize" else random_blocks(rng, qtype)
        raw = np.ascontiguousarray(raw, dtype=np.uint8)
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        rows = raw.reshape(-1, N_ELEMENTS // block * size)
        expected = gguf.quants.dequantize(rows, qtype).astype(np.float32).reshape(-1)
        assert expected.size == N_ELEMENTS and np.all(np.isfinite(expected))
        stem = f"{qtype.name.lower()}_{source}"
        (qdir / f"{stem}.blocks").write_bytes(raw.tobytes())
        (qdir / f"{stem}.f32").write_bytes(expected.astype("<f4").tobytes())
        manifest.append({"type": qtype.name, "id": int(qtype), "source": source,
                         "elements": N_ELEMENTS, "blocks": f"{stem}.blocks",
                         "expected": f"{stem}.f32"})
    (qdir / "manifest.json").write_text(json.dumps(
        {"gguf_py": importlib.metadata.version("gguf"),
         "goldens": manifest}, indent=1) + "\n")


class Writer(gguf.GGUFWriter):
    """GGUFWriter refuses empty arrays, which the format allows; write them with a given
    element type (uint8 for inner arrays, whose type the writer does not pass down)."""

    def _pack_val(self, val, vtype, add_vtype, sub_type=None):
        if vtype == V.ARRAY and isinstance(val, (list, tuple)) and len(val) == 0:
            out = struct.pack("<I", int(vtype)) if add_vtype else b""
            return out + struct.pack("<IQ", int(sub_type if sub_type is not None else V.UINT8), 0)
        return super()._pack_val(val, vtype, add_vtype, sub_type)


def write_small_file(rng):
    path = OUT / "small_v3.gguf"
    w = Writer(path, "llama")
    w.add_custom_alignment(64)
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)
    w.add_int32("test.i32", -2000000000)
    w.add_uint64("test.u64", 2**63 + 5)
    w.add_int64("test.i64", -(2**62))
    w.add_float32("test.f32", 0.1)
    w.add_float64("test.f64", 0.1)
    w.add_bool("test.true", True)
    w.add_bool("test.false", False)
    w.add_string("test.string", "h\u00e9llo\nw\u00f6rld")
    w.add_key_value("test.empty_string", "", V.STRING)  # add_string drops empty strings
    for key, vals, sub in [
        ("test.arr_u8", [0, 255, 7], V.UINT8), ("test.arr_i8", [-128, 127], V.INT8),
        ("test.arr_u16", [65535, 1], V.UINT16), ("test.arr_i16", [-32768, 5], V.INT16),
        ("test.arr_u32", [4294967295, 0], V.UINT32), ("test.arr_i32", [1, -2, 3], V.INT32),
        ("test.arr_u64", [2**64 - 1, 9], V.UINT64), ("test.arr_i64", [-(2**63), 2**63 - 1], V.INT64),
        ("test.arr_f32", [0.5, -1.25, 3e38], V.FLOAT32), ("test.arr_f64", [0.1, -2.5], V.FLOAT64),
        ("test.arr_bool", [True, False, True], V.BOOL), ("test.arr_str", ["a", "", "ccc"], V.STRING),
        ("test.empty", [], V.INT32),
    ]:
        w.add_key_value(key, vals, V.ARRAY, sub_type=sub)
    w.add_array("test.nested", [[1, 2, 3], ["x", "yz"], [], [True, False]])
    w.add_array("test.nested3", [[[1], [2, 3]], [[4]]])

    tensors = {}
    tensors["t.f32"] = (np.arange(12, dtype=np.float32).reshape(3, 4) * np.float32(0.25) - 1, None)
    tensors["t.f16"] = (rng.standard_normal(5).astype(np.float16), None)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    tensors["t.q8_0"] = (gguf.quants.quantize(x, Q.Q8_0), Q.Q8_0)
    tensors["t.q4_k"] = (random_blocks(rng, Q.Q4_K)[:2], Q.Q4_K)
    tensors["t.bf16"] = (gguf.quants.quantize(rng.standard_normal((2, 3)).astype(np.float32), Q.BF16), Q.BF16)
    for name, (data, raw_dtype) in tensors.items():
        w.add_tensor(name, data, raw_dtype=raw_dtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    # What anvil must read back, as gguf-py's reader sees it.
    r = gguf.GGUFReader(path)
    out = {"tensors": []}
    for t in r.tensors:
        values = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).astype(np.float32)
        out["tensors"].append({
            "name": t.name, "type": t.tensor_type.name, "dims": [int(d) for d in t.shape],
            "offset": int(t.data_offset), "nbytes": int(t.n_bytes),
            "values_f32_bits": [int(b) for b in values.reshape(-1).view(np.uint32)],
        })
    out["keys"] = list(r.fields.keys())[3:]  # after GGUF.version, tensor_count, kv_count
    (OUT / "small_v3.json").write_text(json.dumps(out, indent=1) + "\n")


def print_smollm2(path):
    r = gguf.GGUFReader(path)
    t = {x.name: x for x in r.tensors}
    for name, row in [("blk.0.ffn_down.weight", 3), ("blk.29.attn_v.weight", 191),
                      ("token_embd.weight", 1000)]:
        x = t[name]
        values = gguf.quants.dequantize(x.data, x.tensor_type)[row]
        picks = [0, 1, 17, 31, 32, 100, len(values) - 1]
        print(name, x.tensor_type.name, "row", row,
              [(i, float(values[i]).hex()) for i in picks],
              "sum", repr(float(np.sum(values.astype(np.float64)))))


# Types added after the first goldens, with their own random stream so the older files stay
# byte for byte what they were (gguf-py dequantizes these but cannot quantize them).
LATER_RANDOM = {Q.IQ4_NL: [0], Q.IQ4_XS: [0]}


def write_later_quant_goldens():
    rng = np.random.default_rng(20261201)
    qdir = OUT / "quants"
    manifest_path = qdir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for qtype, f16_fields in LATER_RANDOM.items():
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        n_blocks = N_ELEMENTS // block
        raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
        for off in f16_fields:
            raw[:, off:off + 2] = finite_halves(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
        expected = gguf.quants.dequantize(raw.reshape(1, -1), qtype).astype(np.float32).reshape(-1)
        assert expected.size == N_ELEMENTS and np.all(np.isfinite(expected))
        stem = f"{qtype.name.lower()}_random"
        (qdir / f"{stem}.blocks").write_bytes(raw.tobytes())
        (qdir / f"{stem}.f32").write_bytes(expected.astype("<f4").tobytes())
        entry = {"type": qtype.name, "id": int(qtype), "source": "random",
                 "elements": N_ELEMENTS, "blocks": f"{stem}.blocks", "expected": f"{stem}.f32"}
        manifest["goldens"] = [g for g in manifest["goldens"] if g["blocks"] != entry["blocks"]]
        manifest["goldens"].append(entry)
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smollm2", help="print the expected values of this model file and exit")
    args = ap.parse_args()
    if args.smollm2:
        print_smollm2(args.smollm2)
        return
    rng = np.random.default_rng(20240607)
    OUT.mkdir(parents=True, exist_ok=True)
    write_quant_goldens(rng)
    write_small_file(rng)
    write_later_quant_goldens()


if __name__ == "__main__":
    main()
