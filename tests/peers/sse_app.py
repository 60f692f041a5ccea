"""An SSE endpoint made with sse-starlette (served by uvicorn), for headroom's tests
against an SSE server nobody here wrote. Installed into a venv by scripts/peers.sh
(peer_sse); run as `python sse_app.py PORT`.

GET /events?count=N&every_ms=M: N events `event: ping`, `id: k`, `data: {"k": k}`
every M ms, then the stream ends; a `Last-Event-ID: k` resumes after k, and past N
the answer is 204 (the spec's "do not reconnect").
"""

import asyncio
import json
import sys

import uvicorn
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


async def events(request: Request):
    count = int(request.query_params.get("count", "10"))
    every = int(request.query_params.get("every_ms", "20")) / 1000.0
    try:
        start = int(request.headers.get("last-event-id", "0")) + 1
    except ValueError:
        start = 1
    if start > count:
        return Response(status_code=204)

    async def stream():
        for k in range(start, count + 1):
            yield {"event": "ping", "id": str(k), "data": json.dumps({"k": k}), "retry": 50}
            await asyncio.sleep(every)

    return EventSourceResponse(stream())


app = Starlette(routes=[Route("/events", events)])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
