"""What the entry points share (`c4core.entry`): here, reading the host's CPU flags.

The registry lines are tested beside the registry (`tests/test_registry.py`), the rest through
the entry points that use them (`tests/test_cli.py`, `tests/test_dag.py`)."""

from __future__ import annotations

from pathlib import Path


def test_native_bfloat16_reads_the_cpu_flags(tmp_path: Path) -> None:
    from c4core.entry import native_bfloat16

    flags = "processor\t: {n}\nflags\t\t: fpu sse2 avx2 {extra}\nbogomips\t: 4491\n\n"
    for extra, native in (
        ("", False),
        ("avx512f avx512_bf16", True),
        ("amx_tile amx_bf16", True),
        ("avx512f", False),
    ):
        cpuinfo = tmp_path / f"cpuinfo-{native}-{len(extra)}"
        cpuinfo.write_text(flags.format(n=0, extra=extra) + flags.format(n=1, extra=extra))
        assert native_bfloat16(str(cpuinfo)) is native, extra
    assert native_bfloat16(str(tmp_path / "absent")) is False
