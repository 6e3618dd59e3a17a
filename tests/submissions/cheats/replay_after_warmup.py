# Exploit: behave while the grader checks correctness and warms up, then replay one saved answer on
# every later call, still launching kernels so the calls look busy (detecting the warm-up by counting
# calls). Defence: the outputs of timed calls drawn at random after the timing are checked against
# their own inputs: a replayed answer is wrong.
HONEST_CALLS = 3  # the correctness case and the first warm-up calls


def _cheat(honest, name):
    state = {"calls": 0, "saved": None}

    def cheat(*args, **kwargs):
        state["calls"] += 1
        out = honest(*args, **kwargs)
        if state["calls"] <= HONEST_CALLS:
            state["saved"] = out
            return out
        return state["saved"]

    return cheat
