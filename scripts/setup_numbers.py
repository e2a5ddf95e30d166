#!/usr/bin/env python3
"""Measure the README's setup tables with the nzip CLI.

  python3 scripts/setup_numbers.py [NZIP [SHARED]]

1. Transfer across architectures: per dtype, every model of ../shared gets
   its own setup (nzip setup build, defaults); then every model is coded
   with every setup of its group (nzip setup compare -setup-external: the
   setup's bytes are not counted, as when a setup is reused). The loss of a
   foreign setup is its ratio against the model's own setup.
2. A training run: setups built from the first checkpoint (and from
   step 100) code every later BF16 and F32 checkpoint; the run's total size
   is compared with each checkpoint's own setup and with per-chunk tables.

Prints Markdown. Ratios only: speeds come from nzip bench (see README).
"""
import json, os, subprocess, sys, tempfile

NZIP = sys.argv[1] if len(sys.argv) > 1 else "bin/nzip"
SHARED = sys.argv[2] if len(sys.argv) > 2 else "../shared"
O = os.path.join(SHARED, "models", "original")
B = os.path.join(SHARED, "models", "bench")
T = os.path.join(SHARED, "trajectories", "tinygpt-fortunes")

GROUPS = {
    "F32": [
        ("Llama-2 (stories260K)", f"{O}/stories260K.f32.safetensors"),
        ("GPT (tinygpt, torch.save)", f"{O}/step_001000.pt"),
        ("RWKV-4 (rwkv.cpp)", f"{O}/tiny-rwkv-4v0-660K-FP32.bin"),
        ("Silero VAD (conv+LSTM)", f"{O}/silero_vad_16k.safetensors"),
        ("DTLN (LSTM, ONNX)", f"{O}/model_1.onnx"),
        ("PP-OCRv4 rec (CNN, ONNX)", f"{O}/ch_PP-OCRv4_rec_infer.onnx"),
        ("faceres (CNN, TF.js)", f"{O}/faceres-deep/faceres-deep.json"),
    ],
    "F16": [
        ("Llama-2 (stories260K)", f"{O}/stories260K.f16.safetensors"),
        ("RWKV-4 (rwkv.cpp)", f"{O}/tiny-rwkv-4v0-660K-FP16.bin"),
        ("BlazePose full (TFLite)", f"{O}/pose_landmark_full.tflite"),
        ("BlazePose lite (TFLite)", f"{O}/pose_landmark_lite.tflite"),
        ("MoveNet (TF.js)", f"{O}/movenet-thunder/movenet-thunder.json"),
        ("7 MediaPipe/TF.js models (real-f16-native)", f"{B}/real-f16-native.safetensors"),
    ],
    "BF16": [
        ("Llama-2 (stories260K)", f"{O}/stories260K.bf16.safetensors"),
        ("GPT (tinygpt step 1000)", f"{T}/step_001000.bf16.safetensors"),
        ("16 models (real-bf16)", f"{B}/real-bf16.safetensors"),
    ],
}


def run(*args):
    r = subprocess.run([NZIP, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"nzip {' '.join(args)}: {r.stderr}")
    return r.stdout


def build(out, *files, extra=()):
    run("setup", "build", "-q", "-f", "-o", out, *extra, *files)
    return out


def compare(setups, files):
    rows = json.loads(run("setup", "compare", "-json", "-runs", "1", "-setup-external",
                          "-setups", ",".join(setups), *files))
    for r in rows:
        if r.get("error") or (not r.get("estimated") and not r["roundtrip_ok"]):
            sys.exit(f"compare failed: {r}")
    return rows


def transfer(tmp):
    print("### Transfer across architectures\n")
    print("Each model coded with every other model's setup of its dtype, against its own setup "
          "(setup external, defaults: 64 Ki chunks). Loss = 1 − foreign ratio / own ratio.\n")
    print("| dtype | model | per-chunk tables | own setup | foreign setups: mean loss | worst loss (setup from) |")
    print("|---|---|---|---|---|---|")
    summary = []
    for dt, models in GROUPS.items():
        setups = []
        for i, (name, path) in enumerate(models):
            setups.append(build(os.path.join(tmp, f"{dt}-{i}.nzsetup"), path))
        rows = compare(setups, [p for _, p in models])
        base = {os.path.basename(s): i for i, s in enumerate(setups)}
        for i, (name, path) in enumerate(models):
            f = os.path.basename(path)
            mine = [r for r in rows if r["file"] == f]
            none = next(r for r in mine if r["setup"] == "none")
            own = next(r for r in mine if r["setup"] == f"{dt}-{i}.nzsetup")
            losses = []
            for r in mine:
                if r["setup"] in base and base[r["setup"]] != i:
                    losses.append((1 - r["ratio"] / own["ratio"], models[base[r["setup"]]][0]))
            mean = sum(l for l, _ in losses) / len(losses)
            worst = max(losses)
            summary += [l for l, _ in losses]
            print(f"| {dt} | {name} | {none['ratio']:.4f} | {own['ratio']:.4f} ({(own['ratio']/none['ratio']-1)*100:+.2f} %) "
                  f"| {mean*100:+.2f} % | {worst[0]*100:+.2f} % ({worst[1]}) |")
    summary.sort()
    print(f"\n{len(summary)} transfers: median loss {summary[len(summary)//2]*100:+.2f} %, "
          f"worst {summary[-1]*100:+.2f} %, {sum(1 for l in summary if l <= 0.01)} of {len(summary)} within 1 %.\n")


def trajectory(tmp):
    print("### A training run\n")
    print("Every checkpoint of `trajectories/tinygpt-fortunes` coded with a setup built once from an early "
          "checkpoint (external), against each checkpoint's own setup and per-chunk tables. Totals over the run.\n")
    print("| checkpoints | setup from | total bytes | per-chunk tables | own setups (one per checkpoint) | early setup | loss vs own | vs per-chunk |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in ("bf16", "f32"):
        files = sorted(os.path.join(T, f) for f in os.listdir(T) if f.endswith(f".{kind}.safetensors"))
        for src in (files[0], files[1]):
            early = build(os.path.join(tmp, f"traj-{kind}-{os.path.basename(src)}.nzsetup"), src)
            orig = none = own = ext = 0
            for i, f in enumerate(files):
                ownp = build(os.path.join(tmp, f"own-{kind}-{i}.nzsetup"), f)
                rows = compare([ownp, early], [f])
                get = lambda s: next(r for r in rows if r["setup"] == s)
                orig += get("none")["original_bytes"]
                none += get("none")["compressed_bytes"]
                own += get(os.path.basename(ownp))["compressed_bytes"]
                ext += get(os.path.basename(early))["compressed_bytes"]
            print(f"| {len(files)} × {kind.upper()} | {os.path.basename(src)} | {orig:,} | {orig/none:.4f} | {orig/own:.4f} | "
                  f"{orig/ext:.4f} | {(1-own/ext)*100:+.2f} % | {(none/ext-1)*100:+.2f} % |")
    print()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        transfer(tmp)
        trajectory(tmp)


main()
