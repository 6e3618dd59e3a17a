import sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd()))
import torch
from solutions.tiling import kernels as tk
dev = torch.device("cuda"); sms = torch.cuda.get_device_properties(dev).multi_processor_count
for s in (1536, 2048, 3072, 4096, 8192):
    a = torch.randn(s, s, device=dev, dtype=torch.float16); b = torch.randn(s, s, device=dev, dtype=torch.float16)
    tk.matmul(a, b); tk.matmul(a, b); torch.cuda.synchronize()
    for key, at in tk._autotuned.items():
        cfg = getattr(at, "best_config", None)
        if cfg is None: continue
        bm, bn = cfg.kwargs["BLOCK_M"], cfg.kwargs["BLOCK_N"]
    tiles = -(-s // bm) * -(-s // bn); waves = -(-tiles // sms)
    print(f"{s}^3: tile {bm}x{bn} {cfg.num_warps}w {cfg.num_stages}st -> {tiles} tiles on {sms} SMs = {tiles / sms:.2f} waves, last-wave-padded use {tiles / (waves * sms):.0%}")
