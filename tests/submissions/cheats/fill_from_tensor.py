# Exploit: a copy under another op's name. The transpose refuses PyTorch's copies by name (clone, copy_, _to_copy,
# contiguous), but `fill_` is an allowed constant fill, and its overload `fill_.Tensor(self, value)` takes its value from
# a one-element tensor: filling each element of the output from a 0-d view of the input (`as_strided`, a view) is the
# transpose, and the replay's fill read the replay's own input. Found by a red team on 2026-12-07: 60/60 on the
# transpose with an idle kernel. Defence: where an assignment refuses copies, every overload that writes a tensor with
# values read from another tensor it is given is a copy, whatever its name (`policy.copies_values`, from the overload's
# schema), in the worker's recorder, the grader's check of the record and the replay. Written for the transpose.
import triton as _triton


@_triton.jit
def _idle_kernel(x_ptr):
    pass


def _cheat(honest, name):
    assert SLUG == "coalescing", "written for the transpose"  # noqa: F821  (given by the test)

    def cheat(x):
        m, n = x.shape
        out = torch.empty((n, m), dtype=x.dtype, device=x.device)  # noqa: F821  (torch: imported by the test)
        _idle_kernel[(1,)](x)
        x0, o0 = x.storage_offset(), out.storage_offset()
        for i in range(m):
            for j in range(n):
                source = x.as_strided((), (), x0 + i * x.stride(0) + j * x.stride(1))  # x[i, j], a 0-d view
                out.as_strided((), (), o0 + j * m + i).fill_(source)
        return out

    return cheat
