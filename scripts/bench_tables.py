"""Print the README's benchmark tables from the JSON of scripts/bench-readme.sh."""
import glob
import json
import sys

d = sys.argv[1]


def best(pattern):
    out = {}
    for p in sorted(glob.glob(pattern)):
        for r in json.load(open(p)):
            k = (r["file"], r["codec"])
            assert r["roundtrip_ok"], r
            o = out.setdefault(k, dict(r))
            assert abs(o["ratio"] - r["ratio"]) < 1e-12, "ratio changed between passes"
            o["compress_mb_s"] = max(o["compress_mb_s"], r["compress_mb_s"])
            o["decompress_mb_s"] = max(o["decompress_mb_s"], r["decompress_mb_s"])
    return out


t1, t2, p1 = best(d + "/t1-*.json"), best(d + "/t2-*.json"), best(d + "/p1.json")
files = []
for f, _ in t1:
    if f not in files:
        files.append(f)
codecs = ["nzip", "zstd-1", "zstd-3", "zstd-19", "gzip", "zipnn", "dfloat11"]
name = lambda f: f.replace(".safetensors", "")
print("| file | bound | **nzip** | " + " | ".join(codecs[1:]) + " |")
print("|---" * (len(codecs) + 2) + "|")
for f in files:
    cells = [name(f), "%.4f" % t1[(f, "nzip")]["bound_ratio"]]
    cells += [("**%.4f**" if c == "nzip" else "%.4f") % t1[(f, c)]["ratio"] for c in codecs]
    print("| " + " | ".join(cells) + " |")
print()
print("| file | codec | compress, 1 thread | decompress, 1 thread | compress, 2 threads | decompress, 2 threads |")
print("|---|---|---|---|---|---|")
for f in files:
    for c in codecs:
        a, b = t1[(f, c)], t2[(f, c)]
        two = b["threads"] == 2
        print("| %s | %s | %.0f | %.0f | %s | %s |" % (
            name(f), "**%s**" % c if c == "nzip" else c, a["compress_mb_s"], a["decompress_mb_s"],
            "%.0f" % b["compress_mb_s"] if two else "–", "%.0f" % b["decompress_mb_s"] if two else "–"))
print()
for (f, c), r in p1.items():
    print("GOMAXPROCS=1 %s %s: compress %.0f, decompress %.0f MB/s" % (name(f), c, r["compress_mb_s"], r["decompress_mb_s"]))
