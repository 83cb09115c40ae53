/**
 * WebSocket-to-TCP bridge for the Neon serverless driver (`neonConfig.wsProxy`).
 *
 * Workers reach Postgres only through WebSockets. Neon runs such a proxy in production; locally
 * this bridge plays that part in front of embedded PGlite or a real PostgreSQL server. Each
 * WebSocket connection is one Postgres connection: binary frames are piped to a TCP socket and
 * back, byte for byte. The `address` the driver asks for is ignored: the bridge only ever
 * connects to the one target it was started for, so it cannot be used to reach other hosts.
 *
 * Until the server has sent its first byte, the bridge keeps what the client sent and, if the
 * server refuses or drops the connection, connects again and replays it (for up to
 * `reconnectWindowMs`): a client that connects while the server restarts (the embedded server
 * replacing a wedged PGlite, a local PostgreSQL restarting) waits instead of failing. Once the
 * server has answered, a dropped connection is the client's to see: its session state is gone.
 */
import net from 'node:net'
import { type WebSocket, WebSocketServer } from 'ws'

export interface BridgeTarget {
  host: string
  port: number
}

export interface WsBridge {
  port: number
  url: string
  close(): Promise<void>
}

/** How long a connection the server has not answered yet keeps being retried. */
const DEFAULT_RECONNECT_WINDOW_MS = 20_000

export async function startWsBridge(options: {
  host?: string
  port?: number
  target: BridgeTarget
  reconnectWindowMs?: number
}): Promise<WsBridge> {
  const host = options.host ?? '127.0.0.1'
  const reconnectWindowMs = options.reconnectWindowMs ?? DEFAULT_RECONNECT_WINDOW_MS
  const wss = new WebSocketServer({ host, port: options.port ?? 0, path: '/v1', perMessageDeflate: false })
  const sockets = new Set<net.Socket>()
  let closing = false

  wss.on('connection', (ws: WebSocket) => {
    const started = Date.now()
    /** Everything the client sent, kept until the server's first byte (for a replay). */
    const sent: Buffer[] = []
    let answered = false
    let ended = false
    let tcp: net.Socket | null = null
    let connected = false
    let attempt = 0

    const connect = () => {
      attempt++
      const socket = net.connect(options.target.port, options.target.host)
      tcp = socket
      connected = false
      socket.setNoDelay(true)
      sockets.add(socket)
      socket.on('connect', () => {
        connected = true
        for (const chunk of sent) socket.write(chunk)
        if (ended) socket.end()
      })
      socket.on('data', (data) => {
        if (!answered) {
          answered = true
          sent.length = 0
        }
        if (ws.readyState === ws.OPEN) ws.send(data, { binary: true })
      })
      socket.on('error', () => {})
      socket.on('close', () => {
        sockets.delete(socket)
        if (tcp !== socket) return
        const clientWaiting = ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING
        if (!answered && !ended && !closing && clientWaiting && Date.now() - started < reconnectWindowMs) {
          setTimeout(connect, Math.min(1_000, 50 * attempt))
          return
        }
        if (clientWaiting) ws.close()
      })
    }
    connect()

    ws.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
      const chunk = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer)
      if (!answered) sent.push(chunk)
      if (connected && tcp && !tcp.destroyed) tcp.write(chunk)
      // A Terminate message ('X', length 4) ends the session. PostgreSQL closes the connection
      // itself; pglite-socket does not, and the driver leaves the WebSocket open, so without this
      // every closed pool would keep a PGlite connection until maxConnections is exhausted.
      if (chunk.length === 5 && chunk[0] === 0x58 && chunk.readInt32BE(1) === 4) {
        ended = true
        if (connected) tcp?.end()
      }
    })
    ws.on('close', () => {
      ended = true
      tcp?.end()
    })
    ws.on('error', () => {
      ended = true
      tcp?.destroy()
    })
  })

  await new Promise<void>((resolve, reject) => {
    wss.once('listening', resolve)
    wss.once('error', reject)
  })
  const address = wss.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    port,
    url: `${host}:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        closing = true
        for (const s of sockets) s.destroy()
        for (const client of wss.clients) client.terminate()
        wss.close(() => resolve())
      }),
  }
}
