# Exploit (or accident): a call that never returns. Defence: a time limit per request; the worker is
# killed, the case reported as a timeout, and the next case (or assignment) gets a fresh worker.
def _cheat(honest, name):
    def cheat(*args, **kwargs):
        while True:
            pass

    return cheat
