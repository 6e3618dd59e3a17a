"""Child of w4a16_stalls.sh: three launches of one W4A16 GEMV at 1x4096x14336 fp16 for Nsight Compute to profile.
WHICH=solution (the course call) or WHICH=thread_rows (results/provenance/w4a16_thread_rows_probe.py, x permuted in
float32, 128 rows, 2 warps, about 8 programs per SM: its fastest setting on the H200)."""
import os
import sys
from pathlib import Path

sys.path.insert(0, os.getcwd())
sys.argv = sys.argv[:1]
import importlib.util  # noqa: E402

import torch  # noqa: E402

spec = importlib.util.spec_from_file_location("probe", Path("results/provenance/w4a16_thread_rows_probe.py"))
probe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(probe)
qm = probe.qm
x = torch.randn(1, 4096, device="cuda", dtype=torch.float16)
w4 = torch.randint(0, 256, (14336, 2048), dtype=torch.uint8, device="cuda")
s4 = torch.rand(14336, 32, device="cuda", dtype=torch.float16) * 0.01
if os.environ.get("WHICH", "solution") == "solution":
    call = lambda: qm.w4a16_matmul(x, w4, s4, 128)  # noqa: E731
else:
    call = probe.launcher(128, 2, 8, x, w4.view(torch.int32), s4, torch.cuda.get_device_properties(0).multi_processor_count,
                          x_perm=True, f32=True)
for _ in range(3):
    call()
torch.cuda.synchronize()
