/**
 * The QPU provider of the end-to-end stack: the fake IonQ v0.3 API (test/fakes/ionq-provider.ts)
 * as the platform's managed account (QPU_IONQ_BASE_URL / QPU_IONQ_API_KEY), with keys for tenants'
 * own connections (byopa_managed), plus a control endpoint, because this module runs in the
 * global-setup process while the tests run in another: tests script faults, move the clock and
 * read what the provider received over HTTP (`ionqControl(inject('stack').fakes.ionq.controlUrl)`).
 */
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  type FakeIonqJob,
  type IonqKey,
  type IonqRule,
  type RecordedIonqRequest,
  startFakeIonq,
} from '../../fakes/ionq-provider.ts'
import type { FakeService } from '../stack.setup.ts'

export const IONQ_KEYS = {
  managed: 'ionq-e2e-managed-account-key',
  tenant: 'ionq-e2e-tenant-own-key',
  tenantNoQpu: 'ionq-e2e-tenant-key-without-qpu',
} as const

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  const text = Buffer.concat(chunks).toString('utf8')
  return text ? JSON.parse(text) : null
}

/** Test-side client of the control endpoint. */
export function ionqControl(controlUrl: string) {
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${controlUrl}${path}`, { method: 'POST', body: JSON.stringify(body) })
    if (res.status !== 204) throw new Error(`${path} failed: ${res.status} ${await res.text()}`)
  }
  return {
    script: (rule: IonqRule) => post('/script', rule),
    clock: (clock: { mode: 'real' } | { mode: 'manual'; now?: number } | { advanceMs: number }) =>
      post('/clock', clock),
    addKey: (key: string, options: IonqKey) => post('/keys', { key, options }),
    reset: () => post('/reset', {}),
    async requests(): Promise<RecordedIonqRequest[]> {
      return (await (await fetch(`${controlUrl}/requests`)).json()) as RecordedIonqRequest[]
    },
    /** Provider jobs whose metadata carries `jobId` (our reasoning job id). */
    async jobsFor(jobId: string): Promise<Omit<FakeIonqJob, 'input' | 'run'>[]> {
      return (await (
        await fetch(`${controlUrl}/jobs?svc_job_id=${encodeURIComponent(jobId)}`)
      ).json()) as Omit<FakeIonqJob, 'input' | 'run'>[]
    },
  }
}

const service: FakeService = {
  name: 'ionq',
  async start() {
    const fake = await startFakeIonq({
      keys: {
        [IONQ_KEYS.managed]: { qpu: true },
        [IONQ_KEYS.tenant]: { qpu: true },
        [IONQ_KEYS.tenantNoQpu]: { qpu: false },
      },
    })
    const control = createServer(async (req, res) => {
      const url = new URL(req.url ?? '/', 'http://control')
      try {
        const body = req.method === 'POST' ? ((await readJson(req)) as Record<string, unknown>) : null
        if (req.method === 'POST' && url.pathname === '/script') fake.script(body as unknown as IonqRule)
        else if (req.method === 'POST' && url.pathname === '/clock') fake.setClock(body as never)
        else if (req.method === 'POST' && url.pathname === '/keys')
          fake.addKey(String(body?.key), body?.options as IonqKey)
        else if (req.method === 'POST' && url.pathname === '/reset') fake.reset()
        else if (req.method === 'GET' && url.pathname === '/requests') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(fake.requests))
          return
        } else if (req.method === 'GET' && url.pathname === '/jobs') {
          const id = url.searchParams.get('svc_job_id')
          const jobs = fake.jobs
            .filter((j) => !id || j.metadata.svc_job_id === id)
            .map(({ input: _input, run: _run, ...j }) => j)
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jobs))
          return
        } else {
          res.writeHead(404).end()
          return
        }
        res.writeHead(204).end()
      } catch (err) {
        res.writeHead(500).end(String(err))
      }
    })
    await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve))
    const controlUrl = `http://127.0.0.1:${(control.address() as AddressInfo).port}`
    return {
      env: {
        QPU_IONQ_BASE_URL: fake.baseUrl,
        QPU_IONQ_API_KEY: IONQ_KEYS.managed,
        QPU_IONQ_TARGET: 'qpu.aria-1',
        QPU_PROVIDER_BASE_URLS: fake.baseUrl,
      },
      provide: { controlUrl, baseUrl: fake.baseUrl, keys: IONQ_KEYS },
      async stop() {
        await new Promise<void>((resolve) => control.close(() => resolve()))
        await fake.stop()
      },
    }
  },
}

export default service
