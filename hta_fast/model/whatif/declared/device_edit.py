"""The what-if "this step on another GPU", as declared (hta_fast.model.whatif.declared.registry):
its options and keywords. What it changes is hta_fast.model.whatif.device_changes, which
runs the kernel models; this module imports none of them, so that everything that reads
the registry (the doctor's replay among them) does not either."""

from __future__ import annotations

from .declaration import EditDeclaration, Option

EDIT = EditDeclaration(
    key="device",
    options=(
        Option(
            "--device",
            "device",
            "This step on another GPU (device table key or name): kernels take the "
            "times `hta-fast predict` gives there.",
        ),
        Option(
            "--source-device",
            "source_device",
            "With --device: the trace's own GPU, when its header does not name it.",
        ),
        Option(
            "--devices-file",
            "devices_file",
            "With --device: a JSON device table tried before the built-in one.",
            type="file",
        ),
    ),
    keywords=("device", "source_device", "devices_file", "allow_tf32"),
    build=lambda v: {k: v[k] for k in ("device", "source_device", "devices_file")},
    doc="This step on another GPU: each launched GPU event takes the duration "
    "`hta_fast.model.predict` gives on that device, with its band; the host, the waits "
    "and the launch order stay as recorded.",
)
