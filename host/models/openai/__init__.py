"""The ``openai`` adapter for OpenAI-compatible chat completions (host §6.4): request building,
SSE decoding, stream folding and HTTP failure classification (pure), and the httpx adapter."""

from ._adapter import DEFAULT_CONNECT_TIMEOUT as DEFAULT_CONNECT_TIMEOUT
from ._adapter import DEFAULT_STREAM_IDLE_TIMEOUT as DEFAULT_STREAM_IDLE_TIMEOUT
from ._adapter import ERROR_BODY_LIMIT as ERROR_BODY_LIMIT
from ._adapter import OpenAIAdapter as OpenAIAdapter
from ._failures import error_message as error_message
from ._failures import http_failure as http_failure
from ._failures import parse_retry_after as parse_retry_after
from ._folding import StreamFailure as StreamFailure
from ._folding import StreamFolder as StreamFolder
from ._folding import map_usage as map_usage
from ._folding import whole_text as whole_text
from ._request import chat_messages as chat_messages
from ._request import request_body as request_body
from ._request import request_headers as request_headers
from ._sse import SSEDecoder as SSEDecoder
