"""The device table: B300, provenance of figures not printed in a datasheet, and coverage of
every GPU named in the shared traces' deviceProperties."""

from __future__ import annotations

import json

import pytest

import hta_fast
from hta_fast.costs.devices import DeviceTable, trace_device

# deviceProperties names that are not GPUs with published peaks: Meta's MTIA accelerator
NOT_IN_TABLE = {"ARTEMIS"}


def test_b300_figures_and_their_provenance():
    t = DeviceTable.load()
    b300 = t.match({"name": "NVIDIA B300 SXM6 AC"})
    assert b300 is not None and b300.key == "B300"
    # HGX B300 table / 8 GPUs, sparsity halved
    assert b300.peak_flops("bf16", matrix=True) == 2250e12
    assert b300.peak_flops("fp8", matrix=True) == 4500e12
    assert b300.peak_flops("fp32", matrix=True, allow_tf32=True) == 1125e12
    assert b300.peak_flops("fp64", matrix=True) == 1.25e12
    assert "int8" not in b300.tflops
    # the bandwidth is not in that table: marked as derived; the rest is the datasheet's
    assert b300.figure_source("memory_gbps").startswith("derived")
    assert b300.figure_source("bf16").startswith("datasheet: NVIDIA HGX")
    # a Grace Blackwell Ultra superchip is another product: not matched by B300
    assert t.match({"name": "NVIDIA GB300"}) is None


def test_provenance_names_known_figures(tmp_path):
    f = tmp_path / "d.json"
    f.write_text(
        json.dumps(
            {
                "devices": [
                    {
                        "key": "X",
                        "match": "x",
                        "memory_gbps": 1,
                        "tflops": {"fp32": 1},
                        "provenance": {"fp99": "?"},
                    }
                ]
            }
        )
    )
    with pytest.raises(ValueError, match="provenance of unknown figure"):
        DeviceTable.load(f)
    f.write_text(
        json.dumps(
            {
                "devices": [
                    {
                        "key": "X",
                        "match": "x",
                        "memory_gbps": 1,
                        "tflops": {"fp32": 1},
                        "provenance": {"fp32": "measured"},
                    }
                ]
            }
        )
    )
    assert DeviceTable.load(f).get("X").figure_source("fp32") == "measured"


def test_every_gpu_in_the_shared_traces_is_in_the_table(traces_dir):
    names = {}
    for path in sorted(traces_dir.rglob("*.json*")):
        if "memory_timeline" in path.name or path.name.endswith("_et.json.gz"):
            continue
        trace = hta_fast.load(str(path))
        for props in trace.meta.devices:
            if isinstance(props, dict) and props.get("name") not in NOT_IN_TABLE:
                dev = trace_device(trace, device_id=props.get("id", 0))
                names[props.get("name")] = dev.key if dev else None
    assert names.get("Quadro GP100") == "Quadro-GP100"
    assert names.get("Tesla V100-SXM2-16GB") == "V100-SXM2"
    # modern/vllm_decode_full names its devices "": compute 9.4, 304 CUs, 192 GiB
    assert names.get("") == "MI300X"
    assert len(names) >= 6 and all(names.values()), names


def test_unnamed_devices_identified_by_their_properties():
    """A deviceProperties entry with an empty name is identified by its other fields, and
    only where every identifying field agrees."""
    t = DeviceTable.load()
    mi300x = {"name": "", "computeMajor": 9, "computeMinor": 4, "numSms": 304}
    assert t.match({**mi300x, "totalGlobalMem": 206141652992}).key == "MI300X"
    assert t.match({**mi300x, "totalGlobalMem": 274877906944}).key == "MI325X"
    assert t.match({**mi300x, "numSms": 228, "totalGlobalMem": 206141652992}) is None
    assert t.match({**mi300x}) is None  # no memory: not enough to tell
    assert t.match({"name": "", "computeMajor": 8, "computeMinor": 0}) is None


def test_a_name_in_no_entry_is_identified_by_its_fields_and_the_outputs_say_how():
    t = DeviceTable.load()
    props = {"name": "gfx942", "computeMajor": 9, "computeMinor": 4, "numSms": 304}
    props["totalGlobalMem"] = 206141652992
    assert t.match(props).key == "MI300X"
    how = t.how_matched(props)
    assert "name 'gfx942' in no entry" in how and "numSms 304" in how and "206 GB" in how
    # matched plainly by its name: nothing to say
    assert t.how_matched({"name": "AMD Instinct MI300X"}) is None
    assert t.how_matched({"name": "no such gpu"}) is None


@pytest.mark.parametrize(
    "name, key, priced_as",
    [
        ("Tesla V100-DGXS-32GB", "V100-DGXS", "V100-SXM2"),
        ("Tesla V100-SXM3-32GB", "V100-SXM3", "V100-SXM2"),
        ("Tesla V100-FHHL-16GB", "V100-FHHL", "V100-PCIe"),
        ("Tesla V100", "V100", "V100-PCIe"),
    ],
)
def test_v100_variants_without_figures_of_their_own_say_which_stand_in(name, key, priced_as):
    t = DeviceTable.load()
    dev, other = t.match({"name": name}), t.get(priced_as)
    assert dev.key == key and dev.tflops == other.tflops
    assert dev.memory_gbps == other.memory_gbps and other.stands_in is None
    assert t.how_matched({"name": name}).startswith(f"{key} is priced with {priced_as}'s figures:")
    # the variants with datasheet figures of their own keep them, unannotated
    for own in ("Tesla V100-SXM2-16GB", "Tesla V100-PCIE-16GB", "Tesla V100S-PCIE-32GB"):
        assert t.match({"name": own}).stands_in is None


def test_a_user_entry_may_stand_in_with_a_builtin_one(tmp_path):
    f = tmp_path / "d.json"
    row = {"key": "MyV100", "match": "myv100", "stands_in": "V100-SXM2", "why": "same board"}
    f.write_text(json.dumps({"devices": [row]}))
    dev = DeviceTable.load(f).match({"name": "MyV100 card"})
    assert dev.key == "MyV100" and dev.tflops["fp16"] == 125
    assert dev.stands_in == "is priced with V100-SXM2's figures: same board"
    f.write_text(json.dumps({"devices": [{**row, "stands_in": "V999"}]}))
    with pytest.raises(ValueError, match="stands_in 'V999' is no entry"):
        DeviceTable.load(f)


def test_roofline_notes_how_the_device_was_chosen():
    from hta_fast.analysis.ops.roofline import roofline
    from tests.support.kineto_builder import KinetoBuilder

    b = KinetoBuilder()
    b.devices[0]["name"] = "Tesla V100-DGXS-32GB"
    b.cpu_op("aten::mm", 0, 50)
    b.kernel("gemm", 10, 5, 20)
    notes = roofline(b.load()).notes
    assert any("device V100-DGXS is priced with V100-SXM2's figures" in n for n in notes), notes
    b.devices[0]["name"] = "Tesla V100-SXM2-16GB"
    assert not any("priced with" in n for n in roofline(b.load()).notes)
