/**
 * OpenAI's embeddings API for the e2e stack (test/fakes/openai-embeddings.ts) behind a Node HTTP
 * server: EMBEDDINGS_PROVIDER points the knowledge worker at it (model text-embedding-3-small
 * shortened to 256 dimensions, key in EMBEDDINGS_API_KEY), so live keys embed through the
 * production client, in an embedding space of their own (test keys keep the built-in one).
 * Tests script it through `inject('stack').fakes.embeddings.controlUrl` (`/fail`, `/reset`,
 * `/requests`).
 */
import { createServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { createOpenAiEmbeddingsFake } from '../../fakes/openai-embeddings.ts'
import type { FakeService } from '../stack.setup.ts'

const service: FakeService = {
  name: 'embeddings',
  async start() {
    const fake = createOpenAiEmbeddingsFake()
    const sockets = new Set<Socket>()
    const server = createServer(async (req, res) => {
      const chunks: Buffer[] = []
      for await (const chunk of req) chunks.push(chunk as Buffer)
      const headers = new Headers()
      for (const [name, value] of Object.entries(req.headers))
        if (typeof value === 'string') headers.set(name, value)
      const body = chunks.length > 0 && req.method !== 'GET' ? Buffer.concat(chunks) : undefined
      const answer = await fake.handle(
        new Request(`http://127.0.0.1${req.url ?? '/'}`, { method: req.method ?? 'GET', headers, body }),
      )
      const outHeaders: Record<string, string> = {}
      answer.headers.forEach((value, name) => {
        outHeaders[name] = value
      })
      res.writeHead(answer.status, outHeaders)
      res.end(Buffer.from(await answer.arrayBuffer()))
    })
    server.on('connection', (socket) => {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    return {
      env: {
        EMBEDDINGS_PROVIDER: JSON.stringify({
          kind: 'openai-compatible',
          baseUrl: `${url}/v1`,
          apiKeySecret: 'EMBEDDINGS_API_KEY',
          model: 'text-embedding-3-small',
          dimensions: 256,
          timeoutMs: 1500,
          retries: 1,
        }),
        EMBEDDINGS_API_KEY: fake.apiKey,
      },
      provide: { controlUrl: `${url}/__control`, url },
      stop: async () => {
        for (const socket of sockets) socket.destroy()
        await new Promise((resolve) => server.close(resolve))
      },
    }
  },
}

export default service
