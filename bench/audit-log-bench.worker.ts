/**
 * A worker for bench/audit-log.ts: hosts the product's AuditLog object (the same class the platform
 * worker hosts) and drives it over its RPC from inside workerd, so the benchmark measures the
 * object, not HTTP:
 *   /fill?log=&n=&inflight=   n appends, `inflight` at a time (the object batches what arrives together)
 *   /proof?log=&index=        one inclusion proof against the latest checkpoint
 *   /consistency?log=&first=  one consistency proof to the latest checkpoint
 *   /checkpoint?log=          sign a checkpoint of everything appended so far
 *   /noop                     the request overhead to subtract
 */

import type { AuditLog } from '../durable-objects/audit-log/audit-log.do'
import type { AuditEvent } from '../shared/audit/audit-events'

export { AuditLog } from '../durable-objects/audit-log/audit-log.do'

interface Env {
  AUDIT_LOG: DurableObjectNamespace<AuditLog>
}

const TENANT = '00000000-0000-4000-8000-0000000000be'

const event = (i: number): AuditEvent => ({
  kind: 'crypto_policy.decision',
  outcome: 'logged',
  algorithm: 'ecdsa-p256',
  requested: 'ES256',
  context: 'request_declared',
  mode: 'audit',
  rules: [{ rule: 'forbidden_list', detail: 'ecdsa-p256 is in forbiddenAlgorithms' }],
  principal: 'key:00000000-0000-4000-8000-000000000001',
  request_id: `req_bench_${i}`,
  method: 'GET',
  path: '/svc/models',
})

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url)
    const n = (name: string, fallback: number) => Number(url.searchParams.get(name) ?? fallback)
    const stub = env.AUDIT_LOG.get(env.AUDIT_LOG.idFromName(url.searchParams.get('log') ?? 'bench'))
    switch (url.pathname) {
      case '/fill': {
        const total = n('n', 1000)
        const inflight = n('inflight', 64)
        let next = 0
        let failed = 0
        const lane = async () => {
          while (next < total) {
            const i = next++
            const answer = await stub.append({ tenantId: TENANT, event: event(i) })
            if (!answer.ok) failed++
          }
        }
        await Promise.all(Array.from({ length: inflight }, lane))
        return Response.json({ appended: total - failed, failed })
      }
      case '/checkpoint': {
        const answer = await stub.checkpoint({ tenantId: TENANT, fresh: true })
        return Response.json(answer.ok ? { size: answer.checkpoint.size } : answer)
      }
      case '/proof': {
        const answer = await stub.inclusionProofs({ tenantId: TENANT, indexes: [n('index', 0)] })
        return Response.json(answer.ok ? { hashes: answer.proofs[0]!.proof.length } : answer)
      }
      case '/consistency': {
        const answer = await stub.consistency({ tenantId: TENANT, first: n('first', 1) })
        return Response.json(answer.ok ? { hashes: answer.proof.length } : answer)
      }
      default:
        return new Response('ok')
    }
  },
}
