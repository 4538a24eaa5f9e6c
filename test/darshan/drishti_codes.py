#!/usr/bin/env python3
"""Runs drishti (PyPI `drishti-io`) on one Darshan log and writes every insight
it raised, with its level, as JSON:

  drishti_codes.py OUT.json LOG.darshan

{"issues": [{"code": "P08", "level": "high", "issue": "..."}], "error": null}

drishti prints its insights through drishti.includes.config.message(code,
target, level, ...); this wraps that function (in the modules that imported
it) to record the code and level, then runs drishti's Darshan handler as its
command line does. drishti 0.8 fails while printing the job panel of a log
whose executable line is empty (after every check ran): the error is kept
beside the insights recorded until then.
"""
import json
import sys

LEVELS = {1: "high", 2: "warn", 3: "info", 4: "ok"}


def main():
    out, log = sys.argv[1], sys.argv[2]
    sys.argv = ["drishti", "--code", log]  # drishti parses its arguments when imported
    import drishti.includes.config as cfg
    import drishti.includes.module as mod
    seen = []
    orig = cfg.message

    def record(code, target, level, issue, recommendations=None, details=None):
        seen.append({"code": code, "level": LEVELS.get(level, str(level)), "issue": issue})
        return orig(code, target, level, issue, recommendations, details)

    mod.message = record
    from drishti.handlers import handle_darshan
    handle_darshan.message = record
    err = None
    try:
        handle_darshan.handler()
    except Exception as e:  # noqa: BLE001 -- kept in the result, judged by the caller
        err = "%s: %s" % (type(e).__name__, e)
    with open(out, "w") as f:
        json.dump({"issues": seen, "error": err}, f)


if __name__ == "__main__":
    main()
