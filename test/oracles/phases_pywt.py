#!/usr/bin/python3
"""Oracle for the phases tests: PyWavelets' wavedec/waverec on given cases.

stdin: JSON list of {"signal": [...], "wavelet": "haar"|"db4", "mode": "periodization"|"symmetric",
                     "level": N, "threshold": T (soft, on the detail coefficients)}
stdout: JSON list of {"coeffs": [[cA_n], [cD_n], ..., [cD_1]], "rec": waverec(thresholded coeffs),
                      "max_level": pywt.dwt_max_level(len, wavelet)}
"""
import json
import sys
import warnings

import pywt


def main():
    warnings.simplefilter("ignore")  # levels deeper than dwt_max_level are asked for on purpose
    cases = json.load(sys.stdin)
    out = []
    for c in cases:
        coeffs = pywt.wavedec(c["signal"], c["wavelet"], mode=c["mode"], level=c["level"])
        # (pywt's soft threshold of 0 turns exact zeros into NaN: 0 means no thresholding)
        if c["threshold"] > 0:
            thr = [coeffs[0]] + [pywt.threshold(d, c["threshold"], mode="soft") for d in coeffs[1:]]
        else:
            thr = coeffs
        rec = pywt.waverec(thr, c["wavelet"], mode=c["mode"])
        out.append({
            "coeffs": [list(map(float, a)) for a in coeffs],
            "rec": list(map(float, rec)),
            "max_level": pywt.dwt_max_level(len(c["signal"]), c["wavelet"]),
        })
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
