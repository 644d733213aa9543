#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (fuzz/corpus/<target>/): small valid inputs and near
misses of each format, made here rather than copied from any data set. The tokenizer's
seeds need a trained model: pass the `hsm` tool (`--hsm build/engine/cli/hsm`) to train a
tiny one on the text below, or they are left as they are.

Regression inputs (crashes the fuzzers found) live in the same folders under names starting
with "regression-"; this script never touches them."""
import argparse
import json
import os
import struct
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")

STORY = [
    "Once upon a time there was a little fox who liked to count the stars.",
    "Every night she sat on the hill and said: one, two, three, four, five!",
    "Her friend the owl laughed. \"You will never count them all,\" he said.",
    "The fox did not mind. She counted 1234 stars, then 5678, then she fell asleep.",
    "In the morning the sun was warm and the grass was wet with dew.",
    "A small bird sang a song about a big red boat on a blue, blue sea.",
    "The boat had a sail, a flag and a cat named Tom who never got wet.",
    "Tom the cat liked fish, milk and naps in the sun. He did not like rain.",
    "One day it rained and rained. Tom hid under the sail and waited.",
    "When the rain stopped, a rainbow came out, and everyone was happy again.",
    "Café, naïve, über: some words have accents, and some have emoji 🙂.",
    "The end.",
]


def write(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def safetensors(header, data=b"", pad=True, length=None):
    text = header if isinstance(header, str) else json.dumps(header)
    raw = text.encode()
    if pad:
        raw += b" " * ((8 - len(raw) % 8) % 8)
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


def safetensors_seeds():
    f32 = struct.pack("<4f", 1, 2, 3, 4)
    write("safetensors", "empty", safetensors({}))
    write("safetensors", "one-f32", safetensors({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}, f32))
    write("safetensors", "metadata-and-dtypes", safetensors({
        "__metadata__": {"format": "pt", "step": "12"},
        "a": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]},
        "b": {"dtype": "BF16", "shape": [1, 2], "data_offsets": [4, 8]},
        "c": {"dtype": "I64", "shape": [], "data_offsets": [8, 16]},
        "d": {"dtype": "U8", "shape": [0, 3], "data_offsets": [16, 16]},
        "e": {"dtype": "BOOL", "shape": [3], "data_offsets": [16, 19]},
    }, bytes(range(19))))
    write("safetensors", "truncated", safetensors({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, f32[:9]))
    write("safetensors", "overlap", safetensors({
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, f32))
    write("safetensors", "duplicate-key",
          safetensors('{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                      '"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', f32[:4]))
    write("safetensors", "huge-shape", safetensors({
        "w": {"dtype": "F64", "shape": [4294967296, 4294967296], "data_offsets": [0, 16]}}, f32))
    write("safetensors", "header-length-past-end", safetensors({}, length=1 << 40))
    write("safetensors", "bad-dtype", safetensors({"w": {"dtype": "F7", "shape": [1], "data_offsets": [0, 4]}}, f32[:4]))


def config_seeds():
    def layers(*mixers, **kw):
        return [dict(mixer=m, **kw) for m in mixers]
    write("config", "hsm-ab", json.dumps({
        "name": "tiny_hsm_ab", "vocab_size": 300, "d_model": 32, "context": 64, "dropout": 0.1,
        "layers": layers("hsm_ab", "hsm_ab", "attn")}, indent=2))
    write("config", "every-field", json.dumps({
        "name": "hybrid", "description": "all fields", "vocab_size": 5000, "d_model": 256, "context": 128,
        "dropout": 0.0, "init": "ex",
        "layers": [{"mixer": "hsm_ab", "ffn": 1024, "heads": 1}, {"mixer": "attn", "ffn": 512, "heads": 8},
                   {"mixer": "hsm_ab_mh_ext", "ffn": 1024, "heads": 8}, {"mixer": "hsm_gate2", "ffn": 960, "heads": 4},
                   {"mixer": "she", "ffn": 512, "heads": 1}, {"mixer": "taylor", "ffn": 512, "heads": 8}]}))
    write("config", "defaults-only", '{"layers": [{"mixer": "attn"}, {}]}')
    write("config", "unknown-key", '{"layers": [{"mixer": "attn"}], "d_modle": 64}')
    write("config", "bad-heads", '{"d_model": 30, "layers": [{"mixer": "attn", "heads": 8}]}')
    write("config", "shift-past-context", json.dumps({"context": 4, "layers": layers("hsm_ab", "hsm_ab", "hsm_ab", "hsm_ab")}))
    write("config", "wrong-types", '{"vocab_size": "5000", "dropout": true, "layers": {"mixer": "attn"}}')
    write("config", "not-json", '{"layers": [')


def corpus_seeds():
    # The first byte picks the extension (0 .txt, 1 .jsonl, 2 .json, 3 .md) and, in bits 2-4,
    # after how many documents reading stops (0: never).
    stories = "\n<|endoftext|>\n".join(STORY[:4]) + "\n<|endoftext|>\n" + "\n".join(STORY[4:])
    write("corpus", "tinystories.txt", b"\x00" + stories.encode())
    write("corpus", "crlf-bom.txt", b"\x00\xef\xbb\xbf" + "\r\n<|endoftext|>\r\n".join(STORY[:3]).encode())
    write("corpus", "jsonl", b"\x01" + "\n".join(
        json.dumps({"story": s} if i % 2 else {"text": s, "source": "x"}) for i, s in enumerate(STORY)).encode())
    write("corpus", "json", b"\x02" + json.dumps(
        [{"story": s, "instruction": {"words": ["a", "b"], "features": []}, "summary": "s"} for s in STORY[:5]]).encode())
    write("corpus", "json-stop-after-2", b"\x0a" + json.dumps([{"story": s} for s in STORY[:5]]).encode())
    write("corpus", "plain.md", b"\x03# A heading\n\n" + " ".join(STORY).encode())
    write("corpus", "latin1.txt", b"\x00caf\xe9 au lait")
    write("corpus", "binary.txt", b"\x00\xff\xfeh\x00i\x00")
    write("corpus", "jsonl-bad-line", b"\x01" + b'{"story": "ok"}\n{"story": 3}\n')
    write("corpus", "json-not-array", b"\x02" + b'{"story": "one"}')


def metrics_seeds():
    # The first byte picks poll()'s slice (0: 1 byte, 1: 7, 2: 64, 3: 4096, 4: all); 0x01
    # cuts the rest into the pieces appended one by one; a piece starting 0x02 replaces the file.
    lines = [json.dumps({"kind": "train", "step": s, "total_steps": 40, "epoch": s / 40, "wall_s": s * 0.5,
                         "train_loss": 5.0 - s / 10, "tokens_per_s": 1200.5, "lr": 0.002}) for s in range(10, 41, 10)]
    lines.insert(2, json.dumps({"kind": "eval", "step": 20, "total_steps": 40, "epoch": 0.5, "wall_s": 10.0,
                                "val_loss": 3.25, "val_accuracy": 0.41}))
    text = "\n".join(lines) + "\n"
    write("metrics", "whole", b"\x04" + text.encode())
    write("metrics", "appended-mid-line", b"\x02" + text[:70].encode() + b"\x01" + text[70:200].encode() + b"\x01" +
          text[200:].encode())
    write("metrics", "rewritten-by-resume", b"\x03" + text.encode() + b"\x01\x02" + "\n".join(lines[:2]).encode() + b"\n")
    write("metrics", "damaged-lines", b"\x01" + lines[0].encode() + b'\n{"kind": "train"}\nnot json\n\n' +
          lines[1].encode() + b"\n")
    write("metrics", "unfinished-last-line", b"\x02" + lines[0].encode() + b'\n{"kind": "train", "step": 5')


def diagnostics_log_seeds():
    # As metrics_seeds: byte 0 picks the slice, 0x01 cuts pieces, 0x02 starts a rewrite.
    def indicators(x):
        return {"entropy": 6.9 - x, "conc": 2.4 + x, "headdiv": x / 10, "sink": 0.13, "locfoc": [0.54, 0.5, 0.0, 0.0]}

    def record(step):
        return json.dumps({"step": step, "prompt": "Alice was so tired when she got home so she went", "layers": [
            {"layer": 0, "mixer": "hsm_ab", "kind": "linear", "indicators": indicators(0.1),
             "heads": [{"head": 0, "indicators": indicators(0.1)}],
             "weights": {"a": [0.49], "b": [0.5], "shifts": [1]}, "lens_kl": 2.5},
            {"layer": 1, "mixer": "attn", "kind": "attention", "indicators": indicators(0.3),
             "heads": [{"head": h, "indicators": indicators(h / 4)} for h in range(2)], "weights": {},
             "lens_kl": None},
            {"layer": 2, "mixer": "hsm_ab_mh", "kind": "linear", "indicators": indicators(0.2), "heads": [],
             "weights": {"a": [0.1, -0.2], "b": [1.0, 0.5], "shifts": [1, 2]}, "lens_kl": 0.0}]})
    lines = [record(s) for s in (200, 400, 600)]
    text = "\n".join(lines) + "\n"
    write("diagnostics_log", "whole", b"\x04" + text.encode())
    write("diagnostics_log", "appended-mid-line", b"\x02" + text[:300].encode() + b"\x01" + text[300:].encode())
    write("diagnostics_log", "rewritten-by-resume", b"\x03" + text.encode() + b"\x01\x02" + lines[0].encode() + b"\n")
    write("diagnostics_log", "damaged-lines", b"\x01" + lines[0].encode() + b'\n{"step": 3, "prompt": "x"}\nnot json\n' +
          lines[1].replace('"linear"', '"softmax"').encode() + b"\n" + lines[2].encode() + b"\n")


def traces_seeds():
    # As metrics_seeds: byte 0 picks the slice, 0x01 cuts pieces, 0x02 starts a rewrite. Records of
    # a 2-layer model on a 3-token prompt (hsm/formation.h's line format), one without an effect.
    def record(step, share, no_effect=False):
        row = [0.0, 0.5, 1.0]
        exact = {} if no_effect else {"residual": [row, row], "mixer": [[0.0, 0.25, None], row],
                                      "ffn": [[0.0, 0.0, 0.0], row]}
        routes = [] if no_effect else [{"layer": 1, "from": 0, "to": 2, "weight": share, "kind": "mixer"},
                                       {"layer": 0, "from": 2, "to": 2, "weight": 1.0 - share, "kind": "residual"}]
        return json.dumps({"step": step, "val_loss": 3.5 - step / 100, "accuracy": step / 400,
                           "example": "test example 0 of mqar:vocab=32", "clean": ["k", "v", "q"],
                           "corrupt": ["x", "v", "q"], "clean_ids": [4, 5, 6], "corrupt_ids": [7, 5, 6],
                           "corrupted_positions": [0], "layers": 2, "positions": 3, "answer_position": 2,
                           "answer_token": 5, "answer": "v", "clean_logprob": -0.2, "corrupt_logprob": -3.1,
                           "no_effect": no_effect, "exact": exact, "route_threshold": 0.02, "routes": routes,
                           "route_share": share, "mixer_effect": [0.25, 1.0], "seconds": 0.01})
    lines = [record(100, 0.01, True), record(200, 0.05), record(300, 0.4)]
    text = "\n".join(lines) + "\n"
    write("traces", "whole", b"\x04" + text.encode())
    # Strings holding quotes, brackets, a backslash and the names the light reader looks for.
    escaped = json.loads(lines[1])
    escaped["example"] = 'k"7" } ] "step": 9 \\ caf\u00e9'
    escaped["clean"] = ['"', "]", "{"]
    write("traces", "escaped-strings", b"\x04" + json.dumps(escaped).encode() + b"\n")
    write("traces", "appended-mid-line", b"\x02" + text[:400].encode() + b"\x01" + text[400:].encode())
    write("traces", "rewritten-by-resume", b"\x03" + text.encode() + b"\x01\x02" + lines[0].encode() + b"\n")
    write("traces", "damaged-lines", b"\x01" + lines[0].encode() + b'\n{"step": 3, "route_share": 0.5}\nnot json\n' +
          lines[1].replace('"mixer_effect": [0.25, 1.0]', '"mixer_effect": [0.25]').encode() + b"\n" +
          lines[2].encode() + b"\n")


def tokenizer_seeds(hsm):
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "stories.txt")
        with open(text, "w") as f:
            for i in range(3):
                f.write("\n".join(STORY) + "\n<|endoftext|>\n")
        model = os.path.join(tmp, "tokenizer.model")
        subprocess.run([hsm, "tokenizer", "train", "--data", text, "--out", model, "--vocab", "320"], check=True,
                       stdout=subprocess.DEVNULL)
        data = open(model, "rb").read()
    write("tokenizer", "tiny-320", data)
    write("tokenizer", "truncated", data[: len(data) // 2])
    # Without its <|endoftext|> piece: the name replaced by one of the same length.
    write("tokenizer", "no-end-of-text", data.replace(b"<|endoftext|>", b"<|endofline|>"))
    write("tokenizer", "not-a-model", b"\x0a\x05hello\x12\x03abc")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hsm", help="the hsm tool, to train the tokenizer seeds")
    args = parser.parse_args()
    safetensors_seeds()
    config_seeds()
    corpus_seeds()
    metrics_seeds()
    diagnostics_log_seeds()
    traces_seeds()
    if args.hsm:
        tokenizer_seeds(args.hsm)


if __name__ == "__main__":
    main()
