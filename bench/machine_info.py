"""The machine a benchmark ran on, recorded in every bench/results JSON (issue 16).

    from machine_info import machine   # bench scripts run as `python bench/<script>.py`

``machine()`` -> {"cpus", "load_average_at_start", "model_name" (lscpu), "simd" (lscpu's
avx* / amx* / fma flags)}; lscpu missing: only the first two.
"""

import os
import subprocess


def machine() -> dict:
    """lscpu model name and SIMD flags, core count, 1-minute load average."""
    info = {"cpus": os.cpu_count(), "load_average_at_start": os.getloadavg()[0]}
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return info
    flags = []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Model name":
            info["model_name"] = value.strip()
        elif key.strip() == "Flags":
            flags = value.split()
    info["simd"] = sorted(f for f in flags if f.startswith(("avx", "amx", "fma")))
    return info
