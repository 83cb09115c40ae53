/**
 * A Postgres server that stops answering: it speaks the wire protocol's startup handshake
 * (AuthenticationOk, ReadyForQuery) and then records every message a client sends without ever
 * replying, as a wedged server (or a lost network path) behaves. With `answerStartup: false` it
 * does not even finish the handshake. Used to prove the driver's deadlines: a stuck query fails,
 * its connection is closed, and nothing more is sent on it.
 */
import net from 'node:net'

export interface StalledConnection {
  /** Queries received, in order: simple-query text, or the SQL of each extended-protocol Parse. */
  readonly queries: string[]
  /** Resolves when the client closes (or destroys) the connection. */
  readonly closed: Promise<void>
}

export interface StalledPostgres {
  host: string
  port: number
  connections: StalledConnection[]
  /** Resolves once `count` connections have been accepted. */
  accepted(count: number): Promise<void>
  close(): Promise<void>
}

function message(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5)
  header.write(type, 0, 'latin1')
  header.writeInt32BE(body.length + 4, 1)
  return Buffer.concat([header, body])
}

const AUTHENTICATION_OK = message('R', Buffer.from([0, 0, 0, 0]))
const READY_FOR_QUERY = message('Z', Buffer.from('I', 'latin1'))

export async function startStalledPostgres(
  options: { answerStartup?: boolean } = {},
): Promise<StalledPostgres> {
  const answerStartup = options.answerStartup ?? true
  const connections: StalledConnection[] = []
  const waiters: { count: number; resolve: () => void }[] = []
  const sockets = new Set<net.Socket>()

  const server = net.createServer((socket) => {
    sockets.add(socket)
    const queries: string[] = []
    let resolveClosed!: () => void
    const closed = new Promise<void>((resolve) => {
      resolveClosed = resolve
    })
    socket.on('close', () => {
      sockets.delete(socket)
      resolveClosed()
    })
    socket.on('error', () => {})
    connections.push({ queries, closed })
    for (const w of waiters.filter((w) => connections.length >= w.count)) w.resolve()

    let buffer = Buffer.alloc(0)
    let started = false
    socket.on('data', (data) => {
      buffer = Buffer.concat([buffer, data])
      for (;;) {
        if (!started) {
          if (buffer.length < 4) return
          const length = buffer.readInt32BE(0)
          if (buffer.length < length) return
          buffer = buffer.subarray(length)
          started = true
          if (answerStartup) socket.write(Buffer.concat([AUTHENTICATION_OK, READY_FOR_QUERY]))
          continue
        }
        if (buffer.length < 5) return
        const length = buffer.readInt32BE(1)
        if (buffer.length < length + 1) return
        const type = String.fromCharCode(buffer[0]!)
        const body = buffer.subarray(5, length + 1)
        if (type === 'Q') queries.push(body.toString('utf8').replace(/\0$/, ''))
        if (type === 'P') queries.push(body.toString('utf8').split('\0')[1] ?? '')
        buffer = buffer.subarray(length + 1)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address() as net.AddressInfo
  return {
    host: '127.0.0.1',
    port: address.port,
    connections,
    accepted: (count) =>
      connections.length >= count
        ? Promise.resolve()
        : new Promise((resolve) => waiters.push({ count, resolve })),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}
