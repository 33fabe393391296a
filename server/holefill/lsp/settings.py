"""The server's settings: from `initializationOptions` and `workspace/didChangeConfiguration`.

Clients send camelCase keys, either flat or under a "holefill" section (VS Code sends the
section). A bad value is reported by name and the previous value is kept, so a typo in a
settings file never takes the server down.

Trust: loading a model with `trustRemoteCode` runs Python code from the model's folder. The
settings that decide which code that is (`trustRemoteCode` and `model`) are taken as they come
only from the initialization options, which come from the client that started the server
(stdio) or presented its token (TCP). A later `workspace/didChangeConfiguration` may turn
`trustRemoteCode` off but never on, and may change `model` only while `trustRemoteCode` is
off (a model loaded without remote code runs none of its folder's code); otherwise the change
is refused with a message and the old value kept: restart the server to trust other code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from holefill.languages import DEFAULT_HOLE_MARKER, LANGUAGES


@dataclass(frozen=True)
class Settings:
    model: str | None = None  # None: the bundled default model; http(s)://...: a server
    device: str = "auto"
    dtype: str = "auto"
    max_new_tokens: int = 64
    top_k: int = 8
    temperature: float = 0.0
    languages: tuple[str, ...] = tuple(sorted(LANGUAGES))
    multiline: str = "auto"  # "auto" (single line mid-line), "always", "never"
    stay_in_block: bool = True
    debounce_ms: int = 150
    hole_marker: str = DEFAULT_HOLE_MARKER
    constrained: bool = True
    trust_remote_code: bool = False
    max_check_steps: int = 20_000_000
    # "auto" (from the model), "autoregressive", "diffusion" (the bundled diffusion model
    # unless `model` names one; inline completion and Fill holes both use it)
    decoder: str = "auto"
    template: str | None = None  # FIM template: family name or "{prefix}...{suffix}" string
    fim_format: str | None = None  # "psm" / "spm"; None: what the model says
    # may an inline suggestion the model did not finish be shown with its end completed by
    # the grammar's witness? (the log says so each time); Fill holes always may
    inline_witness: bool = True
    # a remote model (``model`` is a server URL): the longest wait, in seconds, for one answer
    # of the inference server; below the inline deadline (30 s), so a server that hangs is
    # named in a message rather than the suggestion silently running out of time
    remote_timeout: float = 20.0
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def model_key(self) -> tuple:
        """What a loaded model depends on: a change reloads it."""
        # the timeout is a setting of the remote backend's HTTP client: a change does not
        # reload a local model
        remote = self.model is not None and self.model.startswith(("http://", "https://"))
        timeout = self.remote_timeout if remote else None
        return (self.model, self.device, self.dtype, self.trust_remote_code, self.template,
                self.fim_format, self.decoder, timeout)


# client key -> (field, converter)
def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    raise ValueError("expected true or false")


def _int(lo: int, hi: int):
    def conv(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int | float) or int(v) != v:
            raise ValueError("expected an integer")
        if not lo <= v <= hi:
            raise ValueError(f"expected {lo}..{hi}")
        return int(v)

    return conv


def _float(lo: float, hi: float):
    def conv(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) or not lo <= v <= hi:
            raise ValueError(f"expected a number in {lo}..{hi}")
        return float(v)

    return conv


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError("expected a string")
    return v


def _model(v: Any) -> str | None:
    if v is None or v == "":
        return None
    return _str(v)


def _fim_format(v: Any) -> str | None:
    if v is None or v in ("psm", "spm"):
        return v
    raise ValueError('expected "psm" or "spm"')


def _multiline(v: Any) -> str:
    if v is True:
        return "always"
    if v is False:
        return "never"
    if v in ("auto", "always", "never"):
        return str(v)
    raise ValueError('expected "auto", "always", "never" (or true/false)')


def _decoder(v: Any) -> str:
    if v in ("auto", "autoregressive", "diffusion"):
        return str(v)
    raise ValueError('expected "auto", "autoregressive" or "diffusion"')


def _languages(v: Any) -> tuple[str, ...]:
    from holefill.languages import get_language

    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValueError("expected a list of language names")
    return tuple(get_language(x).name for x in v)


def _marker(v: Any) -> str:
    s = _str(v)
    if not s:
        raise ValueError("the hole marker must not be empty")
    return s


FIELDS: dict[str, tuple[str, Any]] = {
    "model": ("model", _model),
    "device": ("device", _str),
    "dtype": ("dtype", _str),
    "maxNewTokens": ("max_new_tokens", _int(1, 4096)),
    "topK": ("top_k", _int(1, 1000)),
    "temperature": ("temperature", _float(0.0, 5.0)),
    "languages": ("languages", _languages),
    "multiline": ("multiline", _multiline),
    "stayInBlock": ("stay_in_block", _bool),
    "debounceMs": ("debounce_ms", _int(0, 10_000)),
    "holeMarker": ("hole_marker", _marker),
    "constrained": ("constrained", _bool),
    "trustRemoteCode": ("trust_remote_code", _bool),
    "maxCheckSteps": ("max_check_steps", _int(1000, 10**10)),
    "decoder": ("decoder", _decoder),
    "template": ("template", _model),
    "fimFormat": ("fim_format", _fim_format),
    "inlineWitness": ("inline_witness", _bool),
    "remoteTimeout": ("remote_timeout", _float(0.1, 3600.0)),
}


def _refuse_untrusted(current: Settings, changes: dict[str, Any]) -> list[str]:
    """Take out of ``changes`` (from a configuration change) what would run code the
    initialization did not trust; the reasons, one line each."""
    problems = []
    if changes.get("trust_remote_code") and not current.trust_remote_code:
        del changes["trust_remote_code"]
        problems.append("holefill.trustRemoteCode can be turned on only in the initialization "
                        "options (restart the server with it)")
    trusted_after = changes.get("trust_remote_code", current.trust_remote_code)
    if "model" in changes and changes["model"] != current.model and trusted_after:
        del changes["model"]
        problems.append("holefill.model cannot change while trustRemoteCode is on: the new "
                        "model's code would run (restart the server with the new model)")
    return problems


def updated(current: Settings, options: Any, *,
            initial: bool) -> tuple[Settings, list[str]]:
    """``current`` with the values in ``options``; the problems found, one line each.
    ``initial``: the options are the initialization options (see the module docstring)."""
    if options is None:
        return current, []
    if not isinstance(options, Mapping):
        return current, [f"settings must be an object, got {type(options).__name__}"]
    if isinstance(options.get("holefill"), Mapping):
        options = options["holefill"]
    changes: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in options.items():
        spec = FIELDS.get(key)
        if spec is None:
            problems.append(f"unknown setting holefill.{key} (ignored)")
            continue
        name, conv = spec
        try:
            changes[name] = conv(value)
        except Exception as exc:  # a converter's ValueError, or LanguageError
            problems.append(f"holefill.{key}: {exc} (kept {getattr(current, name)!r})")
    if not initial:
        problems += _refuse_untrusted(current, changes)
    return dataclasses.replace(current, **changes), problems
