"""What the static checks share: the pass/fail tally and its summary."""

FAILS = []
PASSES = [0]


def ok(cond, what):
    if cond:
        PASSES[0] += 1
    else:
        FAILS.append(what)
        print("FAIL:", what)
    return cond


def summary():
    """Prints 'N passed, N failed' and returns the exit status."""
    print(f"{PASSES[0]} passed, {len(FAILS)} failed")
    return 1 if FAILS else 0
