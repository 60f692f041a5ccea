"""A WebSocket echo server made with the `websockets` library (PyPI), for headroom's
tests against a WebSocket server nobody here wrote. Installed into a venv by
scripts/peers.sh (peer_websockets); run as `python ws_echo.py PORT`.

Every message, text or binary, goes back as it came; the handshake, framing, masking,
fragmentation, ping/pong and the closing handshake are the library's.
"""

import asyncio
import sys

from websockets.asyncio.server import serve


async def echo(connection):
    async for message in connection:
        await connection.send(message)


async def main(port: int) -> None:
    async with serve(echo, "127.0.0.1", port, max_size=1 << 20) as server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
