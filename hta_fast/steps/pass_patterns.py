"""The one table of the names that mark an inference pass, per phase: what serving stacks
and pipelines record around a prefill, a decode step, a denoising step or a model's
forward, as annotations (torch.profiler.record_function: user_annotation events) or as the
Python frames that the profiler's with_stack records (python_function events).

A pattern is searched in the event's name (RE2 syntax, as pyarrow.compute matches it: no
look-around); `exclude` drops names that match but are no pass. `verified` names the real
trace a pattern was checked on; an empty one was written from the stack's source code and
is tested only on synthetic traces (docs/inference.md lists both). To teach the package a
new stack, add a row here: hta_fast.steps.passes reads nothing else.

GPU-side copies of annotations (gpu_user_annotation) mark no pass: each mirrors a CPU
annotation of the same name, and a step is a host window whose GPU work follows its
launches, as for ProfilerStep#N.
"""

from __future__ import annotations

import dataclasses

from ..schema import EventKind

__all__ = ["PHASES", "SOURCES", "PassPattern", "PATTERNS", "patterns_of"]

PHASES = ("prefill", "decode", "mixed", "denoise", "forward")
# Where a rank's steps can come from (steps.steps_from): the profiler's ProfilerStep#N, the
# host's one span, repeated launch sequences, or the passes of one phase. Here, beside the
# phases, so that a command line can offer them without importing what finds them.
SOURCES = ("profiler", "host", "iterations", *PHASES)

_ANNOTATION = (EventKind.user_annotation,)
_FRAME = (EventKind.python_function,)


@dataclasses.dataclass(frozen=True)
class PassPattern:
    """phase     one of PHASES
    kinds        the event kinds the name is looked for in
    match        regular expression searched in the name
    emitter      who records such events
    verified     the real trace it was checked on ("" when none was at hand)
    exclude      names that match `match` but mark no pass ("" for none)"""

    phase: str
    kinds: tuple[EventKind, ...]
    match: str
    emitter: str
    verified: str = ""
    exclude: str = ""


# torch.nn layers that a model calls outside its own top-level module now and then (an
# lm_head Linear, a final norm): a module call of theirs is no model forward.
_LAYERS = (
    r"^nn\.Module: (Linear|Dropout|LayerNorm|GroupNorm|RMSNorm|Embedding|Conv[123]d|"
    r"SiLU|GELU|ReLU|Identity|Sequential|ModuleList|ModuleDict)_[0-9]+$"
)

# Annotations around a graph capture, which record launches but run nothing.
_CAPTURE = r"(?i)(^|[^a-z])(capture|capturing)([^a-z]|$)"

PATTERNS: tuple[PassPattern, ...] = (
    # vLLM V1's worker names each scheduled step by its requests: context (prefill) ones
    # with their tokens, generation (decode) ones with theirs. A step with both (chunked
    # prefill batches them together) is mixed.
    PassPattern(
        "prefill",
        _ANNOTATION,
        r"^execute_context_[1-9][0-9]*\([0-9]+\)_generation_0\([0-9]+\)$",
        "vLLM V1 (gpu worker, one annotation per scheduled step)",
    ),
    PassPattern(
        "mixed",
        _ANNOTATION,
        r"^execute_context_[1-9][0-9]*\([0-9]+\)_generation_[1-9][0-9]*\([0-9]+\)$",
        "vLLM V1 (gpu worker, one annotation per scheduled step)",
    ),
    PassPattern(
        "decode",
        _ANNOTATION,
        r"^execute_context_0\([0-9]+\)_generation_[1-9][0-9]*\([0-9]+\)$",
        "vLLM V1 (gpu worker, one annotation per scheduled step)",
    ),
    # Current vLLM V1 (and SGLang under the same tooling) also counts the step's requests
    # and writes each part's token layout: execute_N_context_M(...)_generation_K(...).
    PassPattern(
        "prefill",
        _ANNOTATION,
        r"^execute_[0-9]+_context_[1-9][0-9]*\([a-z0-9]*\)_generation_0\([a-z0-9]*\)$",
        "vLLM V1, SGLang (one annotation per scheduled step, with its request count)",
    ),
    PassPattern(
        "mixed",
        _ANNOTATION,
        r"^execute_[0-9]+_context_[1-9][0-9]*\([a-z0-9]*\)_generation_[1-9][0-9]*"
        r"\([a-z0-9]*\)$",
        "vLLM V1, SGLang (one annotation per scheduled step, with its request count)",
    ),
    PassPattern(
        "decode",
        _ANNOTATION,
        r"^execute_[0-9]+_context_0\([a-z0-9]*\)_generation_[1-9][0-9]*\([a-z0-9]*\)$",
        "vLLM V1, SGLang (one annotation per scheduled step, with its request count)",
        verified="modern/vllm_decode_full, modern/sglang_decode",
    ),
    # SGLang's scheduler annotates each batch it runs with its forward mode and size:
    # step[DECODE bs=32], step[EXTEND bs=4] (prefill), step[MIXED bs=8].
    PassPattern(
        "prefill",
        _ANNOTATION,
        r"^step\[(EXTEND|PREFILL|SPLIT_PREFILL)[ \]]",
        "SGLang scheduler (one annotation per batch: forward mode, batch size)",
    ),
    PassPattern(
        "decode",
        _ANNOTATION,
        r"^step\[DECODE[ \]]",
        "SGLang scheduler (one annotation per batch: forward mode, batch size)",
        verified="modern/sglang_decode (inside its vLLM-style step annotation)",
    ),
    PassPattern(
        "mixed",
        _ANNOTATION,
        r"^step\[MIXED[ \]]",
        "SGLang scheduler (one annotation per batch: forward mode, batch size)",
    ),
    PassPattern(
        "forward",
        _ANNOTATION,
        r"^gpu_model_runner: forward$",
        "vLLM V1 (GPUModelRunner.execute_model's model call)",
    ),
    # SGLang's ModelRunner runs an extend (prefill) batch and a decode batch through two
    # methods; with_stack records their frames as "<file>(<line>): <function>".
    PassPattern(
        "prefill", _FRAME, r"model_runner\.py\([0-9]+\): forward_extend$", "SGLang ModelRunner"
    ),
    PassPattern(
        "decode", _FRAME, r"model_runner\.py\([0-9]+\): forward_decode$", "SGLang ModelRunner"
    ),
    # Diffusion pipelines (diffusers, and xDiT's wrappers of them) call their denoiser, a
    # 2D/3D transformer or a conditional UNet, once per denoising step.
    PassPattern(
        "denoise",
        _FRAME,
        r"^nn\.Module: [A-Za-z0-9_]*(Transformer[23]D|UNet[23]DCondition|UNetSpatioTemporal)",
        "diffusers and xDiT pipelines (the denoiser's module call)",
        verified="pairs/attention_backend/flux_aiter.json.gz: 4 passes",
    ),
    # A record_function named for its phase, as people and smaller stacks write them
    # ("prefill", "decode_step 3", "## denoising ##"): the word on its own, so that
    # "decoder" and "prefilled" are not phases.
    # A graph capture named for its phase (SGLang's capture_32_DECODE) is no pass.
    PassPattern(
        "prefill",
        _ANNOTATION,
        r"(?i)(^|[^a-z])prefill([^a-z]|$)",
        "record_function by name",
        exclude=_CAPTURE,
    ),
    PassPattern(
        "decode",
        _ANNOTATION,
        r"(?i)(^|[^a-z])decode([^a-z]|$)",
        "record_function by name",
        exclude=_CAPTURE,
    ),
    PassPattern(
        "denoise",
        _ANNOTATION,
        r"(?i)(^|[^a-z])denois(e|ing)([^a-z]|$)",
        "record_function by name",
        exclude=_CAPTURE,
    ),
    # A module call that no other module call holds is a model's forward (with_stack or
    # with_modules records "nn.Module: <class>_<n>" frames).
    PassPattern(
        "forward",
        _FRAME,
        r"^nn\.Module: ",
        "PyTorch module calls (the outermost one)",
        verified="pairs/gpu_swap/*.json.gz: 1 model forward each",
        exclude=_LAYERS,
    ),
)


def patterns_of(phase: str) -> tuple[PassPattern, ...]:
    """The patterns of one phase (a ValueError for a name not in PHASES)."""
    if phase not in PHASES:
        raise ValueError(f"no phase {phase!r}; phases are {', '.join(PHASES)}")
    return tuple(p for p in PATTERNS if p.phase == phase)
