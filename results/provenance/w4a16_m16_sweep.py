"""W4A16 dot kernel at M=16 (and 8): a wider sweep of its settings than the tuner's five candidates."""
import itertools, json, os, sys
sys.path.insert(0, os.getcwd())
import torch, triton
import torch.nn.functional as F
from course.loader import load_kernels
qm = load_kernels("quant_matmul", "solutions")
DC = qm.DotConfig
def bench(fn):
    return triton.testing.do_bench(fn, warmup=20, rep=120, return_mode="median") * 1e3
rows = []
for m in (16,):
    data = {}
    for n in (14336, 4096):
        x = torch.randn(m, 4096, device="cuda", dtype=torch.float16)
        wp = torch.randint(0, 256, (n, 2048), dtype=torch.uint8, device="cuda")
        s = (torch.rand(n, 32, device="cuda") * 0.02 + 0.001).half()
        data[n] = (x, wp.view(torch.int32), s)
    cur = qm.pick_config(4, m, data[14336][0])
    cands = [cur]
    for bn, bk, w, st, pps in itertools.product((32, 64, 128), (128, 256), (2, 4, 8), (2, 3, 4), (2, 3, 4, 5)):
        if bn == 32 and w == 8: continue
        if bk == 256 and st == 4: continue
        cands.append(DC(block_n=bn, block_m=16, block_k=bk, num_warps=w, num_stages=st, programs_per_sm=pps, dot_16bit=True))
    ref = {n: qm.w4a16_launch(*data[n][:3], 128, cur).float() for n in data}
    for c in cands:
        try:
            t = {}
            for n in data:
                x, words, s = data[n]
                y = qm.w4a16_launch(x, words, s, 128, c)
                assert (y.float() - ref[n]).abs().max().item() < 0.05 * ref[n].abs().max().item()
                t[n] = bench(lambda: qm.w4a16_launch(x, words, s, 128, c))
            rows.append({"M": m, "cfg": c.__dict__, "us_14336": t[14336], "us_4096": t[4096], "current": c == cur})
        except Exception as e:
            rows.append({"M": m, "cfg": c.__dict__, "error": repr(e)[:120]})
    ok = [r for r in rows if r["M"] == m and "error" not in r]
    base = next(r for r in ok if r["current"])
    print(f"M={m} current {base['cfg']}: {base['us_14336']:.2f} / {base['us_4096']:.2f} us")
    for r in sorted(ok, key=lambda r: r["us_14336"] + 3.5 * r["us_4096"])[:8]:
        print(f"   {r['us_14336']:6.2f} {r['us_4096']:6.2f}  {r['cfg']}")
json.dump(rows, open(os.environ.get("OUT", "/tmp") + "/w4_sweep.json", "w"), indent=0)
