"""What model a command talks to, in words (host §7 "Model setup"): chat's one-line banner
(``model: deepseek-chat at https://api.deepseek.com · key from DEEPSEEK_API_KEY``), the warning
about a missing key before the first prompt, the hint after a failed turn that names the variable
to fix, and the rows of ``turnlog models``. Pure over ``host.models.ProviderConfig``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from host.models import ProviderConfig

MODELS_HINT = "turnlog models shows every setting and where it comes from"


def is_local(base_url: str) -> bool:
    """Whether ``base_url`` is on this machine or a private network, where servers (llama.cpp,
    Ollama, vLLM) usually need no key."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host in ("localhost", "") or host.endswith((".local", ".localhost", ".lan", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local or address.is_unspecified


def _either(names: tuple[str, ...]) -> str:
    return " (or ".join(names[:2]) + ")" if len(names) > 1 else "".join(names)


@dataclass(frozen=True, slots=True)
class ModelSetup:
    """A route as people need to know it: the provider, its model, and where its endpoint and key
    come from. ``config_file`` is the configuration file consulted, for the advice."""

    endpoint: ProviderConfig
    model: str | None
    config_file: Path | None = None

    @property
    def provider(self) -> str:
        return self.endpoint.provider

    def banner(self) -> str:
        """``model: <m> at <base> · key from <where>``; ``model: scripted (offline)``."""
        if self.endpoint.adapter == "scripted":
            return f"model: {self.model or 'scripted'} (offline)"
        where = self.endpoint.base_url or "?"
        if self.endpoint.base_url_source not in (None, "default"):
            where += f" (from {self.endpoint.base_url_source})"
        key = (
            f"key from {self.endpoint.api_key_source}" if self.endpoint.api_key is not None else "no API key"
        )
        return f"model: {self.model} at {where} · {key}"

    def _set_key(self) -> str:
        advice = f"set {_either(self.endpoint.key_vars)}"
        if self.config_file is not None:
            advice += f", or api_key_file in {self.config_file}"
        return advice

    def key_warning(self) -> str | None:
        """The warning before the first prompt when a remote endpoint has no key, naming the
        variable to set; ``None`` when a key is set or the endpoint is local or offline."""
        base = self.endpoint.base_url
        if self.endpoint.adapter == "scripted" or self.endpoint.api_key is not None or base is None:
            return None
        if is_local(base):
            return None
        return f"no API key for {base}: {self._set_key()} ({MODELS_HINT})"

    def failure_hint(self, code: str, message: str) -> str | None:
        """What to check after a turn failed with ``code``, naming the setting involved."""
        if self.endpoint.adapter == "scripted":
            return None
        base = self.endpoint.base_url
        base_from = (
            f" (from {self.endpoint.base_url_source})" if self.endpoint.base_url_source != "default" else ""
        )
        if code == "AUTH":
            if self.endpoint.api_key is None:
                return f"{base} needs an API key: {self._set_key()}"
            return (
                f"{base} refused the key from {self.endpoint.api_key_source}: check it, or {self._set_key()}"
            )
        if code == "TRANSPORT":
            variables = _either(self.endpoint.base_url_vars)
            return f"no model server answered at {base}{base_from}; start it, or point {variables} at one"
        if code == "HTTP_404" or (code == "INVALID_REQUEST" and "model" in message.lower()):
            model = f"{self.model}: --model or TURNLOG_MODEL"
            return f"check the model name ({model}) and the base URL {base}{base_from}"
        if code == "QUOTA":
            return f"the account of the key from {self.endpoint.api_key_source} has no quota left"
        return None
