"""Settings (holefill.lsp.settings): values, problems, and the trust rule for the settings
that can run code (`trustRemoteCode`, `model`): as they come only from the initialization."""

from __future__ import annotations

from holefill.lsp.settings import Settings, updated


def test_initialization_options_may_set_everything():
    s, problems = updated(Settings(), {"model": "/m", "trustRemoteCode": True, "topK": 3},
                          initial=True)
    assert (s.model, s.trust_remote_code, s.top_k, problems) == ("/m", True, 3, [])


def test_a_configuration_change_cannot_turn_on_remote_code():
    s, problems = updated(Settings(), {"holefill": {"model": "/evil",
                                                    "trustRemoteCode": True}}, initial=False)
    assert s.trust_remote_code is False
    assert s.model == "/evil"  # loaded without remote code: its folder's code does not run
    assert any("trustRemoteCode can be turned on only" in p for p in problems)


def test_while_remote_code_is_trusted_the_model_cannot_change():
    trusted, _ = updated(Settings(), {"model": "/mine", "trustRemoteCode": True}, initial=True)
    s, problems = updated(trusted, {"model": "/evil"}, initial=False)
    assert s.model == "/mine" and any("cannot change" in p for p in problems)
    # the same values again (VS Code sends the whole section on every change) are no change
    s, problems = updated(trusted, {"model": "/mine", "trustRemoteCode": True, "topK": 2},
                          initial=False)
    assert (s.model, s.trust_remote_code, s.top_k, problems) == ("/mine", True, 2, [])


def test_turning_trust_off_is_allowed_and_then_the_model_may_change():
    trusted, _ = updated(Settings(), {"model": "/mine", "trustRemoteCode": True}, initial=True)
    s, problems = updated(trusted, {"trustRemoteCode": False, "model": "/other"},
                          initial=False)
    assert (s.trust_remote_code, s.model, problems) == (False, "/other", [])


def test_bad_values_are_named_and_the_old_ones_kept():
    s, problems = updated(Settings(), {"topK": -1, "nope": 1}, initial=False)
    assert s.top_k == Settings().top_k
    assert len(problems) == 2 and "holefill.topK" in problems[0]


def test_the_vscode_extension_keeps_trust_a_machine_setting_and_untrusted_workspaces_out():
    """The editor side of the rule, read from the extension's manifest (no node needed):
    a workspace can neither set trustRemoteCode nor run the extension at all while the user
    has not trusted it; turning trust on restarts the server (it is read at initialization)."""
    import json
    import re
    from pathlib import Path

    client = Path(__file__).resolve().parents[2] / "vscode-client"
    manifest = json.loads((client / "package.json").read_text(encoding="utf-8"))
    spec = manifest["contributes"]["configuration"]["properties"]["holefill.trustRemoteCode"]
    assert spec["scope"] == "machine" and spec["default"] is False
    assert manifest["capabilities"]["untrustedWorkspaces"]["supported"] is False
    settings_ts = (client / "src" / "settings.ts").read_text(encoding="utf-8")
    restart = re.search(r"RESTART_KEYS = \[([^\]]*)\]", settings_ts)
    assert restart is not None and "'trustRemoteCode'" in restart.group(1)


def test_the_remote_timeout_reloads_a_remote_model_only():
    url, _ = updated(Settings(), {"model": "http://127.0.0.1:8080/v1"}, initial=True)
    faster, problems = updated(url, {"remoteTimeout": 2.5}, initial=False)
    assert (faster.remote_timeout, problems) == (2.5, [])
    assert faster.model_key() != url.model_key()  # a new HTTP client, with the new timeout
    local, _ = updated(Settings(), {"model": "/m"}, initial=True)
    assert updated(local, {"remoteTimeout": 2.5}, initial=False)[0].model_key() == \
        local.model_key()
    s, problems = updated(url, {"remoteTimeout": 0}, initial=False)
    assert s.remote_timeout == 20.0 and "holefill.remoteTimeout" in problems[0]
