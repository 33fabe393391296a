"""The remote backend: an OpenAI-compatible completions server proposes, holefill checks.

A team serves one model (vLLM, SGLang, TGI, llama.cpp's server, Ollama) and points editors at
it: ``model = "http://127.0.0.1:8080/v1"`` (``#name`` or ``remote_model`` picks one of several
served models; the API key comes from ``$HOLEFILL_API_KEY``). The constrained loop is the
in-process one (`HoleDecoder`, `Constraint`, the incremental engine): only where candidates come
from changes (`RemoteProposer`).

One HTTP round trip per token would make the network the bottleneck, so the server generates a
*run* of tokens with the top-k log probabilities at every position. The loop checks the run's
tokens one by one (one engine check each) and takes them while the document stays
completable; at the first refused token it tries that position's alternatives from the log
probabilities, best first, and after taking one a new request continues from there (servers
cache the common prompt prefix, so the prompt is not computed again). When the server's model
ended the middle (finish reason "stop") where closing is not allowed, one more request with
the end tokens banned gives the best token that continues instead.

Matching the served tokenizer: the FIM template is detected by asking the server's tokenize
endpoint which FIM tokens are single tokens (or taken from the settings), the prompt's pieces
are tokenized by the server, and token healing backs up the prompt's last token as the server
tokenizes it. Prompts are sent as token ids where the server takes them and answers with ids
(llama.cpp's server, vLLM), so the model continues from exactly the tokens it generated; a
server that takes only text (llama-cpp-python) gets the prompt text plus the accepted text,
which it tokenizes again: where that differs from the tokens it generated, the model
continues from a different tokenization of the same text (see the README).
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from holefill.decode.http import HttpClient, HTTPError, HttpOptions, RemoteError
from holefill.decode.loop import DecodeSettings, Proposal
from holefill.decode.prompt import _cut_prefix, _cut_suffix
from holefill.decode.remote_protocol import (
    Candidate,
    Completion,
    Position,
    ProtocolError,
    context_length,
    model_names,
    parse_completion,
    parse_detokenized,
    parse_tokens,
)
from holefill.decode.templates import FAMILIES, FimTemplate, template_for_vocabulary

log = logging.getLogger(__name__)

API_KEY_ENV = "HOLEFILL_API_KEY"
DEFAULT_CONTEXT = 2048  # when the server does not say (llama-cpp-python's default n_ctx)
# log probabilities closer than this are a tie that the server's and torch's arithmetic may
# break differently (counted in RemoteProposer.inexact)
TIE = 0.01
BAN = -100.0  # the most negative logit bias OpenAI-compatible servers accept
_CHARS_PER_TOKEN_MAX = 12
_WORD_END = re.compile(r"\w$")
_HEALABLE = re.compile(r"[^\S\n]?\w+")

ProgressFn = Callable[[str, float | None], None]


def is_remote(model: str | None) -> bool:
    """A model setting that names a server rather than a folder or a hub id."""
    return model is not None and model.startswith(("http://", "https://"))


def split_model_url(url: str) -> tuple[str, str | None]:
    """``http://host:port/v1#name`` -> (``http://host:port/v1``, ``name``)."""
    base, _, name = url.partition("#")
    return base.rstrip("/"), (name or None)


@dataclass(frozen=True)
class RemoteSpec:
    url: str  # the API's base URL, e.g. http://127.0.0.1:8080/v1 (a #name fragment picks a model)
    model: str | None = None  # the served model's name; None: the fragment, or the only one
    template: FimTemplate | str | None = None  # a family name or a template string
    fim_format: str | None = None  # "psm" / "spm"
    context_length: int | None = None  # None: what the server says, else DEFAULT_CONTEXT
    run_tokens: int = 16  # tokens asked for per request
    max_logprobs: int = 20  # the most top logprobs a server gives (vLLM's default cap)
    http: HttpOptions = field(default_factory=HttpOptions)


@dataclass(frozen=True)
class RemotePrompt:
    ids: list[int] | None  # None: the server has no tokenizer endpoint (text only)
    text: str
    heal: str
    prefix_chars: int
    suffix_chars: int
    truncated: bool


class _ServerVocab:
    """"Is this string one token?" answered by the server's tokenizer (cached)."""

    def __init__(self, backend: RemoteBackend) -> None:
        self.backend = backend
        self.ids: dict[str, int | None] = {}

    def __contains__(self, token: object) -> bool:
        return isinstance(token, str) and self.id_of(token) is not None

    def id_of(self, token: str) -> int | None:
        if token not in self.ids:
            ids = self.backend.tokenize(token)
            self.ids[token] = ids[0] if len(ids) == 1 else None
        return self.ids[token]


class RemoteBackend:
    """An inference server and the facts about its model the loop needs: the FIM template,
    the end and banned token ids, the context length, and its tokenizer endpoints."""

    device = "remote"
    dtype = "server"
    source = "remote"

    def __init__(self, spec: RemoteSpec, progress: ProgressFn | None = None,
                 cancel: Callable[[], bool] | None = None) -> None:
        """``cancel``: the load's own signal; a set-up request waiting on a server that does
        not answer is closed when it fires (not only at the timeout)."""
        report = progress or (lambda stage, frac: None)
        self._load_cancel = cancel
        self.spec = spec
        base, fragment = split_model_url(spec.url)
        key = os.environ.get(API_KEY_ENV) or None
        self.api = HttpClient(base, key, spec.http)
        parts = urlsplit(base)
        root_path = re.sub(r"/v1$", "", parts.path.rstrip("/"))
        self.root = HttpClient(urlunsplit((parts.scheme, parts.netloc, root_path, "", "")),
                               key, spec.http)
        self.base_url = base
        self.requests = 0  # setup and prompt requests (completions are counted per hole)
        t0 = time.perf_counter()
        report("resolve", None)
        models = self._get(self.api, "/models")
        names = model_names(models)
        self.model = spec.model or fragment or (names[0] if len(names) == 1 else None)
        if self.model is None and names:
            self.model = names[0]
            log.info("%s serves %d models; using %s", base, len(names), self.model)
        elif (spec.model or fragment) and names and self.model not in names:
            raise RemoteError(f"the server at {base} does not serve {self.model!r}; it "
                              f"serves {', '.join(names)}")
        self.name = f"{base}#{self.model}" if self.model else base
        report("tokenizer", 0.3)
        props = self._get_optional(self.root, "/props")
        self.context_length = (spec.context_length or context_length(models, props, self.model)
                               or DEFAULT_CONTEXT)
        self._tokenize_path = self._find_tokenizer()
        self._detokenize_path = (self._tokenize_path.replace("tokenize", "detokenize")
                                 if self._tokenize_path else None)
        self.vocab = _ServerVocab(self)
        self.template = self._template()
        self.stop_ids, self.banned_ids = self._special_ids()
        # prompts as token ids until the server shows it takes only text
        self.ids_prompts = self._tokenize_path is not None
        self._ids_confirmed = False
        self.load_s = time.perf_counter() - t0
        self._load_cancel = None  # the load is over: later requests carry their own
        report("ready", 1.0)
        log.info("remote model %s: template %s (%s), context %d, tokenizer %s", self.name,
                 self.template.family, self.template.fim_format, self.context_length,
                 self._tokenize_path or "none")

    # ------------------------------------------------------------------------- set-up

    def _get(self, client: HttpClient, path: str) -> Any:
        self.requests += 1
        return client.get(path, self._load_cancel)

    def _get_optional(self, client: HttpClient, path: str) -> Any:
        try:
            return self._get(client, path)
        except HTTPError:
            return None

    def _find_tokenizer(self) -> str | None:
        """The tokenize endpoint: /tokenize (llama.cpp, vLLM, SGLang) or /extras/tokenize
        (llama-cpp-python), or None."""
        for path in ("/tokenize", "/extras/tokenize"):
            try:
                self.requests += 1
                parse_tokens(self.root.post(path, self._tokenize_body("a"),
                                            self._load_cancel))
                return path
            except (HTTPError, ProtocolError):
                continue
        return None

    def _tokenize_body(self, text: str) -> dict[str, Any]:
        # one body that each server reads its own way (unknown fields are ignored): the text
        # as llama.cpp ("content"), vLLM ("prompt") and llama-cpp-python ("input") name it,
        # no BOS, special tokens parsed (the FIM tokens must become their ids)
        body: dict[str, Any] = {"content": text, "prompt": text, "input": text,
                                "add_special": False, "add_special_tokens": False,
                                "parse_special": True}
        if self.model:
            body["model"] = self.model
        return body

    def _template(self) -> FimTemplate:
        spec = self.spec
        if self._tokenize_path is None:
            if spec.template is None:
                raise RemoteError(f"the server at {self.base_url} has no tokenize endpoint, "
                                  "so its FIM tokens cannot be detected: give the template "
                                  "(a family name such as starcoder, or a string with "
                                  "{prefix} and {suffix})")
            known: set[str] = {t for f in FAMILIES for t in f.tokens + f.stops}
            return template_for_vocabulary(known, name=self.name, fim_format=spec.fim_format,
                                           override=spec.template)
        return template_for_vocabulary(self.vocab, name=self.name, fim_format=spec.fim_format,
                                       override=spec.template)

    def _special_ids(self) -> tuple[frozenset[int], frozenset[int]]:
        """The ids that end the middle (the template's stops) and the ids never to generate
        (the family's other control tokens): the in-process backend's stop and banned sets,
        as far as a server lets them be known."""
        if self._tokenize_path is None:
            return frozenset(), frozenset()
        stops = {self.vocab.id_of(s) for s in self.template.stops}
        specials = {v for k, v in self.template.pieces if k == "special"}
        for family in FAMILIES:
            if family.name == self.template.family:
                specials.update(family.tokens)
                specials.update(t for t in family.stops)
        pad = [t for t in ("<fim_pad>", "<|fim_pad|>", "<fim-pad>") if t in self.vocab]
        specials.update(pad)
        ids = {self.vocab.id_of(s) for s in specials}
        stop_ids = frozenset(i for i in stops if i is not None)
        return stop_ids, frozenset(i for i in ids if i is not None) - stop_ids

    # ------------------------------------------------------------------------- tokenizer

    def tokenize(self, text: str, cancel: Callable[[], bool] | None = None) -> list[int]:
        if self._tokenize_path is None:
            raise RemoteError(f"the server at {self.base_url} has no tokenize endpoint")
        if not text:
            return []
        self.requests += 1
        return parse_tokens(self.root.post(self._tokenize_path, self._tokenize_body(text),
                                           cancel or self._load_cancel))

    def detokenize(self, ids: list[int], cancel: Callable[[], bool] | None = None) -> str:
        if self._detokenize_path is None:
            raise RemoteError(f"the server at {self.base_url} has no detokenize endpoint")
        if not ids:
            return ""
        body: dict[str, Any] = {"tokens": ids}
        if self.model:
            body["model"] = self.model
        self.requests += 1
        return parse_detokenized(self.root.post(self._detokenize_path, body,
                                                cancel or self._load_cancel))

    # ------------------------------------------------------------------------- prompts

    def prompt(self, before: str, suffix: str, *, budget: int, heal: bool,
               cancel: Callable[[], bool] | None = None) -> RemotePrompt:
        """The prompt for a hole between ``before`` and ``suffix``: cut to ``budget`` tokens
        and token-healed the way `holefill.decode.prompt.build_prompt` does in process, with
        the server's tokenizer."""
        if budget < 16:
            raise ValueError(f"the model's context leaves only {budget} tokens for the prompt")
        limit = budget * _CHARS_PER_TOKEN_MAX
        cut = len(before) > limit or len(suffix) > limit
        prefix, suffix = _cut_prefix(before, limit), _cut_suffix(suffix, limit)
        if self._tokenize_path is None:
            text = self.template.render(prefix, suffix)
            return RemotePrompt(None, text, "", len(prefix), len(suffix), cut)
        pre_ids, suf_ids = self.tokenize(prefix, cancel), self.tokenize(suffix, cancel)
        reserve = len(self.template.render("", "")) // 2 + 8
        room = budget - reserve
        if len(pre_ids) + len(suf_ids) > room:
            keep_pre = min(len(pre_ids), max(room - len(suf_ids), room * 3 // 4))
            keep_suf = max(0, min(len(suf_ids), room - keep_pre))
            if keep_pre < len(pre_ids):
                prefix = _cut_prefix(self.detokenize(pre_ids[len(pre_ids) - keep_pre:],
                                                     cancel), None)
                pre_ids = self.tokenize(prefix, cancel)
            if keep_suf < len(suf_ids):
                suffix = (_cut_suffix(self.detokenize(suf_ids[:keep_suf], cancel), None)
                          if keep_suf else "")
                suf_ids = self.tokenize(suffix, cancel)
            cut = True
        healed = ""
        if heal and pre_ids and _WORD_END.search(prefix):
            whole = self.detokenize(pre_ids, cancel)
            rest = self.detokenize(pre_ids[:-1], cancel)
            last = whole[len(rest):] if whole.startswith(rest) else ""
            if last and prefix.endswith(last) and _HEALABLE.fullmatch(last):
                healed = last
                pre_ids = pre_ids[:-1]
        ids: list[int] = []
        for kind, value in self.template.pieces:
            if kind == "special":
                tid = self.vocab.id_of(value)
                if tid is None:
                    raise RemoteError(f"{self.name}: the FIM token {value!r} is not one token")
                ids.append(tid)
            elif kind == "prefix":
                ids += pre_ids
            elif kind == "suffix":
                ids += suf_ids
            else:
                ids += self.tokenize(value, cancel)
        text = self.template.render(prefix[: len(prefix) - len(healed)], suffix)
        return RemotePrompt(ids, text, healed, len(prefix), len(suffix), cut)

    def proposer(self, prompt: RemotePrompt, settings: DecodeSettings,
                 cancel: Callable[[], bool] | None) -> RemoteProposer:
        return RemoteProposer(self, prompt, settings, cancel)

    # ------------------------------------------------------------------------- completions

    def complete(self, body: dict[str, Any], text_body: Callable[[], dict[str, Any]],
                 cancel: Callable[[], bool] | None) -> Completion:
        """One completions request. Until a server has taken a token-id prompt, an error
        answer to one is taken for "text only" (llama-cpp-python answers 500 with a
        validation error), and the text is sent instead, from then on."""
        if self.model:
            body = {**body, "model": self.model}
        try:
            answer = self.api.post("/completions", body, cancel)
        except HTTPError as exc:
            if (self._ids_confirmed or not isinstance(body.get("prompt"), list)
                    or exc.status not in (400, 422, 500)):
                raise
            log.info("%s takes no token-id prompts (%s)? sending text", self.name,
                     exc.detail[:120])
            body = {**text_body(), **({"model": self.model} if self.model else {})}
            # an error to the text too says nothing of ids: a server failing for a while
            # (answering 500 to everything) must not turn token-id prompts off for good
            answer = self.api.post("/completions", body, cancel)
            log.info("%s takes text prompts only; sending text from now on", self.name)
            self.ids_prompts = False
        else:
            self._ids_confirmed = self._ids_confirmed or isinstance(body.get("prompt"), list)
        try:
            completion = parse_completion(answer)
        except ProtocolError as exc:
            raise RemoteError(f"the inference server at {self.api.url('/completions')} "
                              f"answered something that is not a completion: {exc}") from exc
        if self.ids_prompts and completion.positions and not completion.has_ids:
            # it took ids but answers with token strings: continue with text
            log.info("%s answers without token ids; continuing prompts as text", self.name)
            self.ids_prompts = False
        return completion


_STOP = object()


def _ranked_above(pos: Position) -> int:
    """How many of the position's alternatives (``pos.top``, best first) rank above the
    generated token; all of them when it is not listed."""
    for i, cand in enumerate(pos.top):
        if cand.same_token(pos.chosen):
            return i
    return len(pos.top)


class RemoteProposer:
    """Candidates from runs of tokens a server generated (see the module docstring).

    The current run stays valid while the loop takes its tokens in order; taking another
    token, or reaching the run's end, makes the next position ask the server again."""

    def __init__(self, backend: RemoteBackend, prompt: RemotePrompt,
                 settings: DecodeSettings, cancel: Callable[[], bool] | None) -> None:
        self.backend, self.prompt, self.settings, self.cancel = backend, prompt, settings, cancel
        self.model_s = 0.0
        self.requests = 0
        self.taken: list[Candidate] = []
        self.taken_bytes = b""  # the accepted tokens' bytes (text prompts are built from it)
        self._held = 0
        self._held_bytes = b""
        self.run: Completion | None = None
        self.at = 0  # the run's position that is the next position of the filling
        # requests whose prompt was text with accepted tokens in it (the server tokenized
        # them again) and generated tokens taken at a near tie (TIE); and whether the last
        # end offered was read from an empty string
        self.inexact = 0
        self.stop_guessed = False
        self._piece_cache: dict[tuple[int, ...], str] = {}

    @property
    def held(self) -> int:
        return self._held

    # ------------------------------------------------------------------------- the loop's side

    def proposals(self) -> Iterator[Proposal]:
        run = self._current_run()
        if self.at < len(run.positions):
            yield from self._ordered(run.positions[self.at], run, allow_stop=True)
            return
        # the model ended the middle here: that first, then the best tokens that go on
        self.stop_guessed = False
        yield Proposal((_STOP, None, False), stop=True)
        alt = self._fetch(1, ban_stops=True)
        self.run, self.at = alt, 0
        if alt.positions:
            yield from self._ordered(alt.positions[0], alt, allow_stop=False, limit=-1)

    def take(self, proposal: Proposal) -> None:
        key = proposal.key
        assert isinstance(key, tuple) and len(key) == 3
        cand, run, chosen = key
        assert isinstance(cand, Candidate)
        self.taken.append(cand)
        piece = cand.raw if cand.raw is not None else (cand.text or "").encode("utf-8")
        self.taken_bytes += piece
        if proposal.complete:
            self._held, self._held_bytes = 0, b""
        else:
            self._held += 1
            self._held_bytes += piece
        if chosen and isinstance(run, Completion) and run is self.run:
            pos = run.positions[self.at]
            if any(abs(c.logprob - cand.logprob) < TIE and not c.same_token(cand)
                   for c in pos.top):
                self.inexact += 1  # a near tie: float differences may break it either way
            self.at += 1
        else:
            self.run = None

    def stop_probability(self) -> float | None:
        """Known where the server listed an end token among the position's best."""
        run = self._current_run()
        if self.at >= len(run.positions):
            return 1.0 if run.finish != "length" else None
        pos = run.positions[self.at]
        probs = [c.logprob for c in (pos.chosen, *pos.top) if c.id in self.backend.stop_ids]
        if probs:
            import math

            return max(math.exp(p) for p in probs)
        return 0.0 if self.backend.ids_prompts else None

    # ------------------------------------------------------------------------- candidates

    def _ordered(self, pos: Position, run: Completion, *, allow_stop: bool,
                 limit: int = 0) -> Iterator[Proposal]:
        """The position's generated token, then its alternatives best first; at most top_k
        (``limit`` counts candidates already offered at this position). End tokens are
        offered only where the server could have ended (``allow_stop``); banned tokens
        never."""
        k = self.settings.top_k + limit
        seen: list[Candidate] = []
        stop_offered = False
        # Under greedy decoding the server generated its best allowed token, so an id-less
        # empty alternative ranked above it (log probabilities are reported before the
        # logit bias: llama-cpp-python) is a banned control token, never the end.
        above = _ranked_above(pos) if self.settings.temperature == 0 else 0
        for i, cand in enumerate((pos.chosen, *pos.top)):
            if k <= 0:
                return
            if any(cand.same_token(s) for s in seen):
                continue
            seen.append(cand)
            if cand.id is not None and cand.id in self.backend.banned_ids:
                continue
            if cand.id is None and cand.text == "" and 0 < i <= above:
                continue
            if cand.id is not None and cand.id in self.backend.stop_ids:
                if allow_stop and not stop_offered:
                    stop_offered = True
                    k -= 1
                    self.stop_guessed = False
                    yield Proposal((cand, run, i == 0), stop=True)
                continue
            proposal = self._proposal(cand, run, chosen=i == 0)
            if proposal is None:
                # a token whose text the answer does not tell (a text-only server spells end
                # tokens, control tokens and split characters as ""): the first such
                # alternative is taken as the end of the middle, the others skipped
                if allow_stop and not stop_offered and cand.id is None:
                    stop_offered = True
                    k -= 1
                    self.stop_guessed = True
                    yield Proposal((cand, run, False), stop=True)
                continue
            k -= 1
            yield proposal

    def _proposal(self, cand: Candidate, run: Completion, *, chosen: bool) -> Proposal | None:
        key = (cand, run, chosen)
        if cand.raw is not None:
            buf = self._held_bytes + cand.raw
            try:
                return Proposal(key, buf.decode("utf-8"), True)
            except UnicodeDecodeError as exc:
                if exc.end == len(buf) and len(buf) - exc.start < 4:
                    return Proposal(key, "", False)  # a character still to be completed
                return Proposal(key, "\ufffd", True)
        text = cand.text
        if text is None and cand.id is not None:
            text = self._piece(cand.id)
        if text is None:
            return None
        if text == "":
            # the generated token adds no text yet (a split character): held; an
            # alternative that adds nothing is no candidate
            return Proposal(key, "", False) if chosen else None
        return Proposal(key, text, True)

    def _piece(self, token: int) -> str:
        """The text ``token`` adds after the tokens taken so far (the server's detokenizer,
        with a few tokens of context as `Detokenizer` does in process)."""
        context = [c.id for c in self.taken[-4:] if c.id is not None]
        key = (*context, token)
        if key not in self._piece_cache:
            t0 = time.perf_counter()
            whole = self.backend.detokenize([*context, token], self.cancel)
            rest = self.backend.detokenize(context, self.cancel)
            self.model_s += time.perf_counter() - t0
            self.requests += 2 if context else 1
            self._piece_cache[key] = whole[len(rest):] if whole.startswith(rest) else whole
        return self._piece_cache[key]

    # ------------------------------------------------------------------------- requests

    def _current_run(self) -> Completion:
        run = self.run
        if run is None or (self.at >= len(run.positions) and run.finish == "length"):
            left = self.settings.max_new_tokens - len(self.taken)
            run = self.run = self._fetch(max(1, min(self.backend.spec.run_tokens, left)))
            self.at = 0
        return run

    def _fetch(self, max_tokens: int, *, ban_stops: bool = False) -> Completion:
        backend, settings = self.backend, self.settings
        banned = set(backend.banned_ids) | (set(backend.stop_ids) if ban_stops else set())
        k = min(backend.spec.max_logprobs, settings.top_k + len(backend.banned_ids) + 1)
        common: dict[str, Any] = {
            "max_tokens": max_tokens, "logprobs": k, "temperature": settings.temperature,
            "top_p": settings.top_p, "echo": False, "stream": False,
            # llama.cpp and vLLM sampling fields, so the server samples as holefill would:
            # no repetition penalty (llama-cpp-python's default is 1.1), no min-p cut
            "repeat_penalty": 1.0, "min_p": 0.0,
            "return_tokens_as_token_ids": True,
        }
        if settings.temperature > 0:
            common["top_k"] = settings.top_k
        if settings.seed is not None:
            common["seed"] = settings.seed + self.requests
        if banned:
            common["logit_bias"] = {str(i): BAN for i in sorted(banned)}
        if ban_stops and not backend.stop_ids:
            log.info("%s: no end token ids known; the end cannot be refused", backend.name)

        def text_body() -> dict[str, Any]:
            if self.taken:
                self.inexact += 1
            prompt = self.prompt.text + self.taken_bytes.decode("utf-8", "replace")
            return {**common, "prompt": prompt}

        if backend.ids_prompts and self.prompt.ids is not None and all(
                c.id is not None for c in self.taken):
            body = {**common, "prompt": self.prompt.ids + [int(c.id) for c in self.taken
                                                            if c.id is not None]}
        else:
            body = text_body()
        t0 = time.perf_counter()
        try:
            return backend.complete(body, text_body, self.cancel)
        finally:
            self.model_s += time.perf_counter() - t0
            self.requests += 1
