"""host.web — the browser front door of turnlog, ``turnlog web`` (docs/web.md).

The pure fence and credential decisions (:mod:`host.web.fence`); the HTTP surface behind it
(:mod:`host.web.app`, Starlette); JSON-RPC over the ``/rpc`` WebSocket, one
:class:`~host.rpc.Connection` per socket (:mod:`host.web.transport`); Hypercorn on trio and the
order of stopping (:mod:`host.web.server`); the start-up effects — key file, URL line, launch file,
browser (:mod:`host.web.launch`); and the page itself, plain ES modules, CSS and an SVG under
``static/``, shipped as package data.
"""

from __future__ import annotations

from .app import Page as Page
from .app import WebApp as WebApp
from .app import load_page as load_page
from .fence import AuthAnswer as AuthAnswer
from .fence import Binding as Binding
from .fence import Refusal as Refusal
from .fence import allowed_authorities as allowed_authorities
from .fence import auth_cookie as auth_cookie
from .fence import check_auth_post as check_auth_post
from .fence import check_credential as check_credential
from .fence import check_fence as check_fence
from .fence import cookie_name as cookie_name
from .fence import has_credential as has_credential
from .fence import refusal_line as refusal_line
from .fence import security_headers as security_headers
from .launch import LaunchError as LaunchError
from .launch import bind_address as bind_address
from .launch import key_path as key_path
from .launch import launch_file_path as launch_file_path
from .launch import load_browser_key as load_browser_key
from .launch import new_secret as new_secret
from .launch import open_browser as open_browser
from .launch import page_url as page_url
from .launch import remove_launch_file as remove_launch_file
from .launch import should_open_browser as should_open_browser
from .launch import url_line as url_line
from .launch import write_launch_file as write_launch_file
from .server import Served as Served
from .server import Stop as Stop
from .server import bind as bind
from .server import serve_web as serve_web
from .transport import OUTPUT_LIMIT as OUTPUT_LIMIT
from .transport import Transport as Transport
