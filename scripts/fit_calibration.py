"""Fit the time model's shipped constants again on the measured runs shipped beside them, and write them.

    python scripts/fit_calibration.py

Writes optimum_ipu_ext/placement/data/calibration.json from optimum_ipu_ext/placement/data/measured_runs.json;
tests/placement/test_calibration.py fails where the two disagree.
"""

from optimum_ipu_ext.config.calibration import SHIPPED, write_shipped

if __name__ == "__main__":
    data = write_shipped()
    low, high = data["band"]
    print(f"Wrote {SHIPPED}: {data['constants']}; {data['runs']} runs, left out in turn {low:+.0%} to {high:+.0%}")
