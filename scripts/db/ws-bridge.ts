/**
 * WebSocket-to-TCP bridge for the Neon serverless driver (`neonConfig.wsProxy`).
 *
 * Workers reach Postgres only through WebSockets. Neon runs such a proxy in production; locally
 * this bridge plays that part in front of embedded PGlite or a real PostgreSQL server. Each
 * WebSocket connection is one Postgres connection: binary frames are piped to a TCP socket and
 * back, byte for byte. The `address` the driver asks for is ignored: the bridge only ever
 * connects to the one target it was started for, so it cannot be used to reach other hosts.
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

export async function startWsBridge(options: {
  host?: string
  port?: number
  target: BridgeTarget
}): Promise<WsBridge> {
  const host = options.host ?? '127.0.0.1'
  const wss = new WebSocketServer({ host, port: options.port ?? 0, path: '/v1', perMessageDeflate: false })
  const sockets = new Set<net.Socket>()

  wss.on('connection', (ws: WebSocket) => {
    const tcp = net.connect(options.target.port, options.target.host)
    tcp.setNoDelay(true)
    sockets.add(tcp)
    const pending: Buffer[] = []
    let connected = false

    tcp.on('connect', () => {
      connected = true
      for (const chunk of pending) tcp.write(chunk)
      pending.length = 0
    })
    tcp.on('data', (data) => {
      if (ws.readyState === ws.OPEN) ws.send(data, { binary: true })
    })
    tcp.on('close', () => {
      sockets.delete(tcp)
      if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close()
    })
    tcp.on('error', () => ws.terminate())

    ws.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
      const chunk = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer)
      if (connected) tcp.write(chunk)
      else pending.push(chunk)
      // A Terminate message ('X', length 4) ends the session. PostgreSQL closes the connection
      // itself; pglite-socket does not, and the driver leaves the WebSocket open, so without this
      // every closed pool would keep a PGlite connection until maxConnections is exhausted.
      if (chunk.length === 5 && chunk[0] === 0x58 && chunk.readInt32BE(1) === 4) tcp.end()
    })
    ws.on('close', () => tcp.end())
    ws.on('error', () => tcp.destroy())
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
        for (const s of sockets) s.destroy()
        for (const client of wss.clients) client.terminate()
        wss.close(() => resolve())
      }),
  }
}
