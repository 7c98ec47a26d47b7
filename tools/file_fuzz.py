#!/usr/bin/env python3
"""Corrupted model folders against anvil's loaders: a fixture's config.json, model.safetensors
or model.gguf mutated at random (truncated, bytes overwritten, the safetensors header's length,
dtypes, shapes and offsets rewritten, config values made negative, huge, of the wrong type or
removed), then `anvil logits` on it; or one of tests/data/tokenizers' tokenizer.json and
tokenizer_config.json with a value anywhere in it replaced, removed or joined by junk, then
`anvil tokenize` and `anvil detokenize` on it. Every run must end with a result or a clean error (exit
status 1 or 2 and a message on stderr), never a signal, a sanitizer report or a hang; the
script prints each case that does not, with the mutation that made it, and exits 1 if any.
Run it with an ASan/UBSan build to catch reads out of bounds that happen not to crash.

Usage: python3 tools/file_fuzz.py SEED [COUNT]   (uses ./build/anvil, or $ANVIL)
"""
import json, os, random, shutil, struct, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
anvil = os.environ.get('ANVIL') or os.path.join(here, '..', 'build', 'anvil')
fixture = os.path.join(here, '..', 'tests', 'data', 'qwen3-tiny')
tokenizers = os.path.join(here, '..', 'tests', 'data', 'tokenizers')
rng = random.Random(int(sys.argv[1]))
count = int(sys.argv[2]) if len(sys.argv) > 2 else 100


def weird_number():
    return rng.choice([0, -1, -7, 1, 3, 2**31 - 1, 2**31, 2**32 + 5, 2**63 - 1, 10**18, 1.5, -0.0,
                       1e308, 'x', None, [], {}, True])


def mutate_safetensors(data):
    n = struct.unpack('<Q', data[:8])[0]
    header = json.loads(data[8:8 + n])
    kind = rng.choice(['truncate', 'bytes', 'length', 'dtype', 'shape', 'offsets', 'drop', 'junk'])
    names = [k for k in header if k != '__metadata__']
    name = rng.choice(names)
    if kind == 'truncate':
        return data[:rng.randrange(len(data))], kind
    if kind == 'bytes':
        out = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            out[rng.randrange(min(len(out), 8 + n + 64))] = rng.randrange(256)
        return bytes(out), kind
    if kind == 'length':
        return struct.pack('<Q', weird_length(n, len(data))) + data[8:], kind
    if kind == 'dtype':
        header[name]['dtype'] = rng.choice(['F64', 'I8', 'U8', 'BOOL', 'F8_E4M3', 'Q4', '', 7,
                                            'BF16', 'F16', 'F32', 'I64'])
    elif kind == 'shape':
        shape = header[name]['shape']
        i = rng.randrange(len(shape)) if shape else 0
        if shape and rng.random() < 0.7:
            shape[i] = weird_number()
        else:
            header[name]['shape'] = rng.choice([[], [0], [1, 2, 3, 4, 5], 'shape', None])
    elif kind == 'offsets':
        off = header[name]['data_offsets']
        off[rng.randrange(2)] = weird_number()
        if rng.random() < 0.3:
            header[name]['data_offsets'] = rng.choice([[5], off[::-1], [0, 0], 'x'])
    elif kind == 'drop':
        del header[name]
    else:
        header[name][rng.choice(['dtype', 'shape', 'data_offsets', 'extra'])] = weird_number()
    text = json.dumps(header).encode()
    return struct.pack('<Q', len(text)) + text + data[8 + n:], f'{kind} {name}'


def weird_length(n, size):
    return rng.choice([0, 1, 7, n - 1, n + 1, size, size - 8, 2**63, 2**64 - 1, 100 * 2**20])


def mutate_gguf(data):
    kind = rng.choice(['truncate', 'bytes', 'counts', 'word'])
    out = bytearray(data)
    if kind == 'truncate':
        return data[:rng.randrange(len(data))], kind
    if kind == 'counts':  # tensor count or metadata count (after magic and version)
        at = rng.choice([8, 16])
        out[at:at + 8] = struct.pack('<Q', rng.choice([0, 1, 2**31, 2**40, 2**64 - 1]))
        return bytes(out), f'{kind} at {at}'
    if kind == 'word':  # a 64-bit word of the metadata or tensor infos (lengths, dims, offsets)
        at = rng.randrange(24, min(len(out) - 8, 1 << 16))
        out[at:at + 8] = struct.pack('<Q', rng.choice([0, 2**31, 2**63, 2**64 - 1, 12345678901]))
        return bytes(out), f'{kind} at {at}'
    for _ in range(rng.randint(1, 16)):
        out[rng.randrange(min(len(out), 1 << 16))] = rng.randrange(256)
    return bytes(out), kind


def mutate_config(text):
    config = json.loads(text)
    key = rng.choice(sorted(config))
    kind = rng.choice(['value', 'drop', 'nested'])
    if kind == 'value':
        config[key] = weird_number()
    elif kind == 'drop':
        del config[key]
    else:
        config['rope_scaling'] = rng.choice([{'rope_type': 'yarn', 'factor': weird_number()},
                                             {'rope_type': 'longrope', 'short_factor': [1.0]},
                                             {'type': weird_number()}, 'linear', [1]])
        key = 'rope_scaling'
    return json.dumps(config), f'{kind} {key}'


def mutate_json_anywhere(value):
    """A random node of the JSON tree replaced, removed or (a list) joined by a junk element."""
    path = []
    node = value
    while isinstance(node, (dict, list)) and node and rng.random() < 0.8:
        key = rng.choice(sorted(node)) if isinstance(node, dict) else rng.randrange(len(node))
        path.append(key)
        parent, node = node, node[key]
    if not path:
        return weird_number(), 'whole file'
    kind = rng.choice(['value', 'drop', 'junk'])
    if kind == 'drop':
        del parent[path[-1]]
    elif kind == 'junk' and isinstance(node, list):
        node.insert(rng.randrange(len(node) + 1), rng.choice([weird_number(), 'a b c', ['x'], {}]))
    else:
        parent[path[-1]] = weird_number() if rng.random() < 0.8 else rng.choice(['', 'ÿ', '\u0000'])
    return value, f'{kind} at {"/".join(str(k) for k in path)[:120]}'


def run_tokenizer(folder):
    for args in (['tokenize', folder, 'Hello wörld 123 <|im_start|> 😀'],
                 ['detokenize', folder, '--ids', '0,1,2,3,100'],
                 ['detokenize', folder, '--ids', '5,150000']):
        verdict, err = run_args(args)
        if verdict:
            return verdict, err
    return None, err


def run(folder_or_file, out):
    return run_args(['logits', folder_or_file, '--input-ids', '1,2,3', '--out', out, '--threads',
                     '1'])


def run_args(args):
    try:
        r = subprocess.run([anvil] + args, capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        return 'hang (60 s)', ''
    err = r.stderr.decode('utf-8', errors='replace')
    if '\ufffd' in err:
        return 'a message that is not UTF-8 (raw bytes of the file echoed)', err
    if r.returncode < 0:
        return f'signal {-r.returncode}', err
    if 'Sanitizer' in err or 'runtime error' in err:
        return 'sanitizer report', err
    if r.returncode not in (0, 1, 2):
        return f'exit status {r.returncode}', err
    if r.returncode != 0 and not err.strip():
        return 'failed without a message', err
    return None, err


bad = 0
errors = 0
with tempfile.TemporaryDirectory() as tmp:
    for i in range(count):
        case = os.path.join(tmp, str(i))
        target = rng.choice(['safetensors', 'safetensors', 'gguf', 'config', 'tokenizer',
                             'tokenizer'])
        if target == 'tokenizer':
            source = rng.choice(sorted(d for d in os.listdir(tokenizers)
                                       if os.path.isdir(os.path.join(tokenizers, d))))
            shutil.copytree(os.path.join(tokenizers, source), case)
            name = 'tokenizer_config.json' if rng.random() < 0.2 and os.path.exists(
                os.path.join(case, 'tokenizer_config.json')) else 'tokenizer.json'
            path = os.path.join(case, name)
            value, what = mutate_json_anywhere(json.load(open(path, encoding='utf-8')))
            open(path, 'w', encoding='utf-8').write(json.dumps(value, ensure_ascii=False))
            what = f'{source}/{name} {what}'
            verdict, err = run_tokenizer(case)
        else:
            shutil.copytree(os.path.join(fixture, 'model'), case)
            subject = case
            if target == 'safetensors':
                path = os.path.join(case, 'model.safetensors')
                data, what = mutate_safetensors(open(path, 'rb').read())
                open(path, 'wb').write(data)
            elif target == 'config':
                path = os.path.join(case, 'config.json')
                text, what = mutate_config(open(path).read())
                open(path, 'w').write(text)
            else:
                data, what = mutate_gguf(open(os.path.join(fixture, 'model.gguf'), 'rb').read())
                subject = os.path.join(case, 'model.gguf')
                open(subject, 'wb').write(data)
            verdict, err = run(subject, os.path.join(tmp, 'logits.safetensors'))
        errors += bool(err.strip())
        if verdict:
            bad += 1
            print(f'{i:3} {target} {what}: {verdict}\n    {err.strip()[-400:]}', flush=True)
        shutil.rmtree(case)
print(f'{count} corrupted folders, {errors} refused with a message, {bad} not cleanly')
sys.exit(1 if bad else 0)
