"""``python -m rumus``: the environment report to paste into a bug report (as
``python -m torch.utils.collect_env``): versions, platform, the CPU features the
kernels can use, the thread count, and the GPU adapter with its key limits."""

import platform
import sys

import rumus
from rumus import _rumus


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpu_lines():
    """The adapter's facts, or "none" with the reason when no GPU can be used."""
    try:
        info = rumus.gpu.adapter_info()
    except Exception as e:  # no adapter, or a driver that fails to create a device
        return [("GPU", f"none ({e})")]
    driver = " ".join(s for s in (info["driver"], info["driver_info"]) if s) or "unknown"
    limits = ", ".join(
        f"{k}={info[k]}"
        for k in (
            "max_buffer_size",
            "max_storage_buffer_binding_size",
            "max_compute_workgroups_per_dimension",
            "max_compute_invocations_per_workgroup",
            "max_compute_workgroup_storage_size",
        )
    )
    return [
        ("GPU", f"{info['name']} ({info['device_type']})"),
        ("GPU backend", info["backend"]),
        ("GPU driver", driver),
        ("GPU shader-f16", "yes" if info["shader_f16"] else "no"),
        ("GPU limits", limits),
    ]


def collect_env():
    """The report's (name, value) lines."""
    import numpy

    detected = [name for name, on in _rumus._cpu_features() if on]
    bits = 64 if sys.maxsize > 2**32 else 32
    return [
        ("rumus version", rumus.__version__),
        ("Python version", f"{platform.python_version()} ({bits}-bit runtime)"),
        ("Python platform", platform.platform()),
        ("NumPy version", numpy.__version__),
        ("CPU", _cpu_model()),
        ("CPU features", " ".join(detected) or "none detected"),
        ("CPU kernels", _rumus._cpu_kernel_isa()),
        ("Threads", str(rumus.get_num_threads())),
        *_gpu_lines(),
    ]


def main():
    for name, value in collect_env():
        print(f"{name}: {value}")


if __name__ == "__main__":
    main()
