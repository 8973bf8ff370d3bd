#!/usr/bin/env python3
"""Vidur-shaped compute profiles of a built-in decoder, simulated in process (no `lpu` binary):
OUT/mlp.csv and OUT/attention.csv as Vidur's profilers write them (docs/vidur.md).

    LPU_BUILD_DIR=build PYTHONPATH=python:reports /usr/bin/python3 scripts/vidur_profile.py \
        llama2-7b --arch lpu-asic --dtype f16 --vocab-size 32768 \
        --num-tokens 1,16,128,512 --batch-sizes 1,8,32 --kv-cache-sizes 512,2048 \
        -o out/vidur/lpu-asic/meta-llama/Llama-2-7b-hf

Vidur reads them from data/profiling/compute/DEVICE/MODEL/ (its `--*_input_file` options name
other paths)."""
import argparse
import sys

import lpu


def ints(text):
    try:
        return [int(v) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError("expected comma-separated integers, got '%s'" % text) from None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="a built-in decoder (lpu list workloads), e.g. llama2-7b")
    ap.add_argument("-o", "--out-dir", required=True)
    ap.add_argument("--arch", default=None, help="a config name or path (default: lpu's)")
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--fusion", default="greedy")
    ap.add_argument("--dtype", default=None, help="f32, f16, bf16 (default: the preset's)")
    ap.add_argument("--num-tokens", type=ints, default=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
    ap.add_argument("--batch-sizes", type=ints, default=[1, 2, 4, 8, 16, 32])
    ap.add_argument("--kv-cache-sizes", type=ints, default=[128, 256, 512, 1024, 2048])
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--max-model-len", type=int, default=None)
    ap.add_argument("--vocab-size", type=int, default=None)
    a = ap.parse_args(argv)
    try:
        p = lpu.profile.vidur(a.model, arch=a.arch, tp=a.tp, num_tokens=a.num_tokens, batch_sizes=a.batch_sizes,
                              kv_cache_sizes=a.kv_cache_sizes, out_dir=a.out_dir, fusion=a.fusion, dtype=a.dtype,
                              block_size=a.block_size, max_model_len=a.max_model_len, vocab_size=a.vocab_size)
    except (lpu.LpuError, ValueError, TypeError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    print("%s: %d rows\n%s: %d rows (%d simulations)" % (p.mlp_path, len(p.mlp_rows), p.attention_path,
                                                        len(p.attention_rows), p.meta["runs"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
