"""What a tenant used, our extension (README "Usage"), on every version path and the Vertex form:

GET /{v}/usage?start=&end=&group_by=model|day|label.<key>    totals by status, tokens and model calls
"""

from __future__ import annotations

import datetime
from typing import Any

from litestar import Request, Response, get

from ..usage import report
from .common import BASES, json_response, state_of

USAGE = [f"{base}/usage" for base in BASES]


@get(USAGE)
async def get_usage(request: Request[Any, Any, Any]) -> Response[bytes]:
    state = state_of(request)
    tenant = state.auth.tenant(request)
    params = request.query_params
    today = datetime.datetime.now(datetime.UTC).date()
    asked = report.query({name: params[name] for name in params}, today)
    days = await state.usage.days(tenant, asked.days())
    return json_response(report.report(asked, days))


HANDLERS = [get_usage]
