"""The JSON-RPC 2.0 protocol of the host (host §4, host §8): the wire as pure rules (framing,
classification, frames, errors, parameter checks), one client's :class:`Connection`, and the stdio
server around it. The WebSocket transport of ``turnlog web`` reuses the connection and the wire
(web §5.2)."""

from ._connection import NO_REPLY as NO_REPLY
from ._connection import Connection as Connection
from ._connection import OutputLimit as OutputLimit
from ._params import HISTORY_LIMIT_MAX as HISTORY_LIMIT_MAX
from ._params import ForkParams as ForkParams
from ._params import HistoryParams as HistoryParams
from ._params import InitializeParams as InitializeParams
from ._params import InspectParams as InspectParams
from ._params import content_blocks_param as content_blocks_param
from ._params import fork_params as fork_params
from ._params import history_params as history_params
from ._params import initialize_params as initialize_params
from ._params import inspect_params as inspect_params
from ._params import mode_param as mode_param
from ._params import path_param as path_param
from ._params import session_id_param as session_id_param
from ._stdio import EXIT_DRAIN_SECONDS as EXIT_DRAIN_SECONDS
from ._stdio import FdReceiveStream as FdReceiveStream
from ._stdio import FdSendStream as FdSendStream
from ._stdio import Server as Server
from ._stdio import serve_stdio as serve_stdio
from ._wire import DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LINE_BYTES
from ._wire import ID_PROBE_BYTES as ID_PROBE_BYTES
from ._wire import INTERNAL_ERROR as INTERNAL_ERROR
from ._wire import MAX_NESTING as MAX_NESTING
from ._wire import SERVER_INFO as SERVER_INFO
from ._wire import Invalid as Invalid
from ._wire import Line as Line
from ._wire import LineSplitter as LineSplitter
from ._wire import Overlong as Overlong
from ._wire import Request as Request
from ._wire import TooDeep as TooDeep
from ._wire import classify as classify
from ._wire import encode as encode
from ._wire import error_frame as error_frame
from ._wire import event_frame as event_frame
from ._wire import flush_failed_at_shutdown as flush_failed_at_shutdown
from ._wire import history_frame as history_frame
from ._wire import internal as internal
from ._wire import line_too_long as line_too_long
from ._wire import notification_bytes as notification_bytes
from ._wire import notification_frame as notification_frame
from ._wire import overlong_id as overlong_id
from ._wire import result_frame as result_frame
from ._wire import rpc_id_text as rpc_id_text
from ._wire import too_deep as too_deep
from ._wire import too_deep_request_id as too_deep_request_id
from ._wire import top_level_scalars as top_level_scalars
from ._wire import unknown_method as unknown_method
from ._wire import unsupported_json as unsupported_json
